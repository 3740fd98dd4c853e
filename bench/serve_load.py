"""Load test of `awl serve` on loopback: concurrent sessions, clients that leave mid-stream, a
server killed (SIGKILL) and restarted mid-run; then every session's file is checked.

Each client owns one session and sends tagged actions (`echo s3-t7`): every other step
streamed (server-sent events), some streams dropped after their first event, the rest plain
JSON. Half-way through, the server is killed and a new one started on the same folder and
port; each client resumes its session and goes on. Afterwards, for each session file:
every step the client got an answer for is there (none lost), every turn in it carries the
session's own tag (none mixed), in the order sent, none twice. Step latency is the client's
time to the saved turn, queueing behind other sessions' turns included.

    .venv/bin/python bench/serve_load.py [--sessions 8] [--steps 20] [--model scripted|tiny|big|PATH]
    .venv/bin/python bench/serve_load.py --section [--quick]

tests/serve/test_serve_load.py runs a bounded version (the same code) in the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx2

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agentworld_local.testing.answers import ANSWERS, write_answer_file  # noqa: E402
from agentworld_local.trajectory.reader import read_trajectory  # noqa: E402

#: Options every served session gets: short answers, so a real model's turn stays short.
SESSION = {"domain": "terminal", "think": "16", "max_tokens": 48, "seed": 1}


@dataclass
class Client:
    """One session's client: what it sent, what it got an answer for, how long each took."""

    index: int
    sid: str = ""
    sent: list[str] = field(default_factory=list)
    acked: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    dropped: int = 0  # streams it left after the first event
    broken: int = 0  # steps cut by the server's kill


@dataclass
class LoadResult:
    sessions: int
    steps: int
    completed: int  # steps a client got an answer for
    dropped: int
    broken: int
    lost: int  # acknowledged turns missing from their file
    mixed: int  # turns in a file that another session's client sent
    out_of_order: int  # turns out of the order sent, or twice
    kept: int  # turns in the files
    p50_ms: float
    p95_ms: float
    restart_s: float  # from the kill to the new server answering
    wall_s: float
    problems: list[str]


def model_args(model: str, folder: Path) -> list[str]:
    """`awl serve` options for `model`: scripted (realistic answers), a bench fixture, or a GGUF path."""
    if model == "scripted":
        answers = write_answer_file(folder / "answers.json", [item for item in ANSWERS if not item.several_blocks], chunk=1)
        return ["--model", f"scripted:{answers}"]
    if model in ("tiny", "big", "gemma"):
        sys.path.insert(0, str(REPO / "bench"))
        from bench_models import model as bench_file

        path = bench_file(model)
        if path is None:
            raise SystemExit(f"the {model} model is not available here")
        return ["--model", str(path), "--ctx", "8192", "--gpu-layers", "0"]
    return ["--model", model, "--ctx", "8192"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(args: list[str], folder: Path, port: int, log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "agentworld_local.cli.main", "serve", *args, "--dir", str(folder / "sessions"),
               "--port", str(port)]
    # A home of its own: the user's state cache and sessions stay untouched, and no earlier run's cache helps.
    env = {**os.environ, "PYTHONPATH": str(REPO), "AWL_HOME": str(folder / "home")}
    with log.open("ab") as out:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)


def wait_ready(base: str, process: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"awl serve exited with {process.returncode}")
        try:
            if httpx2.get(f"{base}/health", timeout=2).status_code in (200, 401):  # up (401: it wants a token)
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError("awl serve did not answer in time")


def run_load(folder: Path, *, model: str = "scripted", sessions: int = 8, steps: int = 20, kill: bool = True,
             drop_every: int = 5) -> LoadResult:
    """The load test in `folder` (see the module's doc)."""
    folder.mkdir(parents=True, exist_ok=True)
    args, port, log = model_args(model, folder), free_port(), folder / "server.log"
    base = f"http://127.0.0.1:{port}"
    server = start_server(args, folder, port, log)
    up = threading.Event()
    started = time.monotonic()
    wait_ready(base, server)
    up.set()
    clients = [Client(index) for index in range(sessions)]
    progress = [0]
    lock = threading.Lock()
    http = httpx2.Client(base_url=base, timeout=300, limits=httpx2.Limits(max_connections=sessions * 2 + 4))

    def resume(client: Client) -> None:
        up.wait()
        http.post(f"/sessions/{client.sid}/resume").raise_for_status()

    def step(client: Client, number: int) -> None:
        action = f"echo s{client.index}-t{number}"
        client.sent.append(action)
        began = time.perf_counter()
        try:
            if number % 2:
                with http.stream("POST", f"/sessions/{client.sid}/step/stream", json={"action": action}) as response:
                    response.raise_for_status()
                    done = False
                    for line in response.iter_lines():
                        if (client.index + number) % drop_every == 0 and line.startswith("data:"):
                            client.dropped += 1  # the client leaves mid-stream; the turn goes on
                            return
                        if line.startswith("data:") and json.loads(line[5:])["event"] == "turn_done":
                            done = True
                    if not done:
                        raise httpx2.RemoteProtocolError("the stream ended before the turn")
            else:
                http.post(f"/sessions/{client.sid}/step", json={"action": action}).raise_for_status()
        except httpx2.TransportError:
            client.broken += 1  # the server was killed under it
            resume(client)
            return
        client.acked.append(action)
        client.latencies.append(time.perf_counter() - began)
        with lock:
            progress[0] += 1

    def work(client: Client) -> None:
        for number in range(steps):
            while True:
                try:
                    step(client, number)
                    break
                except httpx2.HTTPStatusError as error:
                    if error.response.status_code == 409 and "resume" in error.response.text.lower():
                        resume(client)  # the new server has not opened it yet
                        client.sent.pop()
                        continue
                    raise

    for client in clients:
        created = http.post("/sessions", json=SESSION)
        created.raise_for_status()
        client.sid = created.json()["id"]
    threads = [threading.Thread(target=work, args=(client,), daemon=True) for client in clients]
    for thread in threads:
        thread.start()
    restart_s = 0.0
    if kill:
        while progress[0] < sessions * steps // 2 and any(thread.is_alive() for thread in threads):
            time.sleep(0.01)
        up.clear()
        server.send_signal(signal.SIGKILL)
        server.wait()
        killed = time.monotonic()
        server = start_server(args, folder, port, log)
        wait_ready(base, server)
        restart_s = time.monotonic() - killed
        up.set()
    for thread in threads:
        thread.join(600)
    wall = time.monotonic() - started
    http.close()
    server.send_signal(signal.SIGTERM)  # every open session closed and saved
    server.wait(60)
    return check(folder, clients, sessions, steps, restart_s, wall)


def check(folder: Path, clients: list[Client], sessions: int, steps: int, restart_s: float, wall: float) -> LoadResult:
    lost = mixed = disorder = kept = 0
    problems = []
    for client in clients:
        saved = [turn.action for turn in read_trajectory(folder / "sessions" / f"{client.sid}.jsonl").current_branch()]
        kept += len(saved)
        tag = f"echo s{client.index}-"
        mixed += sum(not action.startswith(tag) for action in saved)
        missing = [action for action in client.acked if action not in saved]
        lost += len(missing)
        positions = [client.sent.index(action) for action in saved if action in client.sent]
        wrong_order = sum(1 for a, b in zip(positions, positions[1:]) if b <= a)
        disorder += wrong_order
        if missing or wrong_order:
            problems.append(f"session {client.index}: missing {missing}, file {saved}")
    latencies = sorted(value for client in clients for value in client.latencies)
    quantile = (lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000) if latencies else (lambda q: 0.0)
    return LoadResult(sessions, steps, sum(len(c.acked) for c in clients), sum(c.dropped for c in clients),
                      sum(c.broken for c in clients), lost, mixed, disorder, kept, statistics.median(latencies) * 1000
                      if latencies else 0.0, quantile(0.95), restart_s, wall, problems)


def section(quick: bool) -> str:
    """The report's section: the load test on the scripted backend and on a real llama.cpp model."""
    sys.path.insert(0, str(REPO / "bench"))
    from bench_models import table

    # (label, model, sessions, steps): a real model's turns are seconds each on 2 CPU cores.
    cases = [("scripted (realistic answers)", "scripted", 4, 6)] if quick else [
        ("scripted (realistic answers)", "scripted", 8, 20), ("qwen35moe fixture, hidden 64 (llama.cpp)", "tiny", 8, 3)]
    rows = []
    for label, model, sessions, steps in cases:
        with tempfile.TemporaryDirectory() as directory:
            alone = run_load(Path(directory), model=model, sessions=1, steps=steps, kill=False)
        with tempfile.TemporaryDirectory() as directory:
            result = run_load(Path(directory), model=model, sessions=sessions, steps=steps)
        rows.append([label, f"{sessions} x {steps}", result.completed, result.dropped, result.broken, result.kept,
                     result.lost, result.mixed, result.out_of_order, f"{alone.p50_ms:.0f}", f"{result.p50_ms:.0f}",
                     f"{result.p95_ms:.0f}", f"{result.p50_ms / max(alone.p50_ms, 1e-9):.1f}x",
                     f"{result.restart_s:.1f}", f"{result.wall_s:.1f}"])
    return "\n\n".join([
        "## awl serve under load",
        "Concurrent sessions on one `awl serve` on loopback (bench/serve_load.py): each client steps its own session "
        "(every other step streamed, some streams dropped after the first event); half-way the server is killed "
        "(SIGKILL) and restarted on the same folder, and each client resumes. Step latency is the client's time to the "
        "saved turn, queueing behind other sessions included, beside one session alone on the same server in the "
        "same run; lost, mixed and out-of-order count turns checked in the files afterwards (all must be 0).",
        table(["model", "sessions x steps", "answered", "dropped streams", "cut by the kill", "turns in files", "lost",
               "mixed", "out of order", "p50 ms, 1 session", "p50 ms", "p95 ms", "p50 vs 1 session", "restart s",
               "wall s"], rows),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", action="store_true", help="print the report's section instead")
    parser.add_argument("--quick", action="store_true", help="with --section: small sizes")
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--model", default="scripted", help="scripted, tiny, big, gemma, or a GGUF path")
    parser.add_argument("--no-kill", action="store_true", help="do not kill and restart the server")
    args = parser.parse_args()
    if args.section:
        print(section(args.quick))
        return
    with tempfile.TemporaryDirectory() as directory:
        result = run_load(Path(directory), model=args.model, sessions=args.sessions, steps=args.steps,
                          kill=not args.no_kill)
    for name, value in vars(result).items():
        print(f"{name}: {value:.1f}" if isinstance(value, float) else f"{name}: {value}")


if __name__ == "__main__":
    main()
