"""llama.cpp's own `llama-server`, started for a benchmark to measure against (not awl's server).

Found by `--llama-server PATH`, else the AWL_LLAMA_SERVER environment variable, else
`llama-server` on PATH; None when none is there (the sections then say so and measure the
rest). Started on 127.0.0.1 at a free port with the same model, context, threads and batch
sizes as the awl side, one slot, its log in a temporary file; everything else (prompt cache,
cache reuse, context checkpoints, weight repacking) as llama-server ships it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def find_binary(given: str | None = None) -> Path | None:
    """The llama-server to measure: `given`, else $AWL_LLAMA_SERVER, else the one on PATH."""
    for candidate in (given, os.environ.get("AWL_LLAMA_SERVER"), shutil.which("llama-server")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


def binary_from_args(argv: list[str] | None = None) -> Path | None:
    """A section run alone: `--llama-server PATH` (parsed here, ignored by print_section's parser)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--llama-server")
    known, _ = parser.parse_known_args(argv)
    found = find_binary(known.llama_server)
    if known.llama_server and found != Path(known.llama_server):
        print(f"bench: --llama-server {known.llama_server} is not an executable file; "
              f"{'using ' + str(found) if found else 'measuring without llama-server'}.", file=sys.stderr)
    return found


def print_section_with_server(section, doc: str) -> None:
    """A section that measures against llama-server, run alone: `--llama-server PATH` taken
    here, the rest (`--quick`) as print_section parses it."""
    from bench_models import print_section

    binary = binary_from_args()
    sys.argv = [a for i, a in enumerate(sys.argv) if a != "--llama-server" and sys.argv[i - 1] != "--llama-server"]
    print_section(lambda quick: section(quick, binary), doc)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LlamaServer:
    """One llama-server process: `with LlamaServer(...) as server:` waits for /health, stops it after."""

    def __init__(self, binary: Path, model: Path, *, n_ctx: int, threads: int, threads_batch: int, n_batch: int,
                 n_ubatch: int, extra: tuple[str, ...] = (), timeout: float = 300.0) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)
        self.log_path = Path(self._log.name)
        # -ngl 0: the CPU like the awl side on a CPU build; --swa-full as awl loads (checkpoints need it).
        command = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port),
                   "-c", str(n_ctx), "-t", str(threads), "-tb", str(threads_batch), "-b", str(n_batch),
                   "-ub", str(n_ubatch), "--parallel", "1", "-ngl", "0", "--swa-full", "--no-webui", *extra]
        self.command = command
        self._process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self._wait_healthy(timeout)

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                tail = self.log_tail()
                self.stop()
                raise RuntimeError(f"llama-server exited with {self._process.returncode}: {tail}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)
        tail = self.log_tail()
        self.stop()
        raise RuntimeError(f"llama-server was not healthy within {timeout:.0f}s: {tail}")

    def log_tail(self, lines: int = 5) -> str:
        try:
            return " | ".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def completion(self, body: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """POST /completion (not streamed): (its JSON, client-side seconds)."""
        data = json.dumps({**body, "stream": False}).encode()
        request = urllib.request.Request(self.url + "/completion", data, {"Content-Type": "application/json"})
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=600) as reply:
            answer = json.loads(reply.read())
        return answer, time.perf_counter() - started

    def stream(self, body: dict[str, Any]) -> Iterator[tuple[float, dict[str, Any]]]:
        """POST /completion streamed: (seconds since the request was sent, event) per server-sent event."""
        data = json.dumps({**body, "stream": True}).encode()
        request = urllib.request.Request(self.url + "/completion", data, {"Content-Type": "application/json"})
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=600) as reply:
            for line in reply:
                if line.startswith(b"data: "):
                    yield time.perf_counter() - started, json.loads(line[6:])

    def stop(self) -> None:
        """Stop the server and remove its log (a second stop does nothing)."""
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._log.close()
        self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> "LlamaServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
