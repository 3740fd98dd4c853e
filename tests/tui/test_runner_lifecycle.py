"""The TUI over the runner, where threads meet the model's lifecycle: each case below was a
reproduced failure before the runner (a crash, a blank screen, a file created behind the
user's back, a control written beside a running turn). Races run many times."""

from __future__ import annotations

import random
import threading

import pytest

from agentworld_local.engine.scripted import ScriptedBackend
from agentworld_local.errors import Cancelled
from agentworld_local.engine import loading
from agentworld_local.testing.answers import answer
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.tui.app import make_app
from agentworld_local.tui.dialogs import ErrorDialog, PromptDialog
from agentworld_local.tui.session_screen import SessionScreen
from agentworld_local.tui.start import LoadingScreen, StartScreen
from tests.tui.helpers import (
    SIZE, GatedBackend, scripted, session_app, session_opened, settle, type_action, wait_for, widget_text,
)

pytestmark = pytest.mark.anyio


def endless_load(made: list, stopped: list):
    """A load that goes on until the runner stops it through its progress callback."""

    def load(model, *, progress=None, **options):
        for step in range(4000):
            if progress is not None and progress(step / 4000) is False:
                stopped.append(model)
                raise Cancelled("The model load was cancelled.", "Start it again.")
            threading.Event().wait(0.005)
        backend = ScriptedBackend([answer("thinking_then_tags").scripted()], name=model)
        made.append(backend)
        return backend

    return load


async def test_quitting_during_a_load_stops_it_and_leaves_no_file(tmp_path, monkeypatch):
    """Ctrl+Q during a load used to wait for the whole load, then create the session file and
    crash mounting the session screen."""
    made: list = []
    stopped: list = []
    monkeypatch.setattr(loading, "load_backend", endless_load(made, stopped))
    for attempt in range(6):
        out = tmp_path / f"q{attempt}.jsonl"
        app = make_app(model="big-model", domain="terminal", sessions_dir=tmp_path, out=out, timings=False)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(lambda: isinstance(app.screen, LoadingScreen))
            await pilot.pause(random.random() / 20)
            await pilot.press("ctrl+q")
            await wait_for(lambda: not app.is_running, timeout_s=10)
        assert not out.exists()
        assert app.return_code in (0, None)
    assert made == [] and len(stopped) == 6  # every load was stopped, none finished behind the user's back


async def test_a_model_that_fails_to_load_leaves_the_start_screen_not_a_blank_one(tmp_path):
    """`awl play -m BAD.gguf` showed a blank screen once the error dialog was closed."""
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    app = make_app(model=str(bad), domain="terminal", sessions_dir=tmp_path, out=tmp_path / "s.jsonl", timings=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: isinstance(app.screen, ErrorDialog))
        assert "bad.gguf" in app.screen.message
        await pilot.press("escape")
        await wait_for(lambda: isinstance(app.screen, StartScreen))
        assert app.screen.query_one("#model").value == str(bad)  # the choice stays, to correct it
    assert not (tmp_path / "s.jsonl").exists()


async def test_a_control_sent_while_a_turn_runs_waits_and_applies_to_the_next_turn(tmp_path):
    """Ctrl+N was once accepted while a turn ran and written beside it (the UI thread wrote
    through the worker's writer), then refused; now it waits in the session's mailbox behind
    the running turn: that turn never sees it, the next one does."""
    backend = GatedBackend(scripted("thinking_then_tags", "thinking_then_tags"))
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        screen = app.screen
        await type_action(pilot, "ls -la", wait=False)
        await wait_for(backend.holding.is_set)
        await pilot.press("ctrl+n")
        await wait_for(lambda: isinstance(app.screen, PromptDialog))
        app.screen.query_one("#prompt-input").value = "the disk is full"
        await pilot.press("enter")
        await wait_for(lambda: app.screen is screen)
        assert screen.busy == "turn" and screen.queued == 1
        assert "generating… (esc cancels) · 1 queued" in widget_text(app, "#status")
        backend.gate.set()
        await settle(pilot)
        await type_action(pilot, "pwd")
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert [turn.controls_added for turn in traj.turns] == [[], ["the disk is full"]]
    assert traj.pending_controls == []


async def test_a_control_dialog_left_open_until_a_turn_runs_is_sent_behind_it(tmp_path):
    backend = GatedBackend(scripted("thinking_then_tags", "thinking_then_tags"))
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        screen = app.screen
        await pilot.press("ctrl+n")
        await wait_for(lambda: isinstance(app.screen, PromptDialog))
        # A turn begins meanwhile (e.g. the agent's, or one from the command palette).
        assert screen._send("turn", lambda: app.runner.step(screen.view.id, screen.view.domain.parse_action("ls -la")))
        await wait_for(backend.holding.is_set)
        app.screen.query_one("#prompt-input").value = "the disk is full"
        await pilot.press("enter")
        await wait_for(lambda: screen.queued == 1)
        backend.gate.set()
        await settle(pilot)
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert [turn.controls_added for turn in traj.turns] == [[]]  # the running turn never saw it
    assert traj.pending_controls == ["the disk is full"]  # for the next turn, a resume included


async def test_a_session_that_opens_after_the_user_went_back_is_closed_and_leaves_no_file(tmp_path):
    """The open the user stopped waiting for still opens: the app closes it by a close queued
    in its own mailbox once the open has ended, and the user's next start opens as usual."""
    from agentworld_local.tui.app import SessionRequest

    app = make_app(backend=scripted("thinking_then_tags"), domain="terminal", sessions_dir=tmp_path, timings=False,
                   start_screen=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: isinstance(app.screen, StartScreen))
        for attempt in range(5):
            app.begin(SessionRequest(domain="terminal", out=tmp_path / f"gone{attempt}.jsonl"))
            app._waiting = False  # the user went back before it opened
            await pilot.pause(random.random() / 50)
        await wait_for(lambda: not app.runner.busy and not app._orphans)
        assert isinstance(app.screen, StartScreen)
        assert list(tmp_path.glob("gone*.jsonl")) == []  # each closed, and a session without a turn leaves no file
        app.begin(SessionRequest(domain="terminal", out=tmp_path / "kept.jsonl"))
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
    assert len(read_trajectory(tmp_path / "kept.jsonl").turns) == 1


@pytest.mark.parametrize("attempts", [pytest.param(1, id="once"), pytest.param(4, id="raced", marks=pytest.mark.slow)])
async def test_closing_the_app_during_a_turn_on_the_real_model_never_crashes(tmp_path, qwen_gguf, attempts):
    """The app's unmount closed the backend while a thread worker still decoded (a segfault).
    Now the runner cancels the turn, waits for it, then frees the model. Once in the default
    tier, raced 4 times (a different moment each) in the slow tier."""
    from agentworld_local.engine.loading import load_backend

    for attempt in range(attempts):
        real = load_backend(str(qwen_gguf), gpu_layers="0", ctx=8192)
        # Held mid-decode (a few tokens in) until the quit cancels it: the close surely meets a generation.
        backend = GatedBackend(real, after=3 + attempt)
        app = make_app(backend=backend, domain="terminal", think="off", max_tokens=3000, sessions_dir=tmp_path,
                       out=tmp_path / f"c{attempt}.jsonl", timings=False)
        async with app.run_test(size=SIZE) as pilot:
            await session_opened(pilot)
            await type_action(pilot, "cat /var/log/syslog", wait=False)
            await wait_for(backend.holding.is_set)
            await pilot.pause(random.random() / 10)
            await pilot.press("ctrl+q")
            await wait_for(lambda: not app.is_running, timeout_s=30)
        assert real._freed and not (tmp_path / f"c{attempt}.jsonl").exists()


async def test_untagged_text_streams_into_the_pane_marked_and_the_turn_records_it(tmp_path):
    """Small models write no observation tag: the pane shows their text as it streams, marked."""
    raw = "<think>\nplain text it is\n</think>\n" + "total 0\n" * 40
    backend = GatedBackend(ScriptedBackend([raw], delay_s=0.0), after=40)
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls", wait=False)
        await wait_for(backend.holding.is_set)
        await wait_for(lambda: "untagged" in str(app.screen.query_one("#world-scroll").border_subtitle))
        assert "total 0" in str(app.screen.query_one("#world").render())
        backend.gate.set()
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)
    record = read_trajectory(tmp_path / "session.jsonl").turns[0]
    assert record.observation.startswith("total 0") and record.parse_method == "cleaned"
