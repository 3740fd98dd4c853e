"""The start screen: pick a world and a model, start; resume a recent session; a model
that cannot load is a dialog, not a crash. And once on the real llama.cpp path."""

from __future__ import annotations

import pytest

import json

from textual.widgets import Input, OptionList

from agentworld_local.scenarios import list_scenarios
from agentworld_local.testing.answers import answer
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.tui.app import make_app
from agentworld_local.tui.dialogs import ErrorDialog
from agentworld_local.tui.session_screen import SessionScreen
from agentworld_local.tui.start import StartScreen

from tests.tui.helpers import SIZE, settle, type_action, wait_for, widget_text

#: Every async test runs on anyio's plugin. Marked at collection (not in a hook), so the
#: items keep their ids and the snapshot report can find them.
pytestmark = pytest.mark.anyio


def answer_file(tmp_path, *names: str):
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"version": 1, "answers": [{"raw": answer(name).raw} for name in names]}))
    return path


async def start_with(pilot, *, world: str, model: str, think: str = "", wait: bool = True) -> None:
    screen = pilot.app.screen
    worlds = screen.query_one("#worlds", OptionList)
    worlds.highlighted = worlds.get_option_index(world)
    screen.query_one("#model", Input).value = model
    screen.query_one("#think", Input).value = think
    await pilot.click("#start")
    if not wait:
        return
    await wait_for(lambda: isinstance(pilot.app.screen, (SessionScreen, ErrorDialog)))
    await pilot.pause()


async def test_start_a_bundled_scenario_with_a_scripted_model(tmp_path):
    scenario = list_scenarios("terminal")[0]
    app = make_app(sessions_dir=tmp_path, models=[], timings=False)
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.screen, StartScreen)
        text = "\n".join(str(option.prompt) for option in app.screen.query_one("#worlds", OptionList).options)
        assert scenario.title in text and "[terminal]" in text
        await start_with(pilot, world=f"scenario:{scenario.name}",
                         model=f"scripted:{answer_file(tmp_path, 'thinking_then_tags')}", think="off")
        assert isinstance(app.screen, SessionScreen)
        assert widget_text(app, "#world") == scenario.initial_state.rstrip("\n") or \
            widget_text(app, "#world") == scenario.initial_state
        await type_action(pilot, "ls -la")
        path = app.screen.view.path
    traj = read_trajectory(path)
    assert path.parent == tmp_path
    assert traj.header.scenario["name"] == scenario.name
    assert traj.header.think == "off"
    assert traj.turns[0].observation == answer("thinking_then_tags").observation


async def test_max_tokens_set_on_the_start_screen_reach_the_session(tmp_path):
    app = make_app(sessions_dir=tmp_path, models=[], timings=False)
    async with app.run_test(size=SIZE) as pilot:
        assert app.screen.query_one("#max-tokens", Input).placeholder == "default 4096"
        app.screen.query_one("#max-tokens", Input).value = "777"
        await start_with(pilot, world="domain:terminal", model=f"scripted:{answer_file(tmp_path, 'thinking_then_tags')}")
        assert isinstance(app.screen, SessionScreen)
        path = app.screen.view.path
        assert read_trajectory(path).header.sampling["max_tokens"] == 777


async def test_a_bad_max_tokens_is_refused_before_loading(tmp_path):
    app = make_app(sessions_dir=tmp_path, models=[], timings=False)
    async with app.run_test(size=SIZE) as pilot:
        app.screen.query_one("#max-tokens", Input).value = "0"
        await start_with(pilot, world="domain:terminal", model="scripted:nowhere.json")
        assert isinstance(app.screen, ErrorDialog)
        assert "max-tokens" in app.screen.message
    assert list(tmp_path.glob("*.jsonl")) == []


async def test_at_80x24_every_field_label_placeholder_and_button_fits(tmp_path):
    """At the classic terminal size the Replay button was off the screen and the placeholders cut."""
    from textual.widgets import Button, Label

    app = make_app(sessions_dir=tmp_path, models=["qwen-agentworld-35b-a3b"], timings=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        visible = screen.region.height - 1  # the footer's line
        for button in screen.query(Button):
            region = button.region
            assert region.width >= len(str(button.label)) and region.right <= 80 and region.bottom <= visible, button.id
        for field in screen.query(Input):
            assert field.region.bottom <= visible, field.id
            assert len(field.placeholder) <= field.content_size.width, (field.id, field.placeholder)
        for label in screen.query(Label):
            assert len(str(label.render())) <= label.content_size.width, str(label.render())


async def test_a_model_that_cannot_load_is_a_dialog_and_the_start_screen_stays(tmp_path):
    app = make_app(sessions_dir=tmp_path, models=[], timings=False)
    async with app.run_test(size=SIZE) as pilot:
        await start_with(pilot, world="domain:web", model=str(tmp_path / "missing.gguf"))
        assert isinstance(app.screen, ErrorDialog)
        assert "missing.gguf" in app.screen.message
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, StartScreen)
    assert list(tmp_path.glob("*.jsonl")) == []


async def test_a_bad_thinking_budget_is_refused_before_loading(tmp_path):
    app = make_app(sessions_dir=tmp_path, models=[], timings=False)
    async with app.run_test(size=SIZE) as pilot:
        await start_with(pilot, world="domain:terminal", model="scripted:nowhere.json", think="lots")
        assert isinstance(app.screen, ErrorDialog)
        assert "lots" in app.screen.message


async def test_resume_a_recent_session_from_the_start_screen(tmp_path):
    answers = answer_file(tmp_path, "thinking_then_tags", "marker_form")
    first = make_app(model=f"scripted:{answers}", domain="terminal", sessions_dir=tmp_path, out=tmp_path / "s1.jsonl",
                     timings=False)
    async with first.run_test(size=SIZE) as pilot:
        await wait_for(lambda: isinstance(first.screen, SessionScreen))
        await type_action(pilot, "ls -la")
    app = make_app(sessions_dir=tmp_path, models=[], timings=False)
    async with app.run_test(size=SIZE) as pilot:
        recent = app.screen.query_one("#recent", OptionList)
        assert [option.id for option in recent.options] == [str(tmp_path / "s1.jsonl")]
        recent.highlighted = 0
        app.screen.query_one("#model", Input).value = f"scripted:{answers}"
        await pilot.click("#resume")
        await wait_for(lambda: isinstance(app.screen, SessionScreen))
        await pilot.pause()
        # The terminal's scrollback: the starting screen, `ls -la` after its prompt, what it printed.
        assert widget_text(app, "#world") == (app.screen.view.initial_state + "ls -la\n"
                                              + answer("thinking_then_tags").observation)
        await type_action(pilot, "pwd")
    traj = read_trajectory(tmp_path / "s1.jsonl")
    assert [record.action for record in traj.current_branch()] == ["ls -la", "pwd"]


async def test_a_session_on_the_real_llama_path(tmp_path, qwen_gguf):
    """The model loads in a worker (progress screen), a turn runs on llama.cpp and is saved."""
    app = make_app(model=str(qwen_gguf), domain="terminal", think="off", max_tokens=12, ctx=16384,
                   sessions_dir=tmp_path, out=tmp_path / "real.jsonl", timings=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: isinstance(app.screen, (SessionScreen, ErrorDialog)), timeout_s=60)
        assert isinstance(app.screen, SessionScreen), getattr(app.screen, "message", "")
        await type_action(pilot, "ls")
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen), getattr(app.screen, "message", "")
        assert app.screen.busy == ""
        status = widget_text(app, "#status")
        assert "turn 1" in status and "/16,384" in status
    traj = read_trajectory(tmp_path / "real.jsonl")
    assert len(traj.turns) == 1
    assert traj.turns[0].tokens["generated"] <= 12
    assert traj.header.model.name == qwen_gguf.name


async def test_the_ui_stays_usable_while_the_model_loads_and_shows_progress(tmp_path, monkeypatch):
    import threading

    from textual.widgets import ProgressBar

    from agentworld_local.engine import loading
    from agentworld_local.tui.start import LoadingScreen

    release = threading.Event()
    reported = threading.Event()
    planning = threading.Event()  # the load's first part, before llama.cpp reports any progress

    def slow_load(model, *, progress, notice, **options):  # a load that takes as long as the test wants
        planning.wait(1800)  # far beyond pytest-timeout: the test sets it; the bound only ends the thread
        progress(0.4)
        notice("offloading 0 of 8 layers: no GPU")
        reported.set()
        release.wait(1800)
        from agentworld_local.engine.scripted import ScriptedBackend

        return ScriptedBackend([answer("thinking_then_tags").scripted()])

    monkeypatch.setattr(loading, "load_backend", slow_load)
    app = make_app(model="some-model", domain="terminal", sessions_dir=tmp_path, out=tmp_path / "s.jsonl",
                   timings=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: isinstance(app.screen, LoadingScreen))
        assert app.screen.query_one(ProgressBar).total is None  # a pulse, not a bar stuck at 0%
        planning.set()
        await wait_for(reported.is_set)
        await wait_for(lambda: isinstance(app.screen, LoadingScreen)
                       and app.screen.query_one(ProgressBar).progress == 0.4)
        release.set()
        await wait_for(lambda: isinstance(app.screen, SessionScreen))
        assert any("no GPU" in str(notification.message) for notification in app._notifications)
        await type_action(pilot, "ls -la")
    assert len(read_trajectory(tmp_path / "s.jsonl").turns) == 1


@pytest.mark.parametrize("attempts", [pytest.param(2, id="twice"), pytest.param(8, id="raced", marks=pytest.mark.slow)])
async def test_going_back_during_a_load_stops_it_and_the_next_start_runs_on_the_model_chosen_then(tmp_path, monkeypatch,
                                                                                                 attempts):
    """Start model A, press Escape during its load, start model B: the session runs on B, and A
    is stopped and closed (before the runner, the session ran on A with B's request and both
    stayed loaded). Raced 8 times in the slow tier (twice in the default one): the Escape lands
    at a different moment each time."""
    import random
    import threading

    from agentworld_local.engine.scripted import ScriptedBackend
    from agentworld_local.errors import Cancelled
    from agentworld_local.engine import loading

    class Closing(ScriptedBackend):
        closed = False

        def close(self) -> None:
            self.closed = True

    made: list = []

    def slow_load(model, *, progress=None, **options):
        # Model A loads until it is stopped (each progress report is a chance to stop); B at once.
        for step in range(2000 if model == "model-a" else 3):
            if progress is not None and progress(step / 2000) is False:
                raise Cancelled("The model load was cancelled.", "Start it again.")
            threading.Event().wait(0.005)
        backend = Closing([answer("thinking_then_tags").scripted()], name=model)
        made.append(backend)
        return backend

    monkeypatch.setattr(loading, "load_backend", slow_load)
    for attempt in range(attempts):
        made.clear()
        app = make_app(sessions_dir=tmp_path / str(attempt), models=[], timings=False)
        async with app.run_test(size=SIZE) as pilot:
            await start_with(pilot, world="domain:terminal", model="model-a", wait=False)
            await pilot.pause(random.random() / 50)
            await pilot.press("escape")  # keys work while the model loads
            await wait_for(lambda: isinstance(app.screen, StartScreen))
            await start_with(pilot, world="domain:terminal", model="model-b")
            await wait_for(lambda: isinstance(app.screen, SessionScreen))
            assert app.screen.view.model.name == "model-b"
            await type_action(pilot, "ls")
            assert app.screen.branch[-1].observation
        assert [backend.info.name for backend in made if not backend.closed] == []  # the app closed them all on exit
        assert all(backend.closed for backend in made if backend.info.name == "model-a")
        sessions = list((tmp_path / str(attempt)).glob("*.jsonl"))
        assert len(sessions) == 1  # model A's start left no file
