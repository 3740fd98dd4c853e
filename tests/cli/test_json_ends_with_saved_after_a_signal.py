"""`awl run --json` interrupted by a real SIGINT or SIGTERM while a turn (or a `:regenerate`)
runs: the JSON stream always ends with its `saved` event (README), also when a second signal
comes while the session closes; a session stopped in its first turn kept no file and ends with
`discarded`. A real subprocess, a slow scripted model, and the signal sent once stdout says
the turn began (write_answer_file's format, with a quick first answer)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentworld_local.engine.scripted import ANSWER_FILE_VERSION
from agentworld_local.testing.answers import answer, write_answer_file
from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import REPO, awl_env

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def slow_model(tmp_path: Path, delay_s: float = 0.05) -> Path:
    """The first answer in one piece (turn 1 is quick), the later ones slow (seconds per turn);
    `delay_s` after each piece (the scripted model sleeps it whole, even when cancelled)."""
    raw = answer("thinking_then_tags").raw
    answers = [{"raw": raw, "chunk": len(raw)}] + [{"raw": raw, "chunk": 2}] * 3
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"version": ANSWER_FILE_VERSION, "answers": answers, "delay_s": delay_s}), encoding="utf-8")
    return path


def run_until(tmp_path: Path, script: str, *, starts: int, signals: tuple[int, ...], delay_s: float = 0.05,
              between_s: float = 0.0) -> tuple[list[dict], str, int]:
    """`awl run SCRIPT --json` on a slow scripted model; after the `starts`-th turn began
    (its `action` event), send `signals`, `between_s` apart. (events on stdout, stderr, exit code)."""
    model = slow_model(tmp_path, delay_s)
    actions = tmp_path / "actions.txt"
    actions.write_text(script, encoding="utf-8")
    command = [sys.executable, "-m", "agentworld_local.cli.main", "run", str(actions), "-m", f"scripted:{model}",
               "-o", str(tmp_path / "s.jsonl"), "--json"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=awl_env(tmp_path), cwd=REPO)
    lines: list[str] = []
    begun = 0
    assert process.stdout is not None
    try:
        for line in process.stdout:
            lines.append(line)
            if json.loads(line)["event"] == "action":
                begun += 1
                if begun == starts:
                    for index, signum in enumerate(signals):
                        if index:
                            time.sleep(between_s)
                        process.send_signal(signum)
        _, stderr = process.communicate()
    finally:
        if process.poll() is None:
            process.kill()
    return [json.loads(line) for line in lines], stderr, process.returncode


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_a_turn_ends_the_stream_with_saved(tmp_path, signum, code):
    said, stderr, returncode = run_until(tmp_path, "ls\npwd\nwhoami\n", starts=2, signals=(signum,))
    assert returncode == code, stderr
    assert said[-1] == {"event": "saved", "path": str(tmp_path / "s.jsonl"), "turns": 1}
    assert [event["event"] for event in said].count("turn_done") == 1
    assert len(read_trajectory(tmp_path / "s.jsonl").current_branch()) == 1


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_a_regenerate_ends_the_stream_with_saved_and_keeps_the_turn(tmp_path, signum, code):
    said, stderr, returncode = run_until(tmp_path, "ls\n:regenerate\n", starts=2, signals=(signum,))
    assert returncode == code, stderr
    assert [event["event"] for event in said].count("regenerate") == 1
    assert said[-1] == {"event": "saved", "path": str(tmp_path / "s.jsonl"), "turns": 1}


@pytest.mark.parametrize("signals", [(signal.SIGINT, signal.SIGTERM), (signal.SIGINT, signal.SIGINT),
                                     (signal.SIGTERM, signal.SIGTERM)])
def test_a_second_signal_while_the_session_closes_still_lets_saved_out(tmp_path, signals):
    """A process manager's SIGTERM after a Ctrl+C, or Ctrl+C pressed twice: it used to cut the
    close short with a traceback and no `saved`."""
    said, stderr, returncode = run_until(tmp_path, "ls\npwd\nwhoami\n", starts=2, signals=signals)
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert said[-1] == {"event": "saved", "path": str(tmp_path / "s.jsonl"), "turns": 1}
    # The first signal's code; a later one that lands as Python itself exits may end it by its own default.
    assert returncode in (130, 143, -signal.SIGTERM, -signal.SIGINT), stderr
    assert "1 completed turn is saved in" in stderr


def test_a_sigterm_while_the_close_waits_for_the_turn_is_noted_and_saved_still_comes(tmp_path):
    """The close waits for the turn to stop: here the model sleeps 2 s after each piece (the first
    piece follows the turn's `action` at once), so a SIGTERM 0.3 s after the Ctrl+C lands inside the close.
    It is noted (the exit stays Ctrl+C's 130) and the close goes on to `saved`."""
    said, stderr, returncode = run_until(tmp_path, "ls\npwd\n", starts=2, signals=(signal.SIGINT, signal.SIGTERM),
                                         delay_s=2.0, between_s=0.3)
    assert "Traceback" not in stderr and returncode == 130, stderr
    assert said[-1] == {"event": "saved", "path": str(tmp_path / "s.jsonl"), "turns": 1}


def test_a_signal_during_the_first_turn_ends_the_stream_with_discarded(tmp_path):
    said, stderr, returncode = run_until(tmp_path, "ls\npwd\n", starts=1, signals=(signal.SIGINT,))
    assert returncode == 130, stderr
    assert said[-1] == {"event": "discarded", "path": str(tmp_path / "s.jsonl")}
    assert not (tmp_path / "s.jsonl").exists()
    assert "No turn was completed, so no session file was kept." in stderr


def test_an_empty_input_ends_the_stream_with_discarded(tmp_path):
    model = write_answer_file(tmp_path / "answers.json", [answer("thinking_then_tags")])
    result = subprocess.run([sys.executable, "-m", "agentworld_local.cli.main", "run", "-m", f"scripted:{model}",
                             "-o", str(tmp_path / "s.jsonl"), "--json"], input="", capture_output=True, text=True,
                            env=awl_env(tmp_path), cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {"event": "discarded", "path": str(tmp_path / "s.jsonl")}]
