"""Snapshots at 80x24, the smallest terminal awl is made for: the start screen (bordered fields)
and a session after one turn with a long model name and file name (the status bar keeps the
turn and the file). Update with `pytest tests/tui/test_snapshots_80x24.py --snapshot-update`."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend
from agentworld_local.testing.answers import answer
from agentworld_local.tui.app import make_app
from tests.tui.helpers import settle, type_action

SIZE = (80, 24)


@pytest.fixture(autouse=True)
def _private_home(tmp_path, monkeypatch):
    monkeypatch.setenv("AWL_HOME", str(tmp_path / "home"))


def test_start_screen_at_80x24(snap_compare):
    app = make_app(start_screen=True, sessions_dir=Path("no-sessions-here"), timings=False,
                   models=["qwen-agentworld-35b-a3b:UD-Q4_K_M", "qwen3.5-0.8b:Q4_K_M"])
    assert snap_compare(app, terminal_size=SIZE)


def test_session_with_long_names_at_80x24(snap_compare, tmp_path):
    backend = ScriptedBackend([ScriptedAnswer(answer("thinking_then_tags").raw, chunk=7)],
                              name="scripted:a-world-model-with-a-very-long-name-UD-Q4_K_XL.gguf")
    out = tmp_path / "20260101-120000-a-session-with-a-long-name-terminal.jsonl"
    app = make_app(backend=backend, domain="terminal", out=out, timings=False)

    async def run_turn(pilot) -> None:
        await type_action(pilot, "ls")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_turn)
