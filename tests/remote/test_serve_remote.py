"""`awl serve --backend openai`: the server forwards each session's turns to an
OpenAI-compatible server on 127.0.0.1 streaming a realistic answer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx2

from agentworld_local.testing.answers import answer
from agentworld_local.trajectory.reader import read_trajectory
from bench.serve_load import free_port, wait_ready
from tests.remote.fake_openai import Reply

ITEM = answer("thinking_then_tags")
ROOT = Path(__file__).resolve().parents[2]


def test_awl_serve_forwards_turns_to_a_remote_server(fake, tmp_path):
    fake.replies[:] = [Reply(ITEM.raw, separate=True)]
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "agentworld_local.cli.main", "serve", "--backend", "openai", "--base-url", fake.base_url,
         "--api-model", "world", "--dir", str(tmp_path), "--port", str(port)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, server, timeout=float("inf"))  # no deadline: pytest-timeout stops a hang
        assert httpx2.get(f"{base}/health", timeout=None).json()["sessions_open"] == 0
        sids = [httpx2.post(f"{base}/sessions", json={"domain": "terminal", "think": "full"}, timeout=None).json()["id"] for _ in range(2)]
        for sid in sids:
            done = httpx2.post(f"{base}/sessions/{sid}/step", json={"action": f"ls {sid}"}, timeout=None).json()
            assert done["observation"] == ITEM.observation
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate()
    assert fake.calls == 2 and all(any(sid in str(request) for request in fake.requests) for sid in sids)
    for sid in sids:
        saved = read_trajectory(tmp_path / f"{sid}.jsonl")
        assert saved.header.model.extra == {"backend": "openai", "endpoint": fake.base_url}
        assert [turn.action for turn in saved.turns] == [f"ls {sid}"]
