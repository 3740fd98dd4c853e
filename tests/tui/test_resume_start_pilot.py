"""The start screen's Resume applies the core's resume rules (session/resume_rules.py): the
session's own model when none is chosen, and another model file refused before it loads."""

from __future__ import annotations

import json

import pytest
from textual.widgets import Input, OptionList

from agentworld_local.testing.answers import answer
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.tui.app import make_app
from agentworld_local.tui.dialogs import ErrorDialog
from agentworld_local.tui.session_screen import SessionScreen
from tests.tui.helpers import SIZE, type_action, wait_for

pytestmark = pytest.mark.anyio


def answer_file(path, name: str):
    path.write_text(json.dumps({"version": 1, "answers": [{"raw": answer(name).raw}]}), encoding="utf-8")
    return path


async def saved_session(tmp_path, answers) -> None:
    first = make_app(model=f"scripted:{answers}", domain="terminal", sessions_dir=tmp_path, out=tmp_path / "s1.jsonl",
                     timings=False)
    async with first.run_test(size=SIZE) as pilot:
        await wait_for(lambda: isinstance(first.screen, SessionScreen))
        await type_action(pilot, "ls -la")


async def test_resume_with_another_model_is_refused_and_without_one_uses_the_sessions(tmp_path):
    made_with = answer_file(tmp_path / "answers.json", "thinking_then_tags")
    other = answer_file(tmp_path / "other.json", "marker_form")
    await saved_session(tmp_path, made_with)
    # The model field starts with a suggestion (the first downloaded model): no choice for a resume.
    app = make_app(sessions_dir=tmp_path, models=[f"scripted:{other}"], timings=False)
    async with app.run_test(size=SIZE) as pilot:
        app.screen.query_one("#recent", OptionList).highlighted = 0
        app.screen.query_one("#model", Input).value = f"scripted:{other}"
        app.screen.query_one("#models", OptionList).highlighted = None
        await pilot.click("#resume")
        await wait_for(lambda: isinstance(app.screen, (ErrorDialog, SessionScreen)))
        assert isinstance(app.screen, SessionScreen)  # the suggestion was not taken as a choice
        await type_action(pilot, "pwd")
    assert [t.action for t in read_trajectory(tmp_path / "s1.jsonl").current_branch()] == ["ls -la", "pwd"]

    app = make_app(sessions_dir=tmp_path, models=[], timings=False)
    async with app.run_test(size=SIZE) as pilot:
        app.screen.query_one("#recent", OptionList).highlighted = 0
        app.screen.query_one("#model", Input).value = f"scripted:{other}"  # typed: a choice
        await pilot.click("#resume")
        await wait_for(lambda: isinstance(app.screen, (ErrorDialog, SessionScreen)))
        assert isinstance(app.screen, ErrorDialog)
        assert f"was made with {made_with}" in app.screen.message and app.runner.model is None  # nothing loaded
    assert len(read_trajectory(tmp_path / "s1.jsonl").current_branch()) == 2


async def test_sampling_given_for_a_resumed_session_applies_to_its_new_turns(tmp_path):
    made_with = answer_file(tmp_path / "answers.json", "thinking_then_tags")
    await saved_session(tmp_path, made_with)
    app = make_app(model=f"scripted:{made_with}", resume=tmp_path / "s1.jsonl", think="off", max_tokens=300,
                   sessions_dir=tmp_path, timings=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: isinstance(app.screen, (ErrorDialog, SessionScreen)))
        assert isinstance(app.screen, SessionScreen), getattr(app.screen, "message", "")
        await type_action(pilot, "pwd")
    turns = read_trajectory(tmp_path / "s1.jsonl").current_branch()
    assert [t.settings for t in turns] == [None, {"max_tokens": 300, "think": "off"}]
