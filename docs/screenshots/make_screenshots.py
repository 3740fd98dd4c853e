"""Regenerate the SVG screenshots in docs/screenshots/ with Textual's own export.

Each screenshot is the replay screen on a bundled example (no model needed), driven with
Textual's pilot to a chosen turn, so the same files give the same pictures.

    python docs/screenshots/make_screenshots.py
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentworld_local.examples import pick_example
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.tui.replay import ReplayApp

OUT_DIR = Path(__file__).resolve().parent  # the pictures sit next to the script
SIZE = (120, 36)
#: file name: (domain, keys pressed before the picture, options)
SHOTS: dict[str, tuple[str, tuple[str, ...], dict]] = {
    "replay-terminal.svg": ("terminal", ("right", "right", "right"), {"show_thinking": False}),
    "replay-swe.svg": ("swe", ("right", "right", "right", "right"), {"show_thinking": True}),
    "replay-mcp.svg": ("mcp", ("right",), {}),
    "replay-search.svg": ("search", ("right", "right"), {}),
    "replay-web.svg": ("web", ("right", "right", "right"), {"show_thinking": True}),
    "replay-os.svg": ("os", ("right", "right", "right"), {}),
    "replay-android.svg": ("android", ("right", "right", "right"), {}),
}


async def shoot(name: str, domain: str, keys: tuple[str, ...], options: dict) -> Path:
    app = ReplayApp(read_trajectory(pick_example(domain).path), **options)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*keys)
        await pilot.pause()
        path = app.save_screenshot(filename=name, path=str(OUT_DIR))
    return Path(path)


def main() -> None:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for name, (domain, keys, options) in SHOTS.items():
        print(f"wrote {asyncio.run(shoot(name, domain, keys, options))}")


if __name__ == "__main__":
    main()
