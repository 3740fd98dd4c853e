"""At 80x24 the status bar keeps what is running (and how to cancel it), the turn and the file;
after Ctrl+F the user is told where the session goes on; Ctrl+C on the load screen stops the load."""

from __future__ import annotations

import threading

import pytest

from agentworld_local.engine.scripted import ScriptedBackend
from agentworld_local.errors import Cancelled
from agentworld_local.engine import loading
from agentworld_local.testing.answers import answer
from agentworld_local.tui.app import make_app
from agentworld_local.tui.session_screen import SessionScreen
from agentworld_local.tui.start import LoadingScreen, StartScreen
from agentworld_local.tui.widgets import status_text
from tests.tui.helpers import scripted, session_app, session_opened, type_action, wait_for, widget_text
from tests.tui.test_session_pilot import fork_via_dialog
from tests.tui.test_start_pilot import start_with

pytestmark = pytest.mark.anyio
SMALL = (80, 24)
FACTS = [("model ", "qwen-agentworld-35b-a3b:UD-Q4_K_M-with-a-long-suffix"), ("", "CPU"), ("", "12.5 tok/s"),
         ("ctx ", "1,234/32,768"), ("think ", "1024")]
FILE = "20260101-120000-a-session-with-a-very-long-name-terminal.jsonl"


def test_the_running_work_the_turn_and_the_file_come_first_and_stay():
    line = status_text(78, busy="generating… (esc cancels)", turn=3, path=FILE, facts=FACTS).plain
    assert len(line) <= 78
    assert line.startswith("generating… (esc cancels) │ turn 3 │ …") and "-terminal.jsonl" in line
    narrow = status_text(50, busy="generating… (esc cancels)", turn=3, path=FILE, facts=FACTS).plain
    assert len(narrow) <= 50 and "esc cancels" in narrow and "turn 3" in narrow and narrow.endswith(".jsonl")


def test_long_names_shrink_before_any_fact_is_dropped():
    line = status_text(130, busy="", turn=1, path=FILE, facts=FACTS).plain
    assert "CPU" in line and "think 1024" in line  # every fact kept
    assert "model qwen-agentworld-35b-a3b:UD-Q4_K_M-with-a-long-suffix" not in line and "…" in line
    wide = status_text(300, busy="", turn=1, path=FILE, facts=FACTS).plain
    assert FILE in wide and FACTS[0][1] in wide  # nothing shortened when there is room


async def test_the_status_at_80_columns_says_a_turn_runs_and_how_to_cancel_it(tmp_path):
    app = session_app(tmp_path, scripted("thinking_then_tags", delay_s=0.05))
    async with app.run_test(size=SMALL) as pilot:
        await type_action(pilot, "ls -la", wait=False)
        await wait_for(lambda: "generating" in widget_text(app, "#status"))
        status = widget_text(app, "#status")
        assert status.startswith("generating… (esc cancels) │ turn 0 │ session.jsonl")
        await pilot.press("escape")
        await wait_for(lambda: app.screen.busy == "")  # the cancel is shown before the app closes


async def test_after_a_fork_the_user_is_told_which_file_the_session_goes_on_in(tmp_path):
    app = session_app(tmp_path, scripted("thinking_then_tags", "marker_form"))
    async with app.run_test(size=SMALL) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        await fork_via_dialog(pilot, "ctrl+f", tmp_path / "fork.jsonl")
        notes = [str(note.message) for note in app._notifications]
        assert any(f"the session goes on in {tmp_path / 'fork.jsonl'}" in note for note in notes), notes
        assert "fork.jsonl" in widget_text(app, "#status")


async def test_ctrl_c_on_the_load_screen_stops_the_load_as_escape_does(tmp_path, monkeypatch):
    stopped = threading.Event()

    def slow_load(model, *, progress=None, **options):
        for step in range(4000):  # until stopped: each progress report is a chance to stop
            if progress is not None and progress(step / 4000) is False:
                stopped.set()
                raise Cancelled("The model load was cancelled.", "Start it again.")
            threading.Event().wait(0.005)
        return ScriptedBackend([answer("thinking_then_tags").scripted()], name=model)

    monkeypatch.setattr(loading, "load_backend", slow_load)
    app = make_app(sessions_dir=tmp_path, models=[], timings=False)
    async with app.run_test(size=SMALL) as pilot:
        await start_with(pilot, world="domain:terminal", model="slow-model", wait=False)
        await wait_for(lambda: isinstance(app.screen, LoadingScreen))
        await pilot.press("ctrl+c")
        await wait_for(lambda: isinstance(app.screen, StartScreen))
        await wait_for(stopped.is_set)
        assert not any("ctrl+q" in str(note.message) for note in app._notifications)
        assert not isinstance(app.screen, SessionScreen)
