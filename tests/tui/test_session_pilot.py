"""Whole sessions driven through the TUI with the scripted backend (realistic answers):
type, stream, undo, regenerate, cancel, control, errors; the screen, the timeline and the
trajectory file are checked after each step."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from textual.widgets import Collapsible

from agentworld_local.testing.answers import answer
from agentworld_local.engine.scripted import ScriptedAnswer
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.tui.dialogs import ErrorDialog
from agentworld_local.tui.session_screen import SessionScreen
from agentworld_local.tui.widgets import Timeline

from tests.tui.helpers import SIZE, GatedBackend, screen_text, scripted, session_app, settle, tree_labels, type_action, wait_for, widget_text

LS = answer("thinking_then_tags")

#: Every async test runs on anyio's plugin. Marked at collection (not in a hook), so the
#: items keep their ids and the snapshot report can find them.
pytestmark = pytest.mark.anyio


def timeline_labels(app) -> list[str]:
    return tree_labels(app.screen.query_one(Timeline))


async def test_a_turn_streams_into_the_world_view_once_and_is_saved(tmp_path):
    app = session_app(tmp_path, scripted("thinking_then_tags"))
    async with app.run_test(size=SIZE) as pilot:
        await type_action(pilot, "ls -la")
        assert isinstance(app.screen, SessionScreen)
        world = widget_text(app, "#world")
        assert world == LS.observation
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
        await type_action(pilot, "ls -la")
        await type_action(pilot, "C-c")
    turns = read_trajectory(tmp_path / "session.jsonl").turns
    assert turns[0].action_payload == [{"keystrokes": "ls -la\n", "duration": turns[0].action_payload[0]["duration"]}]
    assert turns[1].action_payload[0]["keystrokes"] == "C-c"


async def test_undo_keeps_the_turn_in_the_file_and_the_timeline_shows_the_branch(tmp_path):
    backend = scripted("thinking_then_tags", "marker_form", "no_tags")
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await type_action(pilot, "ls -la")
        await type_action(pilot, "pwd")
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert widget_text(app, "#world") == LS.observation  # back to turn 1's screen
        assert any("pwd" in label and "undone" in label for label in timeline_labels(app))
        await type_action(pilot, "gti status")
        labels = timeline_labels(app)
        assert len(labels) == 3
        assert [label for label in labels if "undone" in label] == [next(l for l in labels if "pwd" in l)]
        assert widget_text(app, "#world") == answer("no_tags").observation
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert [record.action for record in traj.turns] == ["ls -la", "pwd", "gti status"]
    assert [record.action for record in traj.current_branch()] == ["ls -la", "gti status"]


async def test_undo_typed_at_the_action_line(tmp_path):
    app = session_app(tmp_path, scripted("thinking_then_tags"))
    async with app.run_test(size=SIZE) as pilot:
        await type_action(pilot, "ls -la")
        await type_action(pilot, ":undo")
        assert widget_text(app, "#world") == app.screen.session.world.initial_state
    assert read_trajectory(tmp_path / "session.jsonl").current_branch() == []


async def test_regenerate_replaces_the_last_turn_with_a_new_sample(tmp_path):
    backend = scripted("thinking_then_tags", "draft_tags_inside_thinking")
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await type_action(pilot, "ls -la")
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert widget_text(app, "#world") == answer("draft_tags_inside_thinking").observation
        assert any("↻1" in label for label in timeline_labels(app))
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert len(traj.turns) == 2
    assert traj.current_branch()[0].extra.get("attempt") == 1
    assert traj.current_branch()[0].action == "ls -la"


async def test_the_timeline_follows_turns_undo_and_regenerate_without_rereading_the_file(tmp_path, monkeypatch):
    import agentworld_local.tui.session_screen as session_screen

    reads: list[object] = []

    def counted(path):
        reads.append(path)
        return read_trajectory(path)

    monkeypatch.setattr(session_screen, "read_trajectory", counted)
    backend = scripted("thinking_then_tags", "no_tags", "marker_form", "draft_tags_inside_thinking")
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await type_action(pilot, "ls -la")
        await type_action(pilot, "gti status")
        await pilot.press("ctrl+z")
        await settle(pilot)
        await type_action(pilot, "pwd")
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert len(reads) == 1  # once, when the screen opened; a large file is not read after each turn
        kept_up = timeline_labels(app)
        app.screen._refresh_timeline(reread=True)  # what the file says
        assert kept_up == timeline_labels(app)
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert [record.action for record in traj.turns] == ["ls -la", "gti status", "pwd", "pwd"]
    assert [record.action for record in traj.current_branch()] == ["ls -la", "pwd"]
    assert sum("undone" in label for label in kept_up) == 2 and any("↻1" in label for label in kept_up)


async def test_cancel_stops_a_streaming_turn_and_saves_nothing(tmp_path):
    backend = GatedBackend(scripted("thinking_then_tags"))
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
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
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert traj.turns == []


async def test_keys_keep_working_while_a_turn_streams(tmp_path):
    backend = GatedBackend(scripted("thinking_then_tags"))
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await type_action(pilot, "ls -la", wait=False)
        await wait_for(backend.holding.is_set)
        await pilot.press("ctrl+g")  # fold the thinking pane mid-stream
        assert app.screen.query_one("#thinking-box", Collapsible).collapsed
        await pilot.press("p", "w", "d")  # the next action can be typed meanwhile
        assert app.screen.query_one("#action").value == "pwd"
        assert app.screen.busy == "turn"
        await pilot.press("enter")  # but not sent while the turn runs
        assert "A turn is running" in widget_text(app, "#action-error")
        backend.gate.set()
        await settle(pilot)
        assert widget_text(app, "#world") == LS.observation
    assert len(read_trajectory(tmp_path / "session.jsonl").turns) == 1


async def test_a_parse_error_shows_inline_and_leaves_the_session_untouched(tmp_path):
    backend = scripted("thinking_then_tags")
    app = session_app(tmp_path, backend, domain="web")
    async with app.run_test(size=SIZE) as pilot:
        await type_action(pilot, "frobnicate 12")
        error = widget_text(app, "#action-error")
        assert "frobnicate" in error
        assert app.screen.query_one("#action-error").display
        assert not isinstance(app.screen, ErrorDialog)
    assert backend.calls == 0
    assert read_trajectory(tmp_path / "session.jsonl").turns == []


async def test_history_recalls_earlier_actions_with_up_and_down(tmp_path):
    app = session_app(tmp_path, scripted("thinking_then_tags", "marker_form"))
    async with app.run_test(size=SIZE) as pilot:
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
        await type_action(pilot, ":control the disk is full")
        await type_action(pilot, "ls -la")
    assert "the disk is full" in backend.last_messages[-1]["content"]
    assert read_trajectory(tmp_path / "session.jsonl").turns[0].controls_added == ["the disk is full"]


async def test_a_generation_error_becomes_a_dialog_and_the_file_stays_intact(tmp_path):
    # A context far too small for the prompt: the backend refuses with an AwlError.
    backend = scripted("thinking_then_tags", "marker_form")
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
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
        assert widget_text(app, "#world") == LS.observation
        assert app.screen.busy == ""
    traj = read_trajectory(tmp_path / "session.jsonl")
    assert [record.action for record in traj.current_branch()] == ["ls -la"]


async def test_regenerate_with_no_turn_is_a_dialog_not_a_crash(tmp_path):
    app = session_app(tmp_path, scripted("thinking_then_tags"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, ErrorDialog)
        assert "no turn to regenerate" in app.screen.message


async def test_the_status_bar_names_model_context_thinking_and_turn(tmp_path):
    app = session_app(tmp_path, scripted("thinking_then_tags"), think="256")
    async with app.run_test(size=SIZE) as pilot:
        await type_action(pilot, "ls -la")
        status = widget_text(app, "#status")
    assert "model scripted" in status
    assert "CPU" in status
    assert "/16,384" in status
    assert "think 256" in status
    assert "turn 1" in status
    assert "session.jsonl" in status


async def test_help_and_the_command_palette_list_the_session_actions(tmp_path):
    app = session_app(tmp_path, scripted("thinking_then_tags"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f1")
        await pilot.pause()
        text = screen_text(app)
        for words in ("Undo", "Regenerate", "Fork at turn", "Cancel turn", "Control", "Save as", "Open",
                      "Open page in browser"):
            assert words in text
        await pilot.press("escape")
        await pilot.pause()
        commands = [command.title for command in app.get_system_commands(app.screen)]
        assert {"Undo", "Regenerate", "Fork at turn", "Cancel turn", "Save as", "Open", "Open page in browser"} <= set(commands)


async def fork_via_dialog(pilot, key: str, out) -> None:
    await pilot.press(key)
    await pilot.pause()
    dialog_input = pilot.app.screen.query_one("#prompt-input")
    dialog_input.value = str(out)
    await pilot.press("enter")
    await wait_for(lambda: isinstance(pilot.app.screen, SessionScreen) and pilot.app.screen.session.path == out)


async def test_fork_from_the_selected_turn_goes_on_in_a_new_file(tmp_path):
    backend = scripted("thinking_then_tags", "marker_form", "no_tags")
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await type_action(pilot, "ls -la")
        await type_action(pilot, "pwd")
        timeline = app.screen.query_one(Timeline)
        timeline.move_cursor(timeline.root.children[0])  # turn 1
        await fork_via_dialog(pilot, "ctrl+f", tmp_path / "fork.jsonl")
        assert widget_text(app, "#world") == LS.observation
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
        await type_action(pilot, "ls -la")
        await fork_via_dialog(pilot, "ctrl+s", tmp_path / "copy.jsonl")
        await type_action(pilot, "pwd")
    assert [r.action for r in read_trajectory(tmp_path / "copy.jsonl").current_branch()] == ["ls -la", "pwd"]
    assert [r.action for r in read_trajectory(tmp_path / "session.jsonl").current_branch()] == ["ls -la"]


async def test_fork_into_an_existing_file_is_refused_and_the_session_goes_on(tmp_path):
    (tmp_path / "taken.jsonl").write_text("keep me\n")
    app = session_app(tmp_path, scripted("thinking_then_tags"))
    async with app.run_test(size=SIZE) as pilot:
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
        assert app.screen.session.path == tmp_path / "session.jsonl"
    assert (tmp_path / "taken.jsonl").read_text() == "keep me\n"


async def test_open_a_saved_session_goes_on_in_its_file(tmp_path):
    first = session_app(tmp_path, scripted("thinking_then_tags"), out=tmp_path / "first.jsonl")
    async with first.run_test(size=SIZE) as pilot:
        await type_action(pilot, "ls -la")
    app = session_app(tmp_path, scripted("marker_form"), out=tmp_path / "second.jsonl")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+o")
        await pilot.pause()
        app.screen.query_one("#prompt-input").value = str(tmp_path / "first.jsonl")
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, SessionScreen) and app.screen.session.path.name == "first.jsonl")
        assert widget_text(app, "#world") == LS.observation
        await type_action(pilot, "pwd")
    assert [r.action for r in read_trajectory(tmp_path / "first.jsonl").current_branch()] == ["ls -la", "pwd"]
    assert read_trajectory(tmp_path / "second.jsonl").turns == []


async def test_choosing_a_web_element_offers_click_and_fill(tmp_path):
    backend = scripted("thinking_then_tags")
    app = session_app(tmp_path, backend, domain="web")
    async with app.run_test(size=SIZE) as pilot:
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
        await pilot.press("ctrl+b")
        await pilot.pause()
        assert isinstance(app.screen, SessionScreen)
    assert opened == []


async def test_quitting_while_a_turn_streams_cancels_it_and_leaves_the_file_whole(tmp_path):
    backend = GatedBackend(scripted("thinking_then_tags", "marker_form"))
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
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
