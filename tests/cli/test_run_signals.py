"""Ctrl+C and SIGTERM sent as real signals to a real `awl run` on the tiny GGUF fixtures.

Whenever a signal lands (start-up imports, the model load, a turn, the prompt) awl ends
with one line and exit 130 (SIGINT) or 143 (SIGTERM), never a traceback, and keeps and
names every completed turn.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import REPO, awl_env

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

# The real entry point, with every llama.cpp progress callback slowed down and reported, so
# a signal surely lands while llama.cpp is loading (the tiny fixture loads in milliseconds).
# Reported to a file: llama-cpp-python sends stderr to /dev/null while it loads.
SLOW_LOAD = """
import os, sys, time, llama_cpp
make = llama_cpp.llama_progress_callback
def slowed(report):
    def call(value, user_data):
        with open(os.environ["PROGRESS_FILE"], "a") as log:
            log.write(f"progress {value:.3f}\\n")
        time.sleep(0.05)
        return report(value, user_data)
    return make(call)
llama_cpp.llama_progress_callback = slowed
from agentworld_local.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def start(args: list[str], home: Path, *, code: str | None = None, stderr_file: Path, **popen: object) -> subprocess.Popen:
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "agentworld_local.cli.main", *args]
    env = awl_env(home, PROGRESS_FILE=str(home / "progress.txt"))
    with stderr_file.open("w") as stderr:
        return subprocess.Popen(command, stderr=stderr, env=env, cwd=REPO, **popen)


def wait_for(path: Path, text: str, process: subprocess.Popen) -> None:
    """Until `path` shows `text` (no deadline: pytest-timeout stops a hang), while awl runs."""
    while text not in path.read_text(encoding="utf-8", errors="replace"):
        assert process.poll() is None, path.read_text()
        time.sleep(0.02)


def _delivered(process: subprocess.Popen, signum: int) -> bool:
    """The kernel has handed `signum` to awl (it is no longer pending): a second one sent now is
    a second delivery, never merged with the first. Where there is no /proc, a short pause."""
    status = Path(f"/proc/{process.pid}/status")
    if not status.exists():
        time.sleep(0.2)
        return True
    pending = 0
    for line in status.read_text().splitlines():
        if line.startswith(("SigPnd:", "ShdPnd:")):
            pending |= int(line.split()[1], 16)
    return not pending & (1 << (signum - 1))


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_the_model_load_stops_it(tmp_path, qwen_gguf, signum, code):
    """llama.cpp loads in C; the signal used to be printed and ignored there, and the load went on."""
    errors, out = tmp_path / "stderr.txt", tmp_path / "s.jsonl"
    args = ["run", "-m", str(qwen_gguf), "-o", str(out), "--json", "--ctx", "4096"]
    process = start(args, tmp_path, code=SLOW_LOAD, stderr_file=errors, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    reports = tmp_path / "progress.txt"
    reports.touch()
    wait_for(reports, "progress", process)
    process.send_signal(signum)
    process.communicate(b"ls\n")
    stderr = errors.read_text()
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert stderr.strip().splitlines()[-1] == "awl: interrupted."
    progress = [float(line.split()[1]) for line in reports.read_text().splitlines()]
    assert max(progress) < 1.0  # llama.cpp stopped loading: it never reported the end
    assert not out.exists()


def _catches_sigterm(pid: int) -> bool:
    """awl's start-up handler is in place (Python itself does not catch SIGTERM)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc to see when awl's handler is set")
@pytest.mark.parametrize("delay", [0.0, 0.03, 0.1, 0.25, 0.5])
def test_ctrl_c_while_awl_starts_never_prints_a_traceback(tmp_path, qwen_gguf, delay):
    """From the first line of awl's own code on: imports, option checks, the load, the first read."""
    errors = tmp_path / "stderr.txt"
    args = ["run", "-m", str(qwen_gguf), "-o", str(tmp_path / "s.jsonl"), "--ctx", "4096"]
    process = start(args, tmp_path, stderr_file=errors, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    while not _catches_sigterm(process.pid):  # no deadline: pytest-timeout stops a hang
        assert process.poll() is None
        time.sleep(0.001)
    time.sleep(delay)  # a moment of start-up to land in (any moment must hold), not a wait for an event
    process.send_signal(signal.SIGINT)
    process.communicate()
    stderr = errors.read_text()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr and "Exception ignored" not in stderr
    assert "interrupted" in stderr.strip().splitlines()[-1]


def test_sigterm_ends_a_script_like_ctrl_c_and_names_the_saved_file(tmp_path, qwen_gguf):
    script = tmp_path / "long.txt"
    script.write_text("\n".join(f"echo {n}" for n in range(200)) + "\n", encoding="utf-8")
    errors, out = tmp_path / "stderr.txt", tmp_path / "s.jsonl"
    args = ["run", str(script), "-m", str(qwen_gguf), "-o", str(out), "--json", "--think", "full",
            "--max-tokens", "400", "--ctx", "32768"]
    process = start(args, tmp_path, stderr_file=errors, stdout=subprocess.PIPE, text=True)
    while not (out.exists() and out.read_text(encoding="utf-8").count('"type": "turn"') >= 2):
        assert process.poll() is None, errors.read_text()
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    stdout, _ = process.communicate()
    stderr = errors.read_text()
    assert process.returncode == 143, stderr
    assert "Traceback" not in stderr
    trajectory = read_trajectory(out)
    turns = len(trajectory.current_branch())
    assert turns >= 2 and not trajectory.warnings
    assert f"{turns} completed turns are saved in {out}" in stderr
    last = json.loads(stdout.splitlines()[-1])
    assert last == {"event": "saved", "path": str(out), "turns": turns}


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_a_second_ctrl_c_during_a_turn_quits(tmp_path, qwen_gguf):
    """At the prompt one Ctrl+C cancels the turn; two in quick succession end awl (it sat at the prompt)."""
    import pty

    master, slave = pty.openpty()
    errors, out = tmp_path / "stderr.txt", tmp_path / "s.jsonl"
    state = tmp_path / "screen.txt"
    state.write_text("".join(f"-rw-r--r-- 1 dev dev {n} Nov 30 09:12 file{n}.log\n" for n in range(300)), encoding="utf-8")
    args = ["run", "-m", str(qwen_gguf), "-o", str(out), "--think", "full", "--max-tokens", "30000", "--ctx", "32768",
            "--initial-state", str(state)]
    process = start(args, tmp_path, stderr_file=errors, stdin=slave, stdout=subprocess.DEVNULL)
    os.close(slave)
    try:
        wait_for(errors, "action> ", process)
        os.write(master, b"cat /var/log/syslog\n")
        wait_for(errors, "turn 1", process)
        process.send_signal(signal.SIGINT)
        while not _delivered(process, signal.SIGINT):  # else the two could reach awl as one
            assert process.poll() is None, errors.read_text()
            time.sleep(0.001)
        process.send_signal(signal.SIGINT)
        assert process.wait() == 130, errors.read_text()
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
    stderr = errors.read_text()
    # Quit before the first turn finished: no session, so no file is left behind.
    assert "Traceback" not in stderr and "No turn was completed, so no session file was kept." in stderr
    assert not out.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_ctrl_c_during_a_regenerate_keeps_the_turn_it_was_replacing(tmp_path, qwen_gguf):
    """`:regenerate`, then Ctrl+C: the user meant "keep what I had". The first turn stays the
    session's, and the file records no undo (the regenerate's undo comes only with its new turn)."""
    import pty

    from tests.cli.helpers import awl, scripted_model

    out = tmp_path / "s.jsonl"
    made = awl("run", "-m", scripted_model(tmp_path, "<think>\nok\n</think>\n<predicted_observation>\nfirst\n"
                                           "</predicted_observation>"), "-o", str(out), home=tmp_path, stdin="ls\n")
    assert made.returncode == 0, made.stderr
    master, slave = pty.openpty()
    errors = tmp_path / "stderr.txt"
    args = ["run", "--resume", str(out), "-m", str(qwen_gguf), "--allow-other-model", "--think", "full",
            "--max-tokens", "30000", "--ctx", "32768"]
    process = start(args, tmp_path, stderr_file=errors, stdin=slave, stdout=subprocess.DEVNULL)
    os.close(slave)
    try:
        wait_for(errors, "action> ", process)
        os.write(master, b":regenerate\n")
        wait_for(errors, "regenerate turn 1", process)
        process.send_signal(signal.SIGINT)  # one Ctrl+C at the prompt: cancel the turn
        wait_for(errors, "cancelled", process)
        os.write(master, b"\x04")  # end of input: the session closes
        assert process.wait() == 0, errors.read_text()
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
    trajectory = read_trajectory(out)
    assert [turn.observation for turn in trajectory.current_branch()] == ["first"]
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [line["type"] for line in lines] == ["header", "turn"], lines
