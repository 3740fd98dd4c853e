"""`awl serve` as a user starts it: one clear line for a missing token or a taken port, and
Ctrl+C / SIGTERM keeps every turn."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from agentworld_local.testing.answers import answer, write_answer_file
from agentworld_local.trajectory.reader import read_trajectory
from bench.serve_load import free_port, wait_ready

ROOT = Path(__file__).resolve().parents[2]


def awl_serve(tmp_path: Path, *args: str, env: dict | None = None, **options) -> subprocess.Popen:
    answers = write_answer_file(tmp_path / "answers.json", [answer("thinking_then_tags")])
    command = [sys.executable, "-m", "agentworld_local.cli.main", "serve", "--model", f"scripted:{answers}",
               "--dir", str(tmp_path / "sessions"), *args]
    return subprocess.Popen(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options)


def test_another_address_without_a_token_is_refused_in_one_line(tmp_path):
    done = awl_serve(tmp_path, "--host", "0.0.0.0", "--port", str(free_port()), "--token-env", "AWL_NO_SUCH_TOKEN")
    _, err = done.communicate()
    assert done.returncode == 2 and err.strip().count("\n") == 0 and "Traceback" not in err
    assert "Serving on 0.0.0.0 needs a token: $AWL_NO_SUCH_TOKEN is not set" in err and "127.0.0.1" in err


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_an_empty_token_is_refused_on_any_address_in_one_line(tmp_path, host):
    done = awl_serve(tmp_path, "--host", host, "--port", str(free_port()), env={"AWL_SERVE_TOKEN": " "})
    _, err = done.communicate()
    assert done.returncode == 2 and err.strip().count("\n") == 0 and "$AWL_SERVE_TOKEN is set but empty" in err


def test_a_taken_port_is_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = awl_serve(tmp_path, "--port", str(port))
        _, err = done.communicate()
    assert done.returncode == 2 and err.strip() == f"awl: error: Port {port} on 127.0.0.1 is taken. " \
                                                   "Choose another with --port, or stop what uses it."


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM")
def test_sigterm_stops_the_server_with_every_turn_saved_and_a_token_guards_it(tmp_path):
    port = free_port()
    server = awl_serve(tmp_path, "--port", str(port), "--token-env", "MY_TOKEN", env={"MY_TOKEN": "t0ken"})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, server, timeout=float("inf"))  # no deadline: pytest-timeout stops a hang
        auth = {"Authorization": "Bearer t0ken"}
        assert httpx2.post(f"{base}/sessions", json={"domain": "terminal"}, timeout=None).status_code == 401
        sid = httpx2.post(f"{base}/sessions", json={"domain": "terminal"}, headers=auth, timeout=None).json()["id"]
        httpx2.post(f"{base}/sessions", json={"domain": "terminal"}, headers=auth, timeout=None)  # no turn: leaves no file
        done = httpx2.post(f"{base}/sessions/{sid}/step", json={"action": "ls"}, headers=auth, timeout=None).json()
        assert done["turn"] == 1
    finally:
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate()
    assert "every session's turns are saved" in err and "Traceback" not in err
    assert "interrupted" not in err and server.returncode == 143  # a clean stop, said once
    assert [path.stem for path in (tmp_path / "sessions").iterdir()] == [sid]
    assert [turn.action for turn in read_trajectory(tmp_path / "sessions" / f"{sid}.jsonl").turns] == ["ls"]


@pytest.mark.parametrize("args, said", [
    (["--model", "/nonexistent/world.gguf"], "Model file not found: /nonexistent/world.gguf."),
    (["--max-sessions", "0"], "--max-sessions must be more than 0."),
])
def test_a_bad_start_is_one_line_and_leaves_no_server(tmp_path, args, said):
    done = awl_serve(tmp_path, "--port", str(free_port()), *args)
    _, err = done.communicate()
    assert done.returncode == 2 and err.strip().count("\n") == 0 and said in err and "Traceback" not in err


def test_awl_serve_on_a_gguf_runs_two_sessions_turns_at_once_each_in_its_own_file(tmp_path, qwen_gguf):
    """`--parallel 2` loads the model with two session slots: the server says so, and two
    clients stepping at once each get their own turns, recorded in their own files."""
    import threading

    port, base = free_port(), None
    command = [sys.executable, "-m", "agentworld_local.cli.main", "serve", "--model", str(qwen_gguf), "--ctx", "4096",
               "--gpu-layers", "0", "--parallel", "2", "--dir", str(tmp_path / "sessions"), "--port", str(port)]
    server = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, server, timeout=float("inf"))  # no deadline: pytest-timeout stops a hang
        assert httpx2.get(f"{base}/health", timeout=None).json()["parallel"] == 2
        options = {"domain": "terminal", "think": "off", "max_tokens": 12, "seed": 3}
        sids = [httpx2.post(f"{base}/sessions", json=options, timeout=None).json()["id"] for _ in range(2)]
        turns: dict[str, list[int]] = {sid: [] for sid in sids}

        def play(sid: str) -> None:
            for step in range(2):
                done = httpx2.post(f"{base}/sessions/{sid}/step", json={"action": f"echo {sid[-6:]}-{step}"},
                                   timeout=None).json()
                turns[sid].append(done["turn"])

        players = [threading.Thread(target=play, args=(sid,)) for sid in sids]
        for player in players:
            player.start()
        for player in players:
            player.join()
        assert turns == {sid: [1, 2] for sid in sids}
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate()
    for sid in sids:
        saved = read_trajectory(tmp_path / "sessions" / f"{sid}.jsonl").current_branch()
        assert [turn.action for turn in saved] == [f"echo {sid[-6:]}-{step}" for step in range(2)]
