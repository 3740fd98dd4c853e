"""The TUI says when the thinking budget cut a turn (status `think N cut`, the thinking
panel's title), shows no empty Thinking panel under `--think off`, labels the start screen's
model field, tells two recent `terminal.jsonl` apart, and keeps `q Quit` in replay's footer at
80 columns (issues 44 and 45)."""

from __future__ import annotations

import shutil

import pytest
from textual.widgets import Collapsible, OptionList

from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend
from agentworld_local.examples import pick_example
from agentworld_local.paths import sessions_dir
from agentworld_local.session.files import remember_session
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.tui.app import make_app
from agentworld_local.tui.replay import ReplayApp
from tests.tui.helpers import footer_with, screen_text, session_app, session_opened, type_action, wait_for, widget_text
from tests.unit.test_thinking_cut_is_said import LONG_THINKING

pytestmark = pytest.mark.anyio


def long_thinking() -> ScriptedBackend:
    return ScriptedBackend([ScriptedAnswer(LONG_THINKING, chunk=4)] * 2)


async def test_a_cut_turn_shows_in_the_status_and_the_thinking_title(tmp_path):
    app = session_app(tmp_path, long_thinking(), think="8")
    async with app.run_test(size=(120, 40)) as pilot:
        await session_opened(pilot)
        assert "think 8" in widget_text(app, "#status") and "cut" not in widget_text(app, "#status")
        await type_action(pilot, "ls")
        assert "think 8 cut" in widget_text(app, "#status")
        title = app.screen.query_one("#thinking-box", Collapsible).title
        assert title == "Thinking · thinking cut at 8 tokens by the budget (--think full lets it finish)"
        assert "thinking cut at 8 tokens" in screen_text(app)


async def test_an_uncut_turn_says_nothing_of_a_cut(tmp_path):
    app = session_app(tmp_path, long_thinking(), think="full")
    async with app.run_test(size=(120, 40)) as pilot:
        await type_action(pilot, "ls")
        assert "think full" in widget_text(app, "#status") and "cut" not in widget_text(app, "#status")
        assert app.screen.query_one("#thinking-box", Collapsible).title == "Thinking"


async def test_think_off_shows_no_thinking_panel(tmp_path):
    app = session_app(tmp_path, long_thinking(), think="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await type_action(pilot, "ls")
        assert not app.screen.query_one("#thinking-box").display
        assert "Thinking" not in screen_text(app)
        await pilot.press("ctrl+g")
        await wait_for(lambda: any("does not think in this session" in str(note.message) for note in app._notifications))
        assert not app.screen.query_one("#thinking-box").display


async def test_thinking_on_keeps_the_panel(tmp_path):
    app = session_app(tmp_path, long_thinking())
    async with app.run_test(size=(120, 40)) as pilot:
        await type_action(pilot, "ls")
        assert app.screen.query_one("#thinking-box").display and "Thinking" in screen_text(app)


async def test_the_model_field_is_labelled_once_and_the_list_says_what_it_is(tmp_path):
    app = make_app(start_screen=True, sessions_dir=tmp_path, timings=False, models=["qwen3.5-0.8b:Q4_K_M"])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert text.count("Model") == 1 and "downloaded" in text
        assert app.screen.query_one("#models", OptionList).border_title == "downloaded"


async def test_two_recent_sessions_with_the_same_name_are_told_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("AWL_HOME", str(tmp_path / "home"))
    example = pick_example("terminal").path
    paths = [tmp_path / "project-a" / "terminal.jsonl", tmp_path / "project-b" / "terminal.jsonl"]
    for path in paths:
        path.parent.mkdir()
        shutil.copyfile(example, path)
        remember_session(path)  # written outside the sessions folder, as `awl run -o` records it
    app = make_app(start_screen=True, sessions_dir=sessions_dir(), timings=False, models=[])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        recent = app.screen.query_one("#recent", OptionList)
        labels = [str(recent.get_option_at_index(index).prompt) for index in range(recent.option_count)]
        assert len(labels) == 2 and len(set(labels)) == 2, labels
        assert {label.splitlines()[1].strip()[-9:] for label in labels} == {"project-a", "project-b"}


async def test_replays_footer_keeps_quit_at_80_columns():
    app = ReplayApp(read_trajectory(pick_example("terminal").path))
    async with app.run_test(size=(80, 24)) as pilot:
        footer = await footer_with(app, "Play/pause")
        for key in ("Step", "Speed", "Go to turn", "q Quit"):
            assert key in footer, footer
        await pilot.press("q")
