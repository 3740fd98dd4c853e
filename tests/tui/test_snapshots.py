"""Snapshots (pytest-textual-snapshot) of the start screen and of the session screen after one
turn in each domain. Deterministic: scripted answers, a fixed size, no clocks on screen
(`timings=False`), a fixed file name. Update with `pytest tests/tui/test_snapshots.py --snapshot-update`."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld_local.testing.answers import answer
from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend
from agentworld_local.tui.app import make_app

from tests.tui.helpers import screen_text, settle, type_action

SIZE = (120, 36)


def scripted_turn(thinking: str, observation: str) -> str:
    return f"<think>\n{thinking}\n</think>\n<predicted_observation>\n{observation}\n</predicted_observation>"


TURNS: dict[str, tuple[str, str]] = {
    "terminal": ("ls --color=always", answer("ansi_colour_screen").raw),
    "web": ("click 41", scripted_turn(
        "The product page of the first boot opens.",
        "Tab 0 (current): Alpine Ridge Mid GTX\nURL: https://shop.trailhead.example/p/alpine-ridge-mid-gtx\n\n"
        "RootWebArea 'Alpine Ridge Mid GTX', focused\n\t[51] heading 'Alpine Ridge Mid GTX'\n"
        "\tStaticText '$149.00'\n\t[55] combobox 'Size' value='42'\n\t[58] button 'Add to cart'")),
    "android": ("back", scripted_turn(
        "Back returns to the home screen.",
        '<?xml version="1.0" encoding="UTF-8"?>\n<hierarchy rotation="0">\n'
        '  <node index="0" text="" class="android.widget.FrameLayout" clickable="false">\n'
        '    <node index="0" text="Clock" resource-id="com.android.launcher:id/icon" '
        'class="android.widget.TextView" clickable="true" />\n'
        '    <node index="1" text="Settings" resource-id="com.android.launcher:id/icon" '
        'class="android.widget.TextView" clickable="true" />\n  </node>\n</hierarchy>')),
    "os": ("click 70 150", scripted_turn(
        "The Files app opens its Home folder.",
        "tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)\n"
        "frame\tHome\t\t\t\t(360, 160)\t(1200, 760)\npush-button\tBack\t\t\t\t(372, 172)\t(34, 34)\n"
        "table-cell\tDocuments\tDocuments\t\t\t(600, 240)\t(200, 32)")),
    "mcp": ("get_file_info path=README.md", answer("mcp_tool_result").raw),
    "swe": ("bash ls -la", scripted_turn(
        "The repository root.", "total 16\n-rw-r--r-- 1 user user 1204 README.md\ndrwxr-xr-x 3 user user 4096 src")),
    "search": ('search "ramen in Osaka"', scripted_turn(
        "Three results about ramen shops.",
        '{"results": [{"title": "Best ramen in Osaka", "url": "https://example.org/osaka-ramen", '
        '"snippet": "Ten shops worth the queue."}]}')),
}


@pytest.fixture(autouse=True)
def _private_home(tmp_path, monkeypatch):
    monkeypatch.setenv("AWL_HOME", str(tmp_path / "home"))  # no user scenarios or models leak in


def test_start_screen(snap_compare):
    app = make_app(start_screen=True, sessions_dir=Path("no-sessions-here"), timings=False,
                   models=["qwen-agentworld-35b-a3b:UD-Q4_K_M"])
    assert snap_compare(app, terminal_size=SIZE)


@pytest.mark.parametrize("domain", sorted(TURNS))
def test_session_screen_after_one_turn(domain, snap_compare, tmp_path):
    action, raw = TURNS[domain]
    backend = ScriptedBackend([ScriptedAnswer(raw, chunk=7)])
    app = make_app(backend=backend, domain=domain, out=tmp_path / "session.jsonl", timings=False)

    async def run_turn(pilot) -> None:
        await type_action(pilot, action)
        await settle(pilot)
        history = app.screen.branch
        assert len(history) == 1, app.screen
        # The observation is on screen once (the timeline shows only its first line).
        screen = screen_text(app)
        verbatim = domain in ("terminal", "swe", "web")  # views that show the observation's lines as they are
        for line in history[0].observation.splitlines()[1:] if verbatim else []:
            if 3 < len(line.strip()) < 70 and "\x1b" not in line and "\t" not in line:
                assert screen.count(line.strip()) == 1, line

    assert snap_compare(app, terminal_size=SIZE, run_before=run_turn)
