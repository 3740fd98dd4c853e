"""Regenerate the SVG screenshots in docs/screenshots/ with Textual's own export.

- session-terminal.svg, session-web.svg, session-mcp.svg: the session screen after the
  first turns of a bundled example, played by `make_app(...)` with the scripted backend
  streaming the example's own answers (no model needed);
- start.svg: the start screen (a fixed model list; those sessions as the recent ones);
- replay-<domain>.svg: the replay screen on each bundled example, stepped to a chosen turn.

Nothing that changes from run to run is shown (no timings, a private AWL_HOME, fixed file
names), so a rerun writes identical files.

    python docs/screenshots/make_screenshots.py
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

from agentworld_local.examples import pick_example
from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.tui.app import make_app
from agentworld_local.tui.replay import ReplayApp

OUT_DIR = Path(__file__).resolve().parent  # the pictures sit next to the script
SIZE = (120, 36)
SESSION_SIZE = (126, 38)  # the terminal view fits an 80-column pytest report
#: A relative folder inside the scratch folder, so the picture shows where sessions usually
#: go on Linux without touching the real one.
SESSIONS_FOLDER = Path("~/.local/share/agentworld-local/sessions")
MODELS = ["qwen-agentworld-35b-a3b:UD-Q4_K_M"]
FIXED_TIME = 1_764_676_800  # session files' times (the start screen lists the newest first)
#: file name: (domain, turns of its bundled example played before the picture)
SESSIONS: dict[str, tuple[str, int]] = {
    "session-terminal.svg": ("terminal", 3),
    "session-web.svg": ("web", 1),
    "session-mcp.svg": ("mcp", 2),
}
#: file name: (domain, keys pressed before the picture, options)
REPLAYS: dict[str, tuple[str, tuple[str, ...], dict]] = {
    "replay-terminal.svg": ("terminal", ("right", "right", "right"), {"show_thinking": False}),
    "replay-swe.svg": ("swe", ("right", "right", "right", "right"), {"show_thinking": True}),
    "replay-mcp.svg": ("mcp", ("right",), {}),
    "replay-search.svg": ("search", ("right", "right"), {}),
    "replay-web.svg": ("web", ("right", "right", "right"), {"show_thinking": True}),
    "replay-os.svg": ("os", ("right", "right", "right"), {}),
    "replay-android.svg": ("android", ("right", "right", "right"), {}),
}


def raw_answer(thinking: str, observation: str) -> str:
    """What the model would have written for a recorded turn."""
    think = f"<think>\n{thinking.strip()}\n</think>\n" if thinking.strip() else ""
    return f"{think}<predicted_observation>\n{observation}\n</predicted_observation>"


async def settle(pilot: Any) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


async def shoot_start(name: str, folder: Path) -> Path:
    app = make_app(start_screen=True, sessions_dir=folder, timings=False, models=MODELS)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        return Path(app.save_screenshot(filename=name, path=str(OUT_DIR)))


async def shoot_session(name: str, domain: str, turns: int, folder: Path) -> Path:
    """Play the example's first `turns` turns into folder/<domain>.jsonl, then take the picture."""
    traj = read_trajectory(pick_example(domain).path)
    played = traj.current_branch()[:turns]
    backend = ScriptedBackend([ScriptedAnswer(raw_answer(t.thinking, t.observation), chunk=7) for t in played])
    app = make_app(backend=backend, domain=traj.header.domain, scenario=(traj.header.scenario or {}).get("name"),
                   think=traj.header.think, out=folder / f"{domain}.jsonl", sessions_dir=folder, timings=False)
    async with app.run_test(size=SESSION_SIZE) as pilot:
        await settle(pilot)
        for turn in played:
            field = app.screen.query_one("#action")
            field.focus()
            field.value = turn.action
            await pilot.press("enter")
            await settle(pilot)
        return Path(app.save_screenshot(filename=name, path=str(OUT_DIR)))


async def shoot_replay(name: str, domain: str, keys: tuple[str, ...], options: dict) -> Path:
    app = ReplayApp(read_trajectory(pick_example(domain).path), **options)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*keys)
        await pilot.pause()
        return Path(app.save_screenshot(filename=name, path=str(OUT_DIR)))


def main() -> None:
    written = []
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["AWL_HOME"] = str(Path(scratch, "home"))  # no user scenarios, models or settings leak in
        os.chdir(scratch)
        SESSIONS_FOLDER.mkdir(parents=True)
        for number, (name, (domain, turns)) in enumerate(SESSIONS.items()):
            written.append(asyncio.run(shoot_session(name, domain, turns, SESSIONS_FOLDER)))
            os.utime(SESSIONS_FOLDER / f"{domain}.jsonl", (FIXED_TIME + number, FIXED_TIME + number))  # the recent order
        written.append(asyncio.run(shoot_start("start.svg", SESSIONS_FOLDER)))
        for name, (domain, keys, options) in REPLAYS.items():
            written.append(asyncio.run(shoot_replay(name, domain, keys, options)))
    for path in written:
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
