"""Terminal actions: friendly commands, control keys, raw JSON, clear errors."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentworld_local.domains import get_domain
from agentworld_local.domains.terminal import keystrokes_text
from agentworld_local.errors import ActionError, InputError


def short_id(value):
    """Readable test ids for huge hostile inputs."""
    if isinstance(value, str) and len(value) > 40:
        return f"{value[:20]!r}...({len(value):,} chars)"
    return None


@pytest.fixture
def terminal():
    return get_domain("terminal")


def test_plain_command_becomes_keystrokes(terminal):
    action = terminal.parse_action("ls -la")
    assert action.payload == [{"keystrokes": "ls -la\n", "duration": 1.0}]
    # As the official template writes actions: a fenced, indented JSON array.
    assert action.prompt_text == '```json\n[\n  {\n    "keystrokes": "ls -la\\n",\n    "duration": 1.0\n  }\n]\n```'


def test_an_empty_array_is_a_legal_action_that_ends_the_task(terminal):
    """Official contract: `[]` declares the task finished (it was refused before)."""
    action = terminal.parse_action("[]")
    assert action.payload == []
    assert action.prompt_text == "```json\n[]\n```"
    assert terminal.parse_action("```json\n[]\n```").payload == []


def test_a_wait_is_empty_keystrokes_with_a_duration(terminal):
    assert terminal.parse_action('[{"keystrokes": "", "duration": 5}]').payload == [{"keystrokes": "", "duration": 5.0}]


def test_control_keys(terminal):
    assert terminal.parse_action("C-c").payload == [{"keystrokes": "C-c", "duration": 0.5}]
    assert [k["keystrokes"] for k in terminal.parse_action("C-c C-d").payload] == ["C-c", "C-d"]


def test_raw_json_action(terminal):
    action = terminal.parse_action('[{"keystrokes": "vim a.txt\\n", "duration": 2}, {"keystrokes": ":q\\n"}]')
    assert action.payload == [{"keystrokes": "vim a.txt\n", "duration": 2.0}, {"keystrokes": ":q\n", "duration": 1.0}]
    assert terminal.parse_action('{"keystrokes": "pwd\\n"}').payload == [{"keystrokes": "pwd\n", "duration": 1.0}]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ('[{"keystrokes": "ls"', "Invalid JSON action"),
        ('[{"keys": "ls"}]', '"keystrokes"'),
        ("[1, 2]", 'needs a string "keystrokes"'),
        ('[{"keystrokes": "ls", "duration": -1}]', "duration"),
        ("   ", "empty"),
    ],
)
def test_invalid_actions_say_what_is_accepted(terminal, text, fragment):
    with pytest.raises(ActionError) as caught:
        terminal.parse_action(text)
    assert fragment in caught.value.message
    assert "Accepted forms" in caught.value.one_line()


def test_unknown_domain_suggests_a_close_name():
    with pytest.raises(InputError) as caught:
        get_domain("termnal")
    assert "terminal" in caught.value.one_line()


@pytest.mark.parametrize(
    "command",
    ["[ -f x ] && echo yes", "[[ -d /tmp ]] && ls", "{ echo a; } > f", '[ "$x" = y ] || exit 1', "[[[ odd"],
)
def test_shell_commands_starting_with_a_bracket_or_brace_are_commands(terminal, command):
    """Issue 7 defect 6: text that is not a JSON action is a shell command, typed as written."""
    assert terminal.parse_action(command).payload == [{"keystrokes": command + "\n", "duration": 1.0}]


def test_the_official_fenced_keystroke_array_is_accepted(terminal):
    fenced = '```json\n[{"keystrokes": "cd /tmp\\n", "duration": 0.5}]\n```'
    assert terminal.parse_action(fenced).payload == [{"keystrokes": "cd /tmp\n", "duration": 0.5}]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("```json\n```", "code block is empty"),
        ('[{"keystrokes": "ls", "duration": ' + "9" * 5000 + "}]", "more than 4,300 digits"),
        ("[{" * 100_000, "Invalid JSON action"),
        ('[{"keystrokes": "ls", "duration": 1e999}]', '"duration"'),
        ('[{"keystrokes": "ls", "duration": NaN}]', '"duration"'),
    ],
    ids=short_id,
)
def test_hostile_json_actions_are_clear_errors(terminal, text, fragment):
    with pytest.raises(ActionError) as caught:
        terminal.parse_action(text)
    assert fragment in caught.value.message


@given(st.lists(st.builds(lambda keys, seconds: {"keystrokes": keys, "duration": seconds},
                          st.text(), st.floats(min_value=0, max_value=1e6)), max_size=4))
def test_the_action_is_written_as_json_writes_it_indented(payload):
    """keystrokes_text writes the array itself (json's indented writer is pure Python): the
    same text, byte for byte, for any keystrokes and duration a parsed action can hold."""
    expected = "```json\n" + json.dumps(payload, ensure_ascii=False, indent=2) + "\n```"
    assert keystrokes_text(payload) == expected
