"""Whole sessions driven through the TUI with the scripted backend (realistic answers):
type, stream, undo, regenerate, cancel, control, errors; the screen, the timeline and the
trajectory file are checked after each step."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from textual.widgets import Collapsible

from agentworld_local.examples import pick_example
from agentworld_local.testing.answers import answer
from agentworld_local.engine.scripted import ScriptedAnswer
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.tui.app import make_app
from agentworld_local.tui.dialogs import ErrorDialog
from agentworld_local.tui.session_screen import SessionScreen
from agentworld_local.tui.widgets import Timeline

from tests.tui.helpers import (
    SIZE, GatedBackend, footer_with, session_opened, screen_text, scripted, session_app, settle, tree_labels, type_action, wait_for, widget_text,
)

LS = answer("thinking_then_tags")

#: Every async test runs on anyio's plugin. Marked at collection (not in a hook), so the
#: items keep their ids and the snapshot report can find them.
pytestmark = pytest.mark.anyio


def terminal(app, *steps: tuple[str, str]) -> str:
    """The terminal view after (command, observation) steps, written out as a terminal shows a
    session: the starting screen, each command typed after its prompt, then what it printed."""
    text = app.screen.view.initial_state
    for command, observation in steps:
        text += command + "\n" + observation
    return text


def timeline_labels(app) -> list[str]:
    return tree_labels(app.screen.query_one(Timeline))


async def test_a_turn_streams_into_the_world_view_once_and_is_saved(tmp_path):
    app = session_app(tmp_path, scripted("thinking_then_tags"))
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        assert isinstance(app.screen, SessionScreen)
        world = widget_text(app, "#world")
        assert world == terminal(app, ("ls -la", LS.observation))
        screen = screen_text(app)
        # Each line of the observation is on screen once: the stream was not added to the final text.
        for line in LS.observation.splitlines()[1:]:
            assert screen.count(line.rstrip()) == 1, line
        assert "The agent lists /app." in widget_text(app, "#thinking")
        assert timeline_labels(app)[0].startswith(" 1 ls -la → total 12")
        assert "turn 1" in screen
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert [record.observation for record in traj.current_branch()] == [LS.observation]
    assert traj.turns[0].action == "ls -la"


async def test_a_terminal_line_becomes_keystrokes_and_control_keys_can_be_sent(tmp_path):
    backend = scripted("thinking_then_tags", "draft_tags_inside_thinking")
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        await type_action(pilot, "C-c")
    turns = read_trajectory(tmp_path / "session.jsonl").turns
    assert turns[0].action_payload == [{"keystrokes": "ls -la\n", "duration": turns[0].action_payload[0]["duration"]}]
    assert turns[1].action_payload[0]["keystrokes"] == "C-c"


async def test_undo_keeps_the_turn_in_the_file_and_the_timeline_shows_the_branch(tmp_path):
    backend = scripted("thinking_then_tags", "marker_form", "no_tags")
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        await type_action(pilot, "pwd")
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert widget_text(app, "#world") == terminal(app, ("ls -la", LS.observation))  # back to turn 1
        assert any("pwd" in label and "undone" in label for label in timeline_labels(app))
        await type_action(pilot, "gti status")
        labels = timeline_labels(app)
        assert len(labels) == 3
        assert [label for label in labels if "undone" in label] == [next(l for l in labels if "pwd" in l)]
        assert widget_text(app, "#world") == terminal(app, ("ls -la", LS.observation), ("gti status", answer("no_tags").observation))
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert [record.action for record in traj.turns] == ["ls -la", "pwd", "gti status"]
    assert [record.action for record in traj.current_branch()] == ["ls -la", "gti status"]


async def test_undo_typed_at_the_action_line(tmp_path):
    app = session_app(tmp_path, scripted("thinking_then_tags"))
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        await type_action(pilot, ":undo")
        assert widget_text(app, "#world") == app.screen.view.initial_state
    assert read_trajectory(tmp_path / "session.jsonl").current_branch() == []


async def test_regenerate_replaces_the_last_turn_with_a_new_sample(tmp_path):
    backend = scripted("thinking_then_tags", "draft_tags_inside_thinking")
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert widget_text(app, "#world") == terminal(app, ("ls -la", answer("draft_tags_inside_thinking").observation))
        assert any("↻1" in label for label in timeline_labels(app))
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert len(traj.turns) == 2
    assert traj.current_branch()[0].extra.get("attempt") == 1
    assert traj.current_branch()[0].action == "ls -la"


@pytest.mark.parametrize("regenerates", [pytest.param(5, id="short"), pytest.param(25, id="long", marks=pytest.mark.slow)])
async def test_the_timeline_follows_turns_undo_and_regenerate_without_rereading_the_file(tmp_path, monkeypatch,
                                                                                         regenerates):
    """The screen never reads the file or a Session: the runner reads it once when the session
    opens, and the events (each saying where the branch is) keep the timeline current. A
    regenerate used to race its own undo notice (the timeline asked for a turn it did not hold
    yet, and the app exited): here it runs back to back many times (25 in the slow tier, 5 in the default one), with the UI
    thread busy."""
    import time

    import agentworld_local.session.core as session_core

    reads: list[object] = []

    def counted(path):
        reads.append(path)
        return read_trajectory(path)

    monkeypatch.setattr(session_core, "read_trajectory", counted)
    backend = scripted("thinking_then_tags", "no_tags", "marker_form", "draft_tags_inside_thinking")
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        await type_action(pilot, "gti status")
        await pilot.press("ctrl+z")
        await settle(pilot)
        await type_action(pilot, "pwd")
        for _ in range(regenerates):
            await pilot.press("ctrl+r")
            time.sleep(0.002)  # the UI thread lags behind the runner, as a busy one does
            await settle(pilot)
        assert reads == []  # a new session: nothing to read; a large file is never read after each turn
        kept_up = timeline_labels(app)
        assert app.is_running and isinstance(app.screen, SessionScreen)
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert [record.action for record in traj.turns[:3]] == ["ls -la", "gti status", "pwd"]
    assert len(traj.turns) == 3 + regenerates and traj.current_branch()[-1].extra.get("attempt") == regenerates
    assert [record.action for record in traj.current_branch()] == ["ls -la", "pwd"]
    # What the events kept up is what the file says: the same session, opened afresh, shows the same timeline.
    again = make_app(backend=scripted("thinking_then_tags"), resume=tmp_path / "session.jsonl", sessions_dir=tmp_path,
                     timings=False)
    async with again.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await wait_for(lambda: isinstance(again.screen, SessionScreen))
        assert timeline_labels(again) == kept_up


async def test_cancel_stops_a_streaming_turn_and_saves_nothing(tmp_path):
    backend = GatedBackend(scripted("thinking_then_tags"))
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        initial = widget_text(app, "#world")
        await type_action(pilot, "ls -la", wait=False)
        await wait_for(backend.holding.is_set)
        screen = app.screen
        assert screen.busy == "turn"
        await pilot.press("escape")
        await settle(pilot)
        assert screen.busy == ""
        assert widget_text(app, "#world") == initial
        assert timeline_labels(app) == []
        assert read_trajectory(tmp_path / "session.jsonl").turns == []
    # Quit before any turn was saved: the session leaves no file ("Recent sessions" lists sessions).
    assert not (tmp_path / "session.jsonl").exists()


def file_branch(tmp_path, name: str = "session.jsonl") -> list[tuple[int, str, str]]:
    """The file's current branch as (id, action, observation): what the screen's branch must be."""
    return [(turn.id, turn.action, turn.observation) for turn in read_trajectory(tmp_path / name).current_branch()]


def screen_branch(app) -> list[tuple[int, str, str]]:
    return [(turn.id, turn.action, turn.observation) for turn in app.screen.branch]


async def test_keys_keep_working_while_a_turn_streams(tmp_path):
    backend = GatedBackend(scripted("thinking_then_tags"))
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la", wait=False)
        await wait_for(backend.holding.is_set)
        await pilot.press("ctrl+g")  # fold the thinking pane mid-stream
        assert app.screen.query_one("#thinking-box", Collapsible).collapsed
        await pilot.press("p", "w", "d")  # the next action can be typed meanwhile
        assert app.screen.query_one("#action").value == "pwd"
        assert app.screen.busy == "turn"
        backend.gate.set()
        await settle(pilot)
        assert widget_text(app, "#world") == terminal(app, ("ls -la", LS.observation))
        assert app.screen.query_one("#action").value == "pwd"  # still there, to send when the user likes
    assert len(read_trajectory(tmp_path / "session.jsonl").turns) == 1


async def test_an_action_sent_while_a_turn_runs_waits_behind_it_and_both_are_saved_in_order(tmp_path):
    """No busy gate: the second action is sent at once, waits in the session's mailbox in the
    runner, and runs when the first has ended; the status says it waits."""
    backend = GatedBackend(scripted("thinking_then_tags", "no_tags"))
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        screen = app.screen
        await type_action(pilot, "ls -la", wait=False)
        await wait_for(backend.holding.is_set)
        await type_action(pilot, "pwd", wait=False)
        await pilot.pause()
        assert widget_text(app, "#action-error") == "" and screen.query_one("#action").value == ""
        assert screen.busy == "turn" and screen.queued == 1
        assert app.runner.pending(screen.view.id) == 2
        assert widget_text(app, "#status").startswith("generating… (esc cancels) · 1 queued │ turn 0 │")
        backend.gate.set()
        await settle(pilot)
        assert screen.busy == "" and screen.queued == 0
        assert widget_text(app, "#world") == terminal(app, ("ls -la", LS.observation), ("pwd", answer("no_tags").observation))
        assert [label.split(" → ")[0].strip() for label in timeline_labels(app)] == ["1 ls -la", "2 pwd"]
        assert screen_branch(app) == file_branch(tmp_path)
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert [turn.action for turn in traj.turns] == ["ls -la", "pwd"]
    assert [turn.action for turn in traj.current_branch()] == ["ls -la", "pwd"]


async def test_escape_stops_the_running_turn_and_drops_what_waits_behind_it(tmp_path):
    backend = GatedBackend(scripted("thinking_then_tags", "no_tags", "marker_form"))
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        screen = app.screen
        initial = widget_text(app, "#world")
        await type_action(pilot, "ls -la", wait=False)
        await wait_for(backend.holding.is_set)
        await type_action(pilot, "pwd", wait=False)
        await type_action(pilot, ":control the disk is full", wait=False)
        await pilot.pause()
        assert screen.busy == "turn" and screen.queued == 2
        assert "· 2 queued" in widget_text(app, "#status")
        await pilot.press("escape")
        await settle(pilot)
        assert screen.busy == "" and app.runner.pending(screen.view.id) == 0
        assert widget_text(app, "#world") == initial and timeline_labels(app) == [] and screen.branch == []
        notes = [str(note.message) for note in app._notifications]
        assert "Turn 1 cancelled; nothing was saved." in notes
        assert "2 queued commands dropped; nothing was changed." in notes
        assert not any("Cancelled before it ran" in note for note in notes)  # said once, not for each
        traj = read_trajectory(tmp_path / "session.jsonl")
        assert traj.turns == [] and traj.pending_controls == []
        # The session goes on: the next action runs as usual.
        backend.gate.set()
        await type_action(pilot, "whoami")
        assert [turn.action for turn in screen.branch] == ["whoami"]
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert [turn.action for turn in traj.turns] == ["whoami"] and traj.pending_controls == []
    assert all(not turn.controls_added for turn in traj.turns)


async def test_the_screens_branch_is_the_files_after_undo_regenerate_and_a_cancelled_regenerate(tmp_path):
    """The screen keeps no copy of the branch: each command's Ready carries the session's view."""
    backend = GatedBackend(scripted("thinking_then_tags", "no_tags", "marker_form", "draft_tags_inside_thinking",
                                    "thinking_then_tags", "no_tags", "marker_form"))
    backend.gate.set()
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        await type_action(pilot, "pwd")
        assert [turn[1] for turn in screen_branch(app)] == ["ls -la", "pwd"]
        assert screen_branch(app) == file_branch(tmp_path)
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert [turn[1] for turn in screen_branch(app)] == ["ls -la"] and screen_branch(app) == file_branch(tmp_path)
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert screen_branch(app) == file_branch(tmp_path) and screen_branch(app)[0][0] != 1  # the new sample
        kept = screen_branch(app)
        backend.gate.clear()
        await pilot.press("ctrl+r")
        await wait_for(backend.holding.is_set)
        await pilot.press("escape")
        await settle(pilot)
        assert screen_branch(app) == kept == file_branch(tmp_path)
        # Queued behind a running turn: an undo and a regenerate, in order.
        await type_action(pilot, "whoami", wait=False)
        await wait_for(backend.holding.is_set)
        await type_action(pilot, ":undo", wait=False)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert app.screen.queued == 2
        backend.gate.set()
        await settle(pilot)
        assert [turn[1] for turn in screen_branch(app)] == ["ls -la"]  # whoami, undone; then ls -la again
        assert screen_branch(app) == file_branch(tmp_path) and screen_branch(app) != kept
        assert widget_text(app, "#world") == terminal(app, *[(action, observation) for _, action, observation in screen_branch(app)])


async def test_a_parse_error_shows_inline_and_leaves_the_session_untouched(tmp_path):
    backend = scripted("thinking_then_tags")
    app = session_app(tmp_path, backend, domain="web")
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "frobnicate 12")
        error = widget_text(app, "#action-error")
        assert "frobnicate" in error
        assert app.screen.query_one("#action-error").display
        assert not isinstance(app.screen, ErrorDialog)
        assert read_trajectory(tmp_path / "session.jsonl").turns == []
    assert backend.calls == 0


async def test_history_recalls_earlier_actions_with_up_and_down(tmp_path):
    app = session_app(tmp_path, scripted("thinking_then_tags", "marker_form"))
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        await type_action(pilot, "pwd")
        field = app.screen.query_one("#action")
        await pilot.press("up")
        assert field.value == "pwd"
        await pilot.press("up")
        assert field.value == "ls -la"
        await pilot.press("down", "down")
        assert field.value == ""


async def test_a_control_instruction_reaches_the_next_turn(tmp_path):
    backend = scripted("thinking_then_tags")
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, ":control the disk is full")
        await type_action(pilot, "ls -la")
    assert "the disk is full" in backend.last_messages[-1]["content"]
    assert read_trajectory(tmp_path / "session.jsonl").turns[0].controls_added == ["the disk is full"]


async def test_a_generation_error_becomes_a_dialog_and_the_file_stays_intact(tmp_path):
    # A context far too small for the prompt: the backend refuses with an AwlError.
    backend = scripted("thinking_then_tags", "marker_form")
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        assert len(read_trajectory(tmp_path / "session.jsonl").turns) == 1
        backend.info = backend.info.__class__(**{**backend.info.__dict__, "n_ctx": 50})
        await type_action(pilot, "pwd")
        assert isinstance(app.screen, ErrorDialog)
        assert "context" in app.screen.message
        assert len(app.screen_stack) == 3  # one dialog, over the session
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, SessionScreen)
        assert widget_text(app, "#world") == terminal(app, ("ls -la", LS.observation))
        assert app.screen.busy == ""
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert [record.action for record in traj.current_branch()] == ["ls -la"]


async def test_regenerate_with_no_turn_is_a_dialog_not_a_crash(tmp_path):
    app = session_app(tmp_path, scripted("thinking_then_tags"))
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, ErrorDialog)
        assert "no turn to regenerate" in app.screen.message


async def test_the_status_bar_names_model_context_thinking_and_turn(tmp_path):
    app = session_app(tmp_path, scripted("thinking_then_tags"), think="256")
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        status = widget_text(app, "#status")
    assert "model scripted" in status
    assert "CPU" in status
    assert "/16,384" in status
    assert "think 256" in status
    assert "turn 1" in status
    assert "session.jsonl" in status


@pytest.mark.parametrize("domain, offered, not_offered", [
    ("terminal", ["Files", "Timeline"], ["Open page in browser", "Elements"]),
    ("web", ["Open page in browser", "Elements", "Timeline"], ["Files"]),
])
async def test_help_and_the_command_palette_list_the_keys_of_this_domain(tmp_path, domain, offered, not_offered):
    """F1 listed every key, the web-only ones in a terminal session too; now only what applies."""
    app = session_app(tmp_path, scripted("thinking_then_tags"), domain=domain)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await pilot.press("f1")
        await pilot.pause()
        text = screen_text(app)
        for words in ("Undo", "Regenerate", "Fork at turn", "Cancel turn", "Control", "Save as", "Open", *offered):
            assert words in text, words
        for words in not_offered:
            assert words not in text, words
        await pilot.press("escape")
        await pilot.pause()
        commands = {command.title for command in app.get_system_commands(app.screen)}
        assert {"Undo", "Regenerate", "Fork at turn", "Save as", "Open", *offered} <= commands
        assert not commands & set(not_offered)
        footer = await footer_with(app, "f2 Timeline")
        assert "Cancel turn" not in footer and "Cancel turn" not in commands  # offered while a turn runs


async def fork_via_dialog(pilot, key: str, out) -> None:
    await pilot.press(key)
    await pilot.pause()
    dialog_input = pilot.app.screen.query_one("#prompt-input")
    dialog_input.value = str(out)
    await pilot.press("enter")
    await wait_for(lambda: isinstance(pilot.app.screen, SessionScreen) and pilot.app.screen.view.path == out)


async def test_fork_from_the_selected_turn_goes_on_in_a_new_file(tmp_path):
    backend = scripted("thinking_then_tags", "marker_form", "no_tags")
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        await type_action(pilot, "pwd")
        await pilot.press("f2", "up")  # the timeline, then turn 1
        await fork_via_dialog(pilot, "ctrl+f", tmp_path / "fork.jsonl")
        assert widget_text(app, "#world") == terminal(app, ("ls -la", LS.observation))
        assert len(timeline_labels(app)) == 1
        assert "fork.jsonl" in widget_text(app, "#status")
        await type_action(pilot, "gti status")
    fork = read_trajectory(tmp_path / "fork.jsonl")
    assert [record.action for record in fork.current_branch()] == ["ls -la", "gti status"]
    original = read_trajectory(tmp_path / "session.jsonl")
    assert [record.action for record in original.current_branch()] == ["ls -la", "pwd"]


async def test_save_as_goes_on_in_the_new_file_with_every_turn(tmp_path):
    app = session_app(tmp_path, scripted("thinking_then_tags", "marker_form"))
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        await fork_via_dialog(pilot, "ctrl+s", tmp_path / "copy.jsonl")
        notes = [str(note.message) for note in app._notifications]
        assert any(note.startswith(f"Saved as {tmp_path / 'copy.jsonl'}") for note in notes)
        assert not any("Forked" in note for note in notes)
        await type_action(pilot, "pwd")
    assert [r.action for r in read_trajectory(tmp_path / "copy.jsonl").current_branch()] == ["ls -la", "pwd"]
    assert [r.action for r in read_trajectory(tmp_path / "session.jsonl").current_branch()] == ["ls -la"]


async def test_save_as_while_turns_run_is_made_once_they_end_and_holds_them(tmp_path):
    """Save-as waits for the commands the screen sent (no refusal): the new file holds the turn
    that ran and the one queued behind it, and the session goes on there."""
    backend = GatedBackend(scripted("thinking_then_tags", "no_tags", "marker_form"))
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la", wait=False)
        await wait_for(backend.holding.is_set)
        await type_action(pilot, "pwd", wait=False)
        await pilot.press("ctrl+s")
        await pilot.pause()
        pilot.app.screen.query_one("#prompt-input").value = str(tmp_path / "copy.jsonl")
        await pilot.press("enter")
        await pilot.pause()
        assert any("once what runs now has ended" in str(note.message) for note in app._notifications)
        assert not (tmp_path / "copy.jsonl").exists()
        backend.gate.set()
        await wait_for(lambda: isinstance(app.screen, SessionScreen) and app.screen.view.path == tmp_path / "copy.jsonl")
        assert [turn.action for turn in app.screen.branch] == ["ls -la", "pwd"]
        await type_action(pilot, "whoami")
    assert [r.action for r in read_trajectory(tmp_path / "copy.jsonl").current_branch()] == ["ls -la", "pwd", "whoami"]
    assert [r.action for r in read_trajectory(tmp_path / "session.jsonl").current_branch()] == ["ls -la", "pwd"]


async def test_fork_into_an_existing_file_is_refused_and_the_session_goes_on(tmp_path):
    (tmp_path / "taken.jsonl").write_text("keep me\n")
    app = session_app(tmp_path, scripted("thinking_then_tags"))
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        await pilot.press("ctrl+s")
        await pilot.pause()
        app.screen.query_one("#prompt-input").value = str(tmp_path / "taken.jsonl")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ErrorDialog)
        assert "taken.jsonl" in app.screen.message
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen.view.path == tmp_path / "session.jsonl"
    assert (tmp_path / "taken.jsonl").read_text() == "keep me\n"


async def test_open_a_saved_session_goes_on_in_its_file(tmp_path):
    first = session_app(tmp_path, scripted("thinking_then_tags"), out=tmp_path / "first.jsonl")
    async with first.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
    app = session_app(tmp_path, scripted("marker_form"), out=tmp_path / "second.jsonl")
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await pilot.press("ctrl+o")
        await pilot.pause()
        app.screen.query_one("#prompt-input").value = str(tmp_path / "first.jsonl")
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, SessionScreen) and app.screen.view.path.name == "first.jsonl")
        assert widget_text(app, "#world") == terminal(app, ("ls -la", LS.observation))
        await type_action(pilot, "pwd")
    assert [r.action for r in read_trajectory(tmp_path / "first.jsonl").current_branch()] == ["ls -la", "pwd"]
    assert not (tmp_path / "second.jsonl").exists()  # left before its first turn: no file behind


async def test_choosing_a_web_element_offers_click_and_fill(tmp_path):
    backend = scripted("thinking_then_tags")
    app = session_app(tmp_path, backend, domain="web")
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await pilot.press("ctrl+e")
        await pilot.pause()
        options = app.screen.query_one("#elements")
        ids = [option.id for option in options.options]
        assert "click 24" in ids and "fill 23 " in ids and "fill 24 " not in ids  # a button takes no text
        options.highlighted = ids.index("fill 23 ")
        await pilot.press("enter")
        await pilot.pause()
        field = app.screen.query_one("#action")
        assert field.value == "fill 23 "
        await pilot.press("b", "o", "o", "t", "s", "enter")
        await settle(pilot)
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert traj.turns[0].action_payload == {"action": "fill", "args": {"bid": "23", "value": "boots"}}


PAGE_AFTER_CLICK = ("RootWebArea 'Tarn Waterproof Hiking Jacket', focused, url='https://shop.example/p/tarn'\n"
                    "\t[101] heading 'Tarn Waterproof Hiking Jacket'\n\t[111] button 'Add to cart'")


async def test_the_current_web_page_opens_in_the_browser(tmp_path, monkeypatch):
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda uri, *a, **k: opened.append(uri) or True)
    page_answer = ScriptedAnswer(f"<think>\nThe product page opens.\n</think>\n<predicted_observation>\n"
                                 f"{PAGE_AFTER_CLICK}\n</predicted_observation>")
    app = session_app(tmp_path, scripted(page_answer), domain="web")
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "click 24")
        await pilot.press("ctrl+b")  # works while the action line has the focus
        await pilot.pause()
        assert app.screen.query_one("#action").value == ""  # the key typed nothing
        assert len(opened) == 1 and opened[0].startswith("file://") and opened[0].endswith(".html")
        written = Path(opened[0][len("file://"):])
        page = written.read_text(encoding="utf-8")
        assert "Tarn Waterproof Hiking Jacket" in page and "[111]" in page  # the page after the turn, ids visible
        assert "turn 1: click 24" in page and "session.jsonl" in page
        assert "Content-Security-Policy" in page  # the model's page runs nothing
    assert not written.exists()  # temporary pages are removed when the app exits


async def test_without_a_browser_the_session_screen_names_the_page_file(tmp_path, monkeypatch):
    monkeypatch.setattr("webbrowser.open", lambda uri, *a, **k: False)  # no browser (an SSH session)
    app = session_app(tmp_path, scripted("thinking_then_tags"), domain="web")  # the initial page
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await pilot.press("ctrl+b")
        await pilot.pause()
        notes = [str(n.message) for n in app._notifications]
        assert len(notes) == 1 and "No browser could be opened" in notes[0] and "Opened" not in notes[0], notes
        written = Path(notes[0].split("written to ")[1].split(";")[0])
        assert written.is_file()
    assert not written.exists()


async def test_open_in_browser_outside_the_web_domain_only_says_so(tmp_path, monkeypatch):
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda uri, *a, **k: opened.append(uri) or True)
    app = session_app(tmp_path, scripted("thinking_then_tags"))
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await pilot.press("ctrl+b")
        await pilot.pause()
        assert isinstance(app.screen, SessionScreen)
    assert opened == []


async def test_quitting_while_a_turn_streams_cancels_it_and_leaves_the_file_whole(tmp_path):
    backend = GatedBackend(scripted("thinking_then_tags", "marker_form"))
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        backend.gate.set()
        await type_action(pilot, "ls -la")
        backend.gate.clear()
        await type_action(pilot, "pwd", wait=False)
        await wait_for(backend.holding.is_set)
        await pilot.press("ctrl+q")
        await wait_for(lambda: not app.is_running)
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert [record.action for record in traj.turns] == ["ls -la"]
    assert traj.warnings == [] and traj.damaged_line is None


async def test_ctrl_f_at_the_action_line_forks_at_the_last_turn(tmp_path):
    """With nothing picked in the timeline, Ctrl+F forked at turn 1 (the tree's cursor had not
    moved to the last turn yet); now it is the last turn, and F2 then a turn picks another."""
    source = tmp_path / "five.jsonl"
    shutil.copy(pick_example("terminal").path, source)
    turns = len(read_trajectory(source).current_branch())
    app = make_app(backend=scripted("thinking_then_tags"), resume=source, sessions_dir=tmp_path, timings=False)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await wait_for(lambda: isinstance(app.screen, SessionScreen))
        await pilot.press("ctrl+f")
        await pilot.pause()
        assert f"Fork at turn {turns} " in str(app.screen.query_one("#dialog-title").render())
        await pilot.press("escape")
        await pilot.press("f2", "home")  # the timeline, its first turn
        await fork_via_dialog(pilot, "ctrl+f", tmp_path / "at-one.jsonl")
    assert len(read_trajectory(tmp_path / "at-one.jsonl").current_branch()) == 1


async def test_a_fresh_session_says_there_is_nothing_to_fork_yet(tmp_path):
    app = session_app(tmp_path, scripted("thinking_then_tags"))
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await pilot.press("ctrl+f")
        await pilot.pause()
        assert isinstance(app.screen, SessionScreen)
        assert any("no turn to fork at yet" in str(n.message) for n in app._notifications)


@pytest.mark.parametrize("think, template_thinks", [("off", True), ("512", False)])
async def test_without_thinking_the_status_says_think_off_and_the_pane_never_says_thinking(tmp_path, think, template_thinks):
    inner = scripted("thinking_then_tags")
    inner.info = dataclasses.replace(inner.info, template_thinks=template_thinks)
    backend = GatedBackend(inner, after=2)
    app = session_app(tmp_path, backend, think=think)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        assert "think off" in widget_text(app, "#status")
        await type_action(pilot, "ls -la", wait=False)
        await wait_for(backend.holding.is_set)
        await pilot.pause()
        subtitle = str(app.screen.query_one("#world-scroll").border_subtitle)
        assert "thinking" not in subtitle and "answering" in subtitle
        assert "think off" in widget_text(app, "#status")
        backend.gate.set()
        await settle(pilot)


async def test_with_thinking_on_the_pane_says_thinking_while_the_model_thinks(tmp_path):
    backend = GatedBackend(scripted("thinking_then_tags"), after=2)
    app = session_app(tmp_path, backend, think="256")
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la", wait=False)
        await wait_for(backend.holding.is_set)
        await pilot.pause()
        assert "thinking…" in str(app.screen.query_one("#world-scroll").border_subtitle)
        assert "think 256" in widget_text(app, "#status")
        backend.gate.set()
        await settle(pilot)


async def test_the_action_line_offers_the_sessions_own_tools(tmp_path):
    """The notes MCP scenario's placeholder suggested `list_directory`, a tool it does not have."""
    app = session_app(tmp_path, scripted("thinking_then_tags"), domain=None, scenario="notes-mcp-server")
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        field = app.screen.query_one("#action")
        assert "list_notes" in field.placeholder and "list_directory" not in field.placeholder
        assert "read_file" not in field.placeholder
        await pilot.press("r", "e", "a")
        await pilot.pause()
        assert field._suggestion == "read_note"  # completion from the session's tools (right arrow takes it)
        await pilot.press("right")
        assert field.value == "read_note"


async def test_the_session_screen_names_the_scenario_and_the_task(tmp_path):
    app = session_app(tmp_path, scripted("thinking_then_tags"), domain=None, scenario="notes-mcp-server")
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        title = widget_text(app, "#session-title")
        assert "An MCP notes server with five tools" in title
        assert screen_text(app).splitlines()[0].startswith(" ◆ An MCP notes server")


async def test_the_terminal_streams_after_the_typed_command_like_a_scrollback(tmp_path):
    # Held inside the observation; a token every 5 ms, so the screen gets its frames of the stream.
    backend = GatedBackend(scripted("thinking_then_tags", "thinking_then_tags", delay_s=0.005), after=60)
    backend.gate.set()
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        backend.gate.clear()
        await type_action(pilot, "ls", wait=False)
        await wait_for(backend.holding.is_set)
        before = terminal(app, ("ls -la", LS.observation)) + "ls\n"
        # The observation streams below turn 1 and the command typed at its prompt.
        await wait_for(lambda: widget_text(app, "#world").startswith(before) and widget_text(app, "#world") != before)
        backend.gate.set()
        await settle(pilot)
        assert widget_text(app, "#world") == terminal(app, ("ls -la", LS.observation), ("ls", LS.observation))


async def test_at_80x24_the_footer_keeps_the_timeline_and_help_keys_and_offers_escape_during_a_turn(tmp_path):
    backend = GatedBackend(scripted("thinking_then_tags"))
    app = session_app(tmp_path, backend)
    async with app.run_test(size=(80, 24)) as pilot:
        await session_opened(pilot)
        footer = await footer_with(app, "f2 Timeline")
        assert "f1 Help" in footer, footer
        await type_action(pilot, "ls -la", wait=False)
        await wait_for(backend.holding.is_set)
        await footer_with(app, "Cancel turn")  # the keys change as the turn starts (blank frames between)
        backend.gate.set()
        await settle(pilot)


async def test_a_cancelled_regenerate_keeps_the_turn_it_was_replacing(tmp_path):
    """Ctrl+R then Esc: the user meant "keep what I had". The old turn stays, on screen and in
    the file (no undo is written without the new turn)."""
    backend = GatedBackend(scripted("thinking_then_tags", "draft_tags_inside_thinking"))
    backend.gate.set()
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        kept = widget_text(app, "#world")
        labels = timeline_labels(app)
        backend.gate.clear()
        await pilot.press("ctrl+r")
        await wait_for(backend.holding.is_set)
        await pilot.press("escape")
        await wait_for(lambda: app.screen.busy == "")
        assert widget_text(app, "#world") == kept and timeline_labels(app) == labels
        assert [record.action for record in app.screen.branch] == ["ls -la"]
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert [turn.observation for turn in traj.current_branch()] == [answer("thinking_then_tags").observation]
