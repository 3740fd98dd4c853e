"""The world view per domain, the file panel (a probe on a throwaway fork), and the message
coalescing that keeps a fast model from flooding the screen."""

from __future__ import annotations

import pytest

import json

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from agentworld_local.engine import events
from agentworld_local.domains import get_domain
from agentworld_local.engine.scripted import ScriptedAnswer
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.tui import messages
from agentworld_local.tui.render import render_state
from agentworld_local.tui.widgets import FilePanel

from tests.tui.helpers import SIZE, session_opened, scripted, session_app, settle, tree_labels, type_action

#: Every async test runs on anyio's plugin. Marked at collection (not in a hook), so the
#: items keep their ids and the snapshot report can find them.
pytestmark = pytest.mark.anyio


def shown(renderable) -> str:
    console = Console(width=100, record=True, color_system=None, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def test_the_terminal_view_keeps_colour_and_shows_other_escapes_harmlessly():
    text = render_state("terminal", "text", "\x1b[01;34msrc\x1b[0m  README.md\n\x1b]0;evil\x07\x1b[2Jdone\x00")
    assert isinstance(text, Text)
    assert text.plain.startswith("src  README.md")
    assert any(span.style.color is not None and span.style.color.number == 4 for span in text.spans)  # blue
    assert "\x1b" not in text.plain and "\x07" not in text.plain and "\x00" not in text.plain
    assert "\\x1b]0;evil\\x07" in text.plain


@given(st.lists(st.sampled_from(["\x1b[", "\x1b]0;", "m", "\ud800", "<", ">", "{", '"', "node ", "\x07", "\r", "\t"])
                         | st.characters(min_codepoint=0, max_codepoint=0x2FF)).map("".join))
def test_no_control_byte_of_model_output_reaches_the_screen(text):
    for domain, lexer in (("terminal", "text"), ("web", "text"), ("web", "html"), ("android", "xml"), ("os", "text"),
                          ("mcp", "json"), ("search", "markdown")):
        out = shown(render_state(domain, lexer, text))
        assert not any(ord(char) < 32 and char not in "\n" for char in out), (domain, out)


def test_the_web_page_shows_element_ids_from_html_and_from_the_accessibility_tree():
    html = get_domain("web", state_format="html").initial_state()
    page = shown(render_state("web", "html", html))
    assert "[24] Search" in page
    assert "[21] Trailhead Outfitters" in page
    assert "<a" not in page
    tree = render_state("web", "text", get_domain("web").initial_state())
    assert "[24] button 'Search'" in tree.plain
    assert any("bold" in str(span.style) for span in tree.spans)


def test_android_shows_its_ui_tree():
    view = shown(render_state("android", "xml", get_domain("android").initial_state()))
    assert "TextView “Settings” #homepage_title" in view
    assert "<node" not in view


def test_tool_results_are_pretty_printed_json():
    result = '{"city": "Paris", "temperature": 14, "unit": "°C", "forecast": [{"day": "Mon", "high": 16}]}'
    view = shown(render_state("mcp", "json", result))
    assert json.loads(view) == json.loads(result)
    assert '\n  "forecast": [' in view


def test_stream_messages_of_a_turn_replace_each_other_and_nothing_else():
    older = messages.StreamUpdated("s", 1, "a", "", "", 1, 0.1)
    newer = messages.StreamUpdated("s", 1, "ab", "x", "", 2, 0.2)
    assert older.can_replace(newer) and newer.can_replace(older)
    assert not older.can_replace(messages.StreamUpdated("s", 2, "", "", "", 1, 0.1))
    assert not older.can_replace(messages.StreamUpdated("other", 1, "a", "", "", 1, 0.1))
    saved = messages.RunnerEvent("s", events.TurnCancelled(1))
    assert not older.can_replace(saved) and not saved.can_replace(older)
    # Load progress: a newer fraction replaces an older one; no other runner event merges.
    first, later = (messages.RunnerEvent(None, events.LoadProgress("m", f)) for f in (0.2, 0.4))
    assert later.can_replace(first) and not later.can_replace(saved) and not saved.can_replace(first)


def test_the_bridge_merges_a_fast_stream_and_passes_every_other_event_in_order():
    """The runner's events reach the UI thread as messages: a model streaming thousands of
    tokens a second becomes at most one StreamUpdated a frame (each with the whole text so
    far), and nothing else is merged, dropped or reordered."""
    posted = []
    bridge = messages.FrameEventPoster(posted.append)
    bridge("s", events.TurnStarted(1, "ls"))
    for n in range(2000):
        bridge("s", events.ThinkingDelta(1, "t"))
    for n in range(2000):
        bridge("s", events.ObservationDelta(1, "o"))
    bridge("s", events.ControlAdded("x", 1))
    kinds = [type(message).__name__ for message in posted]
    assert kinds[0] == "RunnerEvent" and kinds[-1] == "RunnerEvent" and kinds[-2] == "StreamUpdated"
    assert kinds.count("StreamUpdated") < 200  # merged (2,000 tokens in far less than 200 frames)
    last = posted[-2]
    assert (last.thinking, last.observation, last.chunks) == ("t" * 2000, "o" * 2000, 2000)
    bridge("s", events.ObservationDelta(1, "p"))
    bridge.flush()  # the app's timer: the last text before a pause is shown
    assert posted[-1].observation.endswith("op")


LISTING = "/\n/app/\n/app/README.md\n/app/src/\n/app/src/main.py\n"
LISTING_AFTER = LISTING + "/app/notes.txt\n"


def listing_answer(listing: str) -> ScriptedAnswer:
    return ScriptedAnswer(f"<think>\nfind lists every path.\n</think>\n<predicted_observation>\n{listing}</predicted_observation>")


async def test_the_file_panel_lists_files_on_a_throwaway_fork_and_marks_new_ones(tmp_path):
    backend = scripted(listing_answer(LISTING), "thinking_then_tags", listing_answer(LISTING_AFTER))
    app = session_app(tmp_path, backend)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await pilot.press("ctrl+t")
        await settle(pilot)
        panel = app.screen.query_one(FilePanel)
        labels = tree_labels(panel)
        assert "app/" in labels and "README.md" in labels and "main.py" in labels
        assert not any(label.startswith("+") for label in labels)
        await type_action(pilot, "touch notes.txt")
        await pilot.press("ctrl+t")
        await settle(pilot)
        labels = tree_labels(panel)
        assert "+ notes.txt" in labels
        assert "README.md" in labels
    traj = read_trajectory(tmp_path / "session.jsonl")
    # The probes never entered the trajectory: only the typed action is there.
    assert [record.action for record in traj.turns] == ["touch notes.txt"]


async def test_the_file_panel_can_refresh_after_each_turn(tmp_path):
    backend = scripted("thinking_then_tags", listing_answer(LISTING))
    app = session_app(tmp_path, backend, files_each_turn=True)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await type_action(pilot, "ls -la")
        await pilot.pause()
        await settle(pilot)
        assert "README.md" in tree_labels(app.screen.query_one(FilePanel))
    assert len(read_trajectory(tmp_path / "session.jsonl").turns) == 1


async def test_domains_without_a_file_system_have_no_file_panel(tmp_path):
    app = session_app(tmp_path, scripted("mcp_tool_result"), domain="mcp")
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        assert not app.screen.query(FilePanel)
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert app.screen.busy == ""


def test_the_status_bar_names_the_device_as_the_user_knows_it():
    from agentworld_local.tui.widgets import device_label

    assert device_label(-1) == "GPU all"  # llama.cpp's "every layer"
    assert device_label(20) == "GPU 20 layers"
    assert device_label(0) == "CPU" and device_label(None) == "CPU"
    # A model on a server runs there, not on this CPU: the status bar names the server.
    assert device_label(0, "http://127.0.0.1:8000/v1") == "server http://127.0.0.1:8000/v1"


def test_the_terminal_view_is_a_scrollback_with_each_command_after_its_prompt():
    from agentworld_local.domains import get_domain
    from agentworld_local.views.terminal_scrollback import scrollback

    terminal = get_domain("terminal")
    ls, interrupt = terminal.parse_action("ls"), terminal.parse_action("C-c")
    shown = scrollback("Welcome\nme@box:~$ ", [(ls.payload, "notes.txt\nme@box:~$ "),
                                              (interrupt.payload, "\nme@box:~$ ")])
    assert shown == "Welcome\nme@box:~$ ls\nnotes.txt\nme@box:~$ ^C\n\nme@box:~$ "


def test_a_whole_screen_from_the_prompt_on_is_not_doubled_and_ctrl_l_clears():
    from agentworld_local.domains import get_domain
    from agentworld_local.views.terminal_scrollback import scrollback

    terminal = get_domain("terminal")
    pwd, clear = terminal.parse_action("pwd"), terminal.parse_action("C-l")
    shown = scrollback("me@box:~$ ", [(pwd.payload, "me@box:~$ pwd\n/home/me\nme@box:~$ ")])
    assert shown == "me@box:~$ pwd\n/home/me\nme@box:~$ "
    assert scrollback("me@box:~$ ", [(pwd.payload, "/home/me\nme@box:~$ "), (clear.payload, "me@box:~$ ")]) == "me@box:~$ "


def test_android_shows_where_to_tap_each_element_and_numbers_them_once():
    """`tap X Y` can be typed from the screen (the centre of each element's bounds), and the
    numbers no longer repeat (the hierarchy's `index` starts at 0 under every parent)."""
    import re

    view = shown(render_state("android", "xml", get_domain("android").initial_state()))
    assert "TextView “Apps” #title ⏵tap 245 1170" in view  # bounds [189,1141][301,1199]
    assert "TextView “Settings” #homepage_title at 540 349" in view  # not clickable: where it is
    numbers = re.findall(r"\[(\d+)\]$", view, flags=re.MULTILINE)
    assert len(numbers) == len(view.strip().splitlines()) and len(set(numbers)) == len(numbers)
    assert get_domain("android").parse_action("tap 245 1170").payload == {"action_type": "click", "x": 245, "y": 1170}
