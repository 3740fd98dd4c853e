"""Stopping `awl serve` (both apps) while a turn and a reward run longer than uvicorn's drain:
the runner's turns stop when the shutdown begins, so a client mid-turn gets the documented 503
JSON (the REST app) or an OpenEnv error message (the OpenEnv app), the log holds no traceback,
and every finished turn is saved. Real `awl serve` processes on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx2
import pytest
from websockets.sync.client import connect

from agentworld_local.testing.answers import answer, write_answer_file
from agentworld_local.trajectory.reader import read_trajectory
from bench.serve_load import free_port, wait_ready

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM")

#: A reward hook that says it started (a file), then takes far longer than the drain.
SLOW_REWARD = """
import time
from pathlib import Path

def slow(episode):
    Path(__file__).with_name("reward-started").touch()
    time.sleep(600)
    return 1.0
"""


def serve(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, str]:
    """`awl serve` on a model that takes longer than the drain (about 13 s) for a turn, with the slow reward."""
    (tmp_path / "slowreward.py").write_text(SLOW_REWARD)
    answers = write_answer_file(tmp_path / "answers.json", [answer("marker_form")], chunk=1, delay_s=0.12)
    port = free_port()
    command = [sys.executable, "-m", "agentworld_local.cli.main", "serve", "--model", f"scripted:{answers}",
               "--dir", str(tmp_path / "sessions"), "--port", str(port), "--reward", "slowreward:slow", *args]
    server = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])})
    base = f"http://127.0.0.1:{port}"
    wait_ready(base, server, timeout=float("inf"))  # no deadline: pytest-timeout stops a hang
    return server, base


def wait_until(condition, server: subprocess.Popen) -> None:
    """Until `condition()` holds (each check a short wait on the server process, never a deadline)."""
    while not condition():
        try:
            server.wait(0.05)
        except subprocess.TimeoutExpired:
            continue
        raise AssertionError("the server ended early")


def test_sigterm_during_a_long_turn_and_a_long_reward_answers_503_json_and_stops_cleanly(tmp_path):
    server, base = serve(tmp_path)
    answers: dict[str, httpx2.Response] = {}
    try:
        turning = httpx2.post(f"{base}/sessions", json={"domain": "terminal"}, timeout=None).json()["id"]
        rewarding = httpx2.post(f"{base}/sessions", json={"domain": "terminal"}, timeout=None).json()["id"]

        def step(sid: str) -> None:
            answers[sid] = httpx2.post(f"{base}/sessions/{sid}/step", json={"action": "ls"}, timeout=None)

        # One session's turn runs (the slow model); the other's has finished and its reward runs.
        clients = [threading.Thread(target=step, args=(sid,)) for sid in (rewarding,)]
        clients[0].start()
        wait_until((tmp_path / "reward-started").exists, server)
        clients.append(threading.Thread(target=step, args=(turning,)))
        clients[1].start()
        wait_until(lambda: httpx2.get(f"{base}/health", timeout=None).json()["running"] == 1, server)
    finally:
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate()
        for client in clients:
            client.join()
    assert "Traceback" not in err and "Exception" not in err, err
    for sid in (turning, rewarding):
        assert answers[sid].status_code == 503, answers[sid].text
        body = answers[sid].json()
        assert "shutting down" in body["error"] and body["hint"], body
    # The turn whose reward was stopped is saved (without a reward); the one cut short is not.
    assert [t.action for t in read_trajectory(tmp_path / "sessions" / f"{rewarding}.jsonl").turns] == ["ls"]
    assert not (tmp_path / "sessions" / f"{turning}.jsonl").exists()


def test_sigterm_during_a_long_openenv_reward_is_an_error_message_and_no_traceback(tmp_path):
    server, base = serve(tmp_path, "--openenv", "--domain", "terminal")
    said: list[dict] = []
    try:
        with connect(base.replace("http", "ws") + "/ws") as socket:
            socket.send(json.dumps({"type": "reset", "data": {}}))
            json.loads(socket.recv())
            socket.send(json.dumps({"type": "step", "data": {"action": "pwd"}}))
            wait_until((tmp_path / "reward-started").exists, server)
            server.send_signal(signal.SIGTERM)
            said.append(json.loads(socket.recv()))
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
        _, err = server.communicate()
    assert "Traceback" not in err, err
    assert said[0]["type"] == "error" and "shutting down" in json.dumps(said[0]), said
    sessions = list((tmp_path / "sessions").glob("*.jsonl"))
    assert [t.action for t in read_trajectory(sessions[0]).turns] == ["pwd"], "the turn is saved"
