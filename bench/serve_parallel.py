"""More sessions than the model has slots, through the runner that schedules them against its `parallel`.

One model loaded with 4 session slots; 1 to 32 terminal sessions (`--think off`, temperature
0.8, a seed each, 16-token answers) each send their turns at once through one SessionRunner,
as `awl serve` does. The runner runs at most 4 turns at once and the rest wait their turn
(FIFO): generated tokens per second of all sessions together (wall clock) against one
session alone, the median and 95th-percentile turn latency (from the step sent to its Ready),
and the median time a turn waited for its place (from the step sent to its TurnStarted).

Then a server that reports no count of its own: `awl serve --backend openai` (a process of its
own, as a user starts it) in front of a vLLM-shaped loopback server (tests/remote/fake_openai.py:
its /v1/models names `max_model_len`, nothing says how many requests it decodes at once) that
batches every request it gets and answers each after a fixed delay. One session alone, then 16
sessions at once over HTTP (each opens, then steps in turn), in the same run: the wall time of
the 16 against the one (goal: within 1.3x, as a batching server allows), with awl's default for
the server's kind and again with `--parallel 4` (the override; 4 was the old default), and the
most answers the server had in flight at once.

    .venv/bin/python bench/serve_parallel.py [--quick] [--remote-only]
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

from bench_models import LABELS, model, print_section, table  # noqa: E402

from agentworld_local.engine import events  # noqa: E402
from agentworld_local.engine.llama import LlamaBackend  # noqa: E402
from agentworld_local.session.runner import NewSession, SessionRunner  # noqa: E402
from agentworld_local.session.spec import SessionSpec  # noqa: E402
from agentworld_local.testing import LentBackend  # noqa: E402

SLOTS = 4
N_CTX = 4096
#: The remote part: sessions at once against one, the server's fixed delay per answer, the goal.
REMOTE_SESSIONS, REMOTE_DELAY_S, REMOTE_GOAL = 16, 1.0, 1.3


class Clock:
    """The runner's emit: when each session's turn started and ended."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.started: dict[str, list[float]] = {}
        self.ready: dict[str, list[float]] = {}
        self.generated = 0
        self.opened: list[str] = []

    def __call__(self, session: str | None, event: events.SessionEvent) -> None:
        with self.changed:
            now = time.perf_counter()
            if isinstance(event, events.SessionOpened):
                self.opened.append(event.path)
            elif isinstance(event, events.TurnStarted) and session:
                self.started.setdefault(session, []).append(now)
            elif isinstance(event, events.TurnFinished):
                self.generated += event.record.tokens.get("generated", 0)
            if isinstance(event, (events.Ready, events.Refused)) and session:
                self.ready.setdefault(session, []).append(now)
            self.changed.notify_all()

    def wait(self, condition) -> None:
        with self.changed:
            self.changed.wait_for(condition)


def run(backend: LlamaBackend, sessions: int, turns: int, folder: Path) -> tuple[float, float, float, float]:
    """(tokens/s, p50 latency, p95 latency, p50 queue wait) for `sessions` stepping at once."""
    clock = Clock()
    runner = SessionRunner(clock, backend=LentBackend(backend))
    try:
        for number in range(sessions):
            spec = SessionSpec(domain="terminal", think="off", max_tokens=16, temperature=0.8, seed=number)
            runner.open(NewSession.from_spec(spec.resolve(), folder / f"s{sessions}-{number}.jsonl"))
            clock.wait(lambda: len(clock.opened) > number)
        sids = list(clock.opened)
        clock.ready.clear()
        sent: list[float] = []
        started = time.perf_counter()
        for turn in range(turns):
            for sid in sids:
                clock.wait(lambda: len(clock.ready.get(sid, [])) == turn)
            for sid in sids:
                sent.append(time.perf_counter())
                runner.step(sid, f"echo {turn}")
        for sid in sids:
            clock.wait(lambda: len(clock.ready.get(sid, [])) == turns)
        seconds = time.perf_counter() - started
    finally:
        runner.close()
    ends = [at for sid in sids for at in clock.ready[sid]]
    begins = [at for sid in sids for at in clock.started[sid]]
    latency = sorted(end - send for send, end in zip(sorted(sent), sorted(ends)))
    waited = sorted(begin - send for send, begin in zip(sorted(sent), sorted(begins)))
    p95 = latency[min(len(latency) - 1, int(len(latency) * 0.95))]
    return clock.generated / seconds, statistics.median(latency), p95, statistics.median(waited)


def section(quick: bool) -> str:
    return runner_section(quick) + "\n\n" + remote_section(quick)


def runner_section(quick: bool) -> str:
    kinds, turns, counts = (["tiny"], 2, (1, 4, 8)) if quick else (["tiny", "big"], 3, (1, 2, 4, 8, 16, 32))
    rows = []
    for kind in kinds:
        path = model(kind)
        if path is None:
            rows.append([LABELS[kind], "not installed"] + [""] * 5)
            continue
        backend = LlamaBackend(path, n_ctx=N_CTX, gpu_layers=0, parallel=SLOTS, notice=lambda text: None)
        try:
            alone = None
            with tempfile.TemporaryDirectory() as folder:
                for count in counts:
                    rate, p50, p95, wait = run(backend, count, turns, Path(folder))
                    alone = alone or rate
                    rows.append([LABELS[kind], count, f"{rate:.1f}", f"{rate / alone:.2f}x", f"{p50:.2f}",
                                 f"{p95:.2f}", f"{wait:.2f}"])
        finally:
            backend.close()
    return "\n\n".join([
        f"## More sessions than slots: {SLOTS} slots, 1 to {max(counts)} sessions",
        f"Each session sends {turns} turns, all sessions at once, through one runner (at most {SLOTS} turns run at "
        "once; the rest wait in order). Measured in one run.",
        table(["model", "sessions", "tokens/s (all)", "vs one session", "p50 turn s", "p95 turn s", "p50 wait s"], rows),
    ])


class FakeServer:
    """The vLLM-shaped loopback server (tests/remote/fake_openai.py) in a process of its own, as a
    real server is (its streaming does not share awl's or the clients' CPU time slices and GIL):
    its URL, and the most answers it had in flight at once (asked over its stdin)."""

    def __init__(self, delay_s: float) -> None:
        self.process = subprocess.Popen([sys.executable, __file__, "--fake-server", str(delay_s)], cwd=BENCH.parent,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.base_url = self.process.stdout.readline().strip()
        if not self.base_url:
            raise RuntimeError("the loopback server did not start")

    def most_at_once(self) -> int:
        """The most answers in flight at once since the last call."""
        self.process.stdin.write("most\n")
        self.process.stdin.flush()
        return int(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(60)


def fake_server_main(delay_s: float) -> None:
    from agentworld_local.testing.answers import answer
    from tests.remote.fake_openai import FakeOpenAI, Reply

    # vLLM's shape: /v1/models names max_model_len, nothing says how many requests it decodes at once.
    fake = FakeOpenAI(replies=[Reply(answer("thinking_then_tags").raw, separate=True)],
                      model_extra={"max_model_len": 65536}, delay=delay_s)
    print(fake.base_url, flush=True)
    for _ in sys.stdin:
        print(fake.most_at_once, flush=True)
        fake.most_at_once = 0
    fake.close()


def remote_run(base: str, sessions: int, turns: int) -> float:
    """Wall seconds for `sessions` sessions at once, each opened and stepped `turns` times over HTTP
    (each client made before the clock starts)."""
    import httpx2

    clients = [httpx2.Client(base_url=base, timeout=600) for _ in range(sessions)]

    def one(number: int) -> str:
        http = clients[number]
        opened = http.post("/sessions", json={"domain": "terminal", "think": "full", "seed": number})
        sid = opened.raise_for_status().json()["id"]
        for turn in range(turns):
            http.post(f"/sessions/{sid}/step", json={"action": f"echo {number} {turn}"}).raise_for_status()
        return sid

    try:
        with ThreadPoolExecutor(sessions) as pool:
            started = time.perf_counter()
            sids = list(pool.map(one, range(sessions)))
            seconds = time.perf_counter() - started
        for http, sid in zip(clients, sids):  # closed once timed: awl serve bounds the sessions open
            http.delete(f"/sessions/{sid}").raise_for_status()
        return seconds
    finally:
        for http in clients:
            http.close()


def remote_serve(fake: FakeServer, folder: Path, extra: list[str], sessions: int, turns: int,
                 rounds: int) -> tuple[float, float, int, int, float, str]:
    """(one session's seconds, `sessions` sessions' seconds, awl serve's parallel, the most answers the
    server had in flight during the many, awl serve's CPU seconds during the many, what it said at
    connect) through one `awl serve`: medians over `rounds` rounds."""
    import httpx2
    import psutil

    from bench.serve_load import free_port, wait_ready

    port = free_port()
    command = [sys.executable, "-m", "agentworld_local.cli.main", "serve", "--backend", "openai", "--base-url",
               fake.base_url, "--api-model", "world", "--dir", str(folder / "sessions"), "--port", str(port), *extra]
    env = {**os.environ, "PYTHONPATH": str(BENCH.parent), "AWL_HOME": str(folder / "home")}
    folder.mkdir(parents=True)
    log = folder / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(command, cwd=BENCH.parent, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, server)
        parallel = httpx2.get(f"{base}/health", timeout=60).json()["parallel"]
        remote_run(base, 2, 1)  # warm-up: the first sessions' imports and files
        alones, manys, cpus, most = [], [], [], 0
        for _ in range(rounds):  # one alone, then the many, in turn
            alones.append(remote_run(base, 1, turns))
            fake.most_at_once()
            before = psutil.Process(server.pid).cpu_times()
            manys.append(remote_run(base, sessions, turns))
            after = psutil.Process(server.pid).cpu_times()
            most = max(most, fake.most_at_once())
            cpus.append((after.user + after.system) - (before.user + before.system))
        alone, many, cpu_s = statistics.median(alones), statistics.median(manys), statistics.median(cpus)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
    said = " ".join(" ".join(line.split()) for line in log.read_text().splitlines() if "turns at once" in line)
    return alone, many, parallel, most, cpu_s, said


def remote_section(quick: bool) -> str:
    turns, rounds = (2, 1) if quick else (4, 3)
    fake = FakeServer(REMOTE_DELAY_S)
    rows, notices = [], []
    try:
        with tempfile.TemporaryDirectory() as folder:
            for name, extra in (("default for vLLM", []), ("--parallel 4", ["--parallel", "4"])):
                alone, many, parallel, most, cpu_s, said = remote_serve(fake, Path(folder) / name.replace(" ", "_"),
                                                                 extra, REMOTE_SESSIONS, turns, rounds)
                ratio = many / alone
                verdict = ("met" if ratio <= REMOTE_GOAL else "not met") if not extra else "(the override)"
                rows.append([name, parallel, most, f"{alone:.2f}", f"{many:.2f}", f"{ratio:.2f}x {verdict}",
                             f"{cpu_s:.2f}"])
                notices.append(f"- {name}: {said or '(nothing said of capacity)'}")
    finally:
        fake.close()
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    return "\n\n".join([
        "## Sessions against a server that reports no count: vLLM-shaped, a fixed delay",
        f"`awl serve --backend openai` in front of a vLLM-shaped loopback server that batches every request and "
        f"answers each after {REMOTE_DELAY_S:.1f} s. One session alone, then {REMOTE_SESSIONS} at once, each "
        f"opening and sending {turns} steps over HTTP, through the same `awl serve`, in turn {rounds} "
        f"time(s) (medians); each answer streams about 110 pieces of 1 to 7 characters (a token's size), "
        f"thinking in `reasoning_content`. Measured in one run (load average {load} at the end, 1/5/15 min, "
        f"2 cores). Goal: the {REMOTE_SESSIONS} within {REMOTE_GOAL}x one session's wall time with awl's "
        "default for the server's kind.",
        table(["awl serve", "parallel", "most in flight at the server", "1 session s",
               f"{REMOTE_SESSIONS} sessions s", "vs one session", f"awl serve CPU s ({REMOTE_SESSIONS})"], rows),
        "What `awl serve` said at connect:\n\n" + "\n".join(notices),
    ])


def main() -> None:
    if "--fake-server" in sys.argv:
        fake_server_main(float(sys.argv[sys.argv.index("--fake-server") + 1]))
        return
    if "--remote-only" in sys.argv:
        sys.argv.remove("--remote-only")
        print_section(remote_section, __doc__)
        return
    print_section(section, __doc__)


if __name__ == "__main__":
    main()
