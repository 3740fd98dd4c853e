"""`awl play` and `awl` alone: mistakes refused in one line before the screen opens; no
terminal, no TUI; and once in a real terminal (tmux): type an action, see the observation,
quit, and find the turn in the file."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from agentworld_local.testing.answers import answer
from agentworld_local.trajectory.reader import read_trajectory

from tests.cli.helpers import REPO, assert_one_line_error, awl


def test_play_without_a_terminal_is_refused_in_one_line(tmp_path):
    result = awl("play", home=tmp_path, stdin="")
    assert_one_line_error(result, "needs a terminal", "awl run")


@pytest.mark.parametrize("args, fragment", [
    (["--think", "lots"], "lots"),
    (["--scenario", "no-such-world"], "no-such-world"),
    (["--domain", "spaceship"], "spaceship"),
    (["--ctx", "10"], "--ctx 10"),
])
def test_play_refuses_bad_options_before_the_screen_opens(tmp_path, args, fragment):
    assert_one_line_error(awl("play", *args, home=tmp_path, stdin=""), fragment)


def test_play_never_overwrites_a_file(tmp_path):
    taken = tmp_path / "taken.jsonl"
    taken.write_text("keep\n")
    assert_one_line_error(awl("play", "--out", str(taken), home=tmp_path, stdin=""), "already exists")
    assert taken.read_text() == "keep\n"


def test_awl_alone_in_a_pipe_prints_the_help(tmp_path):
    result = awl(home=tmp_path, stdin="")
    assert "Usage: awl" in result.stdout and "play" in result.stdout  # the help, as before: no screen
    assert "Traceback" not in result.stderr


def _wait_for(read, wanted: str, patience_s: float = 30.0) -> str:
    """Poll the pane until `wanted` shows (a patience, not a timing assertion)."""
    deadline = time.monotonic() + patience_s
    screen = read()
    while wanted not in screen and time.monotonic() < deadline:
        time.sleep(0.2)
        screen = read()
    return screen


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed; the real-terminal check needs it")
def test_play_in_a_real_terminal(tmp_path):
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"version": 1, "answers": [{"raw": answer("thinking_then_tags").raw}]}))
    out = tmp_path / "played.jsonl"
    socket = f"awl-play-{uuid.uuid4().hex[:8]}"  # a private tmux server: nothing else is touched
    tmux = ["tmux", "-L", socket]
    command = " ".join([
        "env", "-u", "COLUMNS", "-u", "LINES", f"PYTHONPATH={shlex.quote(str(REPO))}",
        f"AWL_HOME={shlex.quote(str(tmp_path))}", "TERM=xterm-256color",
        shlex.quote(sys.executable), "-m", "agentworld_local.cli.main", "play", "-m", shlex.quote(f"scripted:{answers}"),
        "--out", shlex.quote(str(out)), ";", "echo", "PLAY-EXITED-$?", ";", "sleep", "30",
    ])
    subprocess.run([*tmux, "new-session", "-d", "-x", "120", "-y", "40", "-c", str(REPO), command], check=True, timeout=30)

    def read() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True, timeout=30).stdout

    try:
        screen = _wait_for(read, "Timeline")
        assert "Linux terminal" in screen, screen
        subprocess.run([*tmux, "send-keys", "-l", "ls -la"], check=True, timeout=30)
        subprocess.run([*tmux, "send-keys", "Enter"], check=True, timeout=30)
        screen = _wait_for(read, "drwxr-xr-x 2 root root 4096 Mar  4 09:12 src")
        assert screen.count("drwxr-xr-x 2 root root 4096 Mar  4 09:12 src") == 1, screen
        assert "turn 1" in screen, screen
        subprocess.run([*tmux, "send-keys", "C-q"], check=True, timeout=30)
        screen = _wait_for(read, "PLAY-EXITED-")
        assert "PLAY-EXITED-0" in screen, screen
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=30)
    assert [record.action for record in read_trajectory(out).turns] == ["ls -la"]
