"""Servers for the remote backend's tests, each on 127.0.0.1, started by the test and stopped after:
llama-cpp-python's own OpenAI-compatible server over a generated GGUF fixture (the real
engine path), and a fake one whose answers the test writes (the answer path, the errors)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.cli.helpers import REPO, awl_env
from tests.remote.fake_openai import FakeOpenAI

#: The name the llama-cpp-python server serves the fixture under.
SERVED = "tiny-world"


def killed_after_lines(args: list[str], out: Path, lines: int, home: Path, side: str) -> set[int]:
    """Run `awl ARGS`, SIGKILL it once `out` holds `lines` whole lines (as a crash would), and
    return the input lines its rows name (the `side` record's `line`)."""
    process = subprocess.Popen([sys.executable, "-m", "agentworld_local.cli.main", *args], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env=awl_env(home), cwd=REPO)
    def written() -> bool:
        return out.exists() and out.read_text().count("\n") >= lines

    while not written():  # no deadline: pytest-timeout stops a hang
        assert process.poll() is None or written(), f"awl ended before {lines} lines"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    return {json.loads(line)[side]["line"] for line in out.read_text().splitlines() if line.endswith("}")}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LlamaServer:
    """`python -m llama_cpp.server` over a GGUF, as a user would run it."""

    def __init__(self, model: Path, log: Path, *, n_ctx: int = 4096) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._log = log.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", SERVED,
             "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(n_ctx), "--n_threads", "1"],
            stdout=self._log, stderr=subprocess.STDOUT,
        )
        self.log_path = log
        while True:  # until it answers, or ends (no deadline: pytest-timeout stops a hang)
            if self.process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: {log.read_text(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=1) as response:
                    if SERVED in json.loads(response.read())["data"][0]["id"]:
                        return
            except OSError:
                time.sleep(0.2)

    def kill(self) -> None:
        """As if the server crashed: SIGKILL, no goodbye on the open connections."""
        self.process.kill()
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._log.close()


@pytest.fixture(scope="module")
def llama_server(qwen_gguf, tmp_path_factory):
    server = LlamaServer(qwen_gguf, tmp_path_factory.mktemp("server") / "server.log")
    yield server
    server.stop()


@pytest.fixture
def fake():
    server = FakeOpenAI()
    yield server
    server.close()
