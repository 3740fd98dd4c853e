"""The script language: only `:undo`, `:regenerate` and `:control TEXT` are session commands;
any other line (`: > build.log` included) is an action for the world."""

from __future__ import annotations

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.errors import InputError
from agentworld_local.session.script import CONTROL, REGENERATE, UNDO, parse_script_line


@pytest.fixture
def terminal():
    return get_domain("terminal")


@pytest.mark.parametrize("text", [": > build.log", ":", ": ; echo done", ":q", ":(){ :|:& };:", ":wq"])
def test_a_shell_line_that_starts_with_a_colon_is_an_action(terminal, text):
    line = parse_script_line(terminal, text, 3, "s.txt")
    assert line is not None and line.command == "" and line.action is not None
    assert line.action.payload == [{"keystrokes": text + "\n", "duration": 1.0}]


@pytest.mark.parametrize(("text", "command", "argument"), [
    (":undo", UNDO, ""), ("  :regenerate  ", REGENERATE, ""), (":control the disk is full", CONTROL, "the disk is full"),
])
def test_our_commands_are_commands(terminal, text, command, argument):
    line = parse_script_line(terminal, text, 1, "s.txt")
    assert line is not None and line.action is None and (line.command, line.text) == (command, argument)


@pytest.mark.parametrize(("text", "said"), [
    (":undoo", "did you mean `:undo`"), (":regenerat", "did you mean `:regenerate`"),
    (":undo 2", "`:undo` takes no text"), (":control", "`:control` needs a text"),
])
def test_a_near_miss_of_a_command_is_refused_with_its_line(terminal, text, said):
    with pytest.raises(InputError) as caught:
        parse_script_line(terminal, text, 7, "s.txt")
    assert caught.value.message.startswith("s.txt:7: ") and said in caught.value.message
