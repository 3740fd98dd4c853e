"""`awl replay` through the real entry point, in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentworld_local.trajectory import SCHEMA_VERSION, Header, TrajectoryWriter, TurnRecord

from tests.cli.helpers import AwlInTmux

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_awl(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), PYTHONIOENCODING="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "agentworld_local.cli.main", *args],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, encoding="utf-8",
    )


def write_session(path: Path, hand_written: bool = False) -> None:
    with TrajectoryWriter.create(path, Header(domain="shell", task="look around", hand_written=hand_written)) as w:
        first = w.append(TurnRecord(action="ls -la", observation="total 8\nREADME.md"))
        w.append(TurnRecord(action="cat README.md", observation="# Hello", parent=first.id))


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("awl: error:"), result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_replay_plain(tmp_path):
    path = tmp_path / "s.jsonl"
    write_session(path, hand_written=True)
    result = run_awl("replay", str(path), "--plain")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.index("ls -la") < out.index("README.md") < out.index("cat README.md") < out.index("# Hello")
    assert "hand-written example, not model output" in out
    assert result.stderr == ""


def test_replay_one_turn(tmp_path):
    path = tmp_path / "s.jsonl"
    write_session(path)
    result = run_awl("replay", str(path), "--turn", "2")
    assert result.returncode == 0, result.stderr
    assert "cat README.md" in result.stdout and "ls -la" not in result.stdout


def test_replay_warns_about_interrupted_line(tmp_path):
    path = tmp_path / "s.jsonl"
    write_session(path)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"type": "turn", "id": 3, "act')
    result = run_awl("replay", str(path), "--plain")
    assert result.returncode == 0
    assert result.stderr.startswith("awl: warning: line 4 is incomplete")
    assert "# Hello" in result.stdout


def test_missing_file(tmp_path):
    assert_one_line_error(run_awl("replay", str(tmp_path / "nope.jsonl"), "--plain"), "does not exist")


def test_not_a_trajectory(tmp_path):
    path = tmp_path / "list.json"
    path.write_text("[1, 2, 3]\n")
    assert_one_line_error(run_awl("replay", str(path), "--plain"), "is not an awl trajectory")


def test_newer_version(tmp_path):
    path = tmp_path / "future.jsonl"
    path.write_text(json.dumps(Header().to_dict() | {"version": SCHEMA_VERSION + 1}) + "\n")
    assert_one_line_error(run_awl("replay", str(path)), "newer awl", "pip install -U agentworld-local")


def test_turn_out_of_range(tmp_path):
    path = tmp_path / "s.jsonl"
    write_session(path)
    assert_one_line_error(run_awl("replay", str(path), "--turn", "5"), "2 turns")
    assert_one_line_error(run_awl("replay", str(path), "--turn", "0"), "--turn counts from 1")
    assert_one_line_error(run_awl("replay", str(path), "--speed", "-1"), "--speed")


def test_help_has_an_example():
    result = run_awl("replay", "--help")
    assert result.returncode == 0 and "awl replay" in result.stdout and "--speed" in result.stdout


# --- in a real terminal (tmux) --------------------------------------------------------------


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux); the real-terminal check needs it")
def test_replay_opens_the_tui_in_a_real_terminal(tmp_path):
    with AwlInTmux("replay", "assets/examples/terminal-demo.jsonl", home=tmp_path, exited_marker="REPLAY-EXITED") as term:
        screen = term.wait_for("turn 0/5")
        assert "hand-written example, not model output" in screen, screen
        assert "turn 0/5" in screen and "paused" in screen, screen
        assert "dev@laptop:~/todo-api$" in screen, screen  # the initial state in the world view
        term.keys("Right")
        screen = term.wait_for("turn 1/5")
        assert "requirements.txt" in screen, screen  # turn 1's `ls -la` listing
        term.keys("q")
        screen = term.wait_for("REPLAY-EXITED-")
        assert "REPLAY-EXITED-0" in screen, screen
