"""A terminal session exported as an asciinema recording: asciicast v2 as published
(docs.asciinema.org/manual/asciicast/v2), accepted by the real `asciinema` tool."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentworld_local.errors import InputError
from agentworld_local.examples import pick_example
from agentworld_local.trajectory import Header, TrajectoryWriter, TurnRecord
from agentworld_local.trajectory.asciicast import CLEAR_SCREEN, asciicast_text, to_asciicast
from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import assert_one_line_error, awl

ASCIINEMA = shutil.which("asciinema", path=str(Path(sys.executable).parent)) or shutil.which("asciinema")
#: What may reach the terminal that plays a recording: text, CR/LF/tab, and SGR colour.
_CONTROL = re.compile(r"\x1b\[[0-9;]*m|\x1b\[H\x1b\[2J|[\r\n\t]")


def demo():
    return read_trajectory(pick_example("terminal").path)


def check_v2(lines: list[str]) -> tuple[dict, list[list]]:
    """Check the published v2 rules; return the header and the events."""
    header = json.loads(lines[0])
    assert header["version"] == 2
    assert isinstance(header["width"], int) and header["width"] > 0
    assert isinstance(header["height"], int) and header["height"] > 0
    assert isinstance(header.get("timestamp", 0), int)
    assert all(isinstance(value, str) for value in header.get("env", {}).values())
    events = [json.loads(line) for line in lines[1:]]
    last = 0.0
    for event in events:
        assert isinstance(event, list) and len(event) == 3
        at, code, data = event
        assert isinstance(at, (int, float)) and at >= last
        assert code in ("o", "m") and isinstance(data, str)
        last = at
    assert header["duration"] >= last
    return header, events


def write_terminal(path: Path, *turns: tuple[str, str], initial: str = "user@box:~$ ") -> Path:
    with TrajectoryWriter.create(path, Header(domain="terminal", initial_state=initial)) as writer:
        parent = None
        for action, observation in turns:
            parent = writer.append(TurnRecord(action, observation, parent=parent,
                                              action_payload=[{"keystrokes": action + ("" if action.startswith("C-") else "\n")}])).id
    return path


def test_the_demo_is_a_valid_v2_recording_of_the_session():
    header, events = check_v2(to_asciicast(demo()))
    assert "hand-written example" in header["title"]
    output = "".join(data for _, code, data in events if code == "o")
    assert output.startswith("dev@laptop:~/todo-api$ ")  # the starting screen from the initial state
    assert "ls -la\r\ntotal 40\r\n" in output  # typed, then the predicted output
    assert "4 passed in 0.19s" in output
    assert [data for _, code, data in events if code == "m"][0] == "Turn 1: ls -la"


@pytest.mark.skipif(ASCIINEMA is None, reason="the asciinema tool is not installed")
def test_asciinema_cat_accepts_the_recording(tmp_path):
    cast = tmp_path / "demo.cast"
    cast.write_text(asciicast_text(demo()), encoding="utf-8")
    result = subprocess.run([ASCIINEMA, "cat", str(cast)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "dev@laptop:~/todo-api$ git status" in result.stdout
    assert "4 passed in 0.19s" in result.stdout


def test_awl_export_writes_a_cast_file_and_never_overwrites(tmp_path):
    out = tmp_path / "demo.cast"
    result = awl("export", str(pick_example("terminal").path), "--format", "asciicast", "--out", str(out), home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "asciinema play" in result.stderr
    check_v2(out.read_text(encoding="utf-8").splitlines())
    again = awl("export", str(pick_example("terminal").path), "--format", "asciicast", "--out", str(out), home=tmp_path)
    assert_one_line_error(again, "already exists")


def test_awl_export_refuses_a_session_that_is_not_a_terminal(tmp_path):
    out = tmp_path / "web.cast"
    result = awl("export", str(pick_example("web").path), "--format", "asciicast", "--out", str(out), home=tmp_path)
    assert_one_line_error(result, "web session", "terminal sessions only")
    assert not out.exists()


def test_control_keys_are_echoed_and_a_whole_screen_prediction_redraws(tmp_path):
    path = write_terminal(tmp_path / "s.jsonl",
                          ("sleep 100", ""),
                          ("C-c", "^C\nuser@box:~$ "),
                          ("clear", "user@box:~$ clear\nuser@box:~$ "))
    _, events = check_v2(to_asciicast(read_trajectory(path)))
    outputs = [data for _, code, data in events if code == "o"]
    assert "^C\r\n" in outputs
    assert outputs[-1].startswith(CLEAR_SCREEN)  # the screen repeats the command line: drawn anew
    assert not outputs[-3].startswith(CLEAR_SCREEN)  # turn 2 shows only what follows the key


def test_hostile_output_cannot_drive_the_players_terminal(tmp_path):
    hostile = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b[0m\x9b6n done\nuser@box:~$ "
    path = write_terminal(tmp_path / "s.jsonl", ("cat x", hostile))
    _, events = check_v2(to_asciicast(read_trajectory(path)))
    output = "".join(data for _, code, data in events if code == "o")
    assert "\x1b]" not in output and "\x07" not in output and "\x9b" not in output
    assert "\x1b[31mred\x1b[0m" in output  # colour survives


@given(st.text(max_size=200), st.text(max_size=40))
def test_any_text_gives_a_valid_recording_with_only_safe_controls(observation, action):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = write_terminal(Path(tmp) / "s.jsonl", (action or "ls", observation), initial="Screen:\n" + observation)
        _, events = check_v2(to_asciicast(read_trajectory(path)))
    for _, code, data in events:
        leftover = _CONTROL.sub("", data)
        assert not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in leftover), repr(data)


def test_a_non_terminal_session_is_refused_with_the_next_step():
    with pytest.raises(InputError) as caught:
        to_asciicast(read_trajectory(pick_example("android").path))
    assert "awl replay" in caught.value.hint
