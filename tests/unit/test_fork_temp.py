"""A killed writer's hidden temporary file (files.writing_whole: `.NAME.PID-HEX.part`) is
removed by the next awl command that writes in that folder (fork, run, export, the bench
commands' appended files); a live writer's is never touched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from agentworld_local.files import remove_stale_temporaries
from tests.cli.helpers import REPO, awl, awl_env, scripted_model

DEMO = "assets/examples/terminal-demo.jsonl"
LS = "<think>\nNothing here yet.\n</think>\n<predicted_observation>\ntotal 0\n</predicted_observation>"
KILLED_MID_WRITE = """
import sys
from agentworld_local.files import writing_whole
with writing_whole(sys.argv[1]) as handle:
    handle.write(b"half a session")
    handle.flush()
    print("writing", flush=True)
    sys.stdin.read()  # until killed
"""


def killed_writer_leftover(folder, name: str, tmp_path):
    """What a writer SIGKILLed inside writing_whole leaves in `folder`: its temporary file."""
    process = subprocess.Popen([sys.executable, "-c", KILLED_MID_WRITE, str(folder / name)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, env=awl_env(tmp_path), cwd=REPO)
    assert process.stdout.readline().strip() == "writing"
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stdin.close()
    process.stdout.close()
    (left,) = [path for path in folder.iterdir() if path.name.startswith(f".{name}.")]
    assert f".{process.pid}-" in left.name and left.name.endswith(".part")
    return left


def live_writers_file(folder, name: str):
    """A temporary file of a writer still at work (this test process)."""
    path = folder / f".{name}.{os.getpid()}-0123abcd.part"
    path.write_bytes(b"being written")
    return path


@pytest.mark.parametrize("command", ["fork", "run"])
def test_the_next_fork_or_run_in_the_folder_removes_a_killed_writers_temporary_file(tmp_path, command):
    folder = tmp_path / "sessions"
    folder.mkdir()
    left = killed_writer_leftover(folder, "fork.jsonl", tmp_path)
    live = live_writers_file(folder, "other.jsonl")
    unrelated = folder / ".notes.part"  # not a name writing_whole makes
    unrelated.write_bytes(b"mine")
    out = folder / "next.jsonl"
    if command == "fork":
        result = awl("fork", DEMO, "--out", str(out), home=tmp_path)
    else:
        result = awl("run", "-m", scripted_model(tmp_path, LS), "-o", str(out), home=tmp_path, stdin="ls\n")
    assert result.returncode == 0, result.stderr
    assert out.exists() and not left.exists()
    assert live.read_bytes() == b"being written" and unrelated.exists()


def test_an_old_temporary_file_goes_even_if_its_pid_runs_again(tmp_path):
    """A pid is reused in time: an hour untouched is a leftover whatever runs under that pid."""
    old = live_writers_file(tmp_path, "a.jsonl")
    os.utime(old, (0, 0))
    fresh = live_writers_file(tmp_path, "b.jsonl")
    remove_stale_temporaries(tmp_path)
    assert not old.exists() and fresh.exists()


def test_a_folder_that_cannot_be_read_is_no_error(tmp_path):
    remove_stale_temporaries(tmp_path / "missing")


def large_session(path, turns: int = 150, observation_chars: int = 200_000):
    """A session of about 30 MB: a fork takes long enough to write it that a kill lands mid-write."""
    lines = (REPO / DEMO).read_text(encoding="utf-8").splitlines()
    header, turn = lines[0], json.loads(lines[1])
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(header + "\n")
        for number in range(1, turns + 1):
            handle.write(json.dumps({**turn, "id": number, "parent": number - 1 or None, "turn": number,
                                     "observation": "x" * observation_chars + "\n"}) + "\n")
    return path


def killed_fork_leftover(source, folder, tmp_path, tries: int = 5):
    """SIGKILL a real `awl fork SOURCE --out FOLDER/fork.jsonl` once its hidden temporary file
    holds a megabyte (mid-write); the leftover it leaves."""
    for attempt in range(tries):
        name = f"fork{attempt}.jsonl"
        process = subprocess.Popen([sys.executable, "-m", "agentworld_local.cli.main", "fork", str(source), "--out",
                                    str(folder / name)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env=awl_env(tmp_path), cwd=REPO)
        caught = False
        while process.poll() is None and not caught:  # watched until it writes, or ends
            with os.scandir(folder) as entries:
                caught = any(entry.name.startswith(f".{name}.") and entry.stat().st_size > 1_000_000 for entry in entries)
        if caught:
            process.send_signal(signal.SIGKILL)
        process.wait()
        left = [path for path in folder.iterdir() if path.name.startswith(f".{name}.")]
        if caught and left and not (folder / name).exists():
            (leftover,) = left
            assert f".{process.pid}-" in leftover.name and leftover.name.endswith(".part")
            return leftover
        (folder / name).unlink(missing_ok=True)  # it finished first: again
    raise AssertionError(f"no fork was caught mid-write in {tries} tries")


@pytest.mark.parametrize("command", ["fork", "run", "export", "bench-judge"])
def test_a_killed_awl_fork_leaves_nothing_past_the_next_awl_command_in_that_folder(tmp_path, command):
    folder = tmp_path / "sessions"
    folder.mkdir()
    source = large_session(tmp_path / "large.jsonl")
    leftover = killed_fork_leftover(source, folder, tmp_path)
    assert leftover.stat().st_size > 1_000_000
    out = folder / "next.jsonl"
    if command == "fork":
        result = awl("fork", DEMO, "--out", str(out), home=tmp_path)
    elif command == "run":
        result = awl("run", "-m", scripted_model(tmp_path, LS), "-o", str(out), home=tmp_path, stdin="ls\n")
    elif command == "export":
        result = awl("export", DEMO, "-o", str(out), home=tmp_path)
    else:  # appends its verdicts as they come: no whole-file write before the end
        predictions = tmp_path / "p.jsonl"
        predictions.write_text(json.dumps({"task": "terminal", "id": 1, "prompt": ["x"], "turn_idx": 1}) + "\n")
        (tmp_path / "prompts").mkdir()
        result = awl("bench", "judge", str(predictions), "--judge-base-url", "http://127.0.0.1:9/v1", "--judge-model",
                     "j", "--prompts", str(tmp_path / "prompts"), "--out", str(out), home=tmp_path)
    assert out.exists(), result.stderr
    assert not leftover.exists()
    assert [path.name for path in folder.iterdir() if path.name.endswith(".part")] == []
