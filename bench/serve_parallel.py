"""More sessions than the model has slots, through the runner that schedules them against its `parallel`.

One model loaded with 4 session slots; 1 to 32 terminal sessions (`--think off`, temperature
0.8, a seed each, 16-token answers) each send their turns at once through one SessionRunner,
as `awl serve` does. The runner runs at most 4 turns at once and the rest wait their turn
(FIFO): generated tokens per second of all sessions together (wall clock) against one
session alone, the median and 95th-percentile turn latency (from the step sent to its Ready),
and the median time a turn waited for its place (from the step sent to its TurnStarted).

    .venv/bin/python bench/serve_parallel.py [--quick]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import LABELS, model, print_section, table  # noqa: E402

from agentworld_local.engine import events  # noqa: E402
from agentworld_local.engine.llama import LlamaBackend  # noqa: E402
from agentworld_local.session.runner import NewSession, SessionRunner  # noqa: E402
from agentworld_local.session.spec import SessionSpec  # noqa: E402
from agentworld_local.testing import LentBackend  # noqa: E402

SLOTS = 4
N_CTX = 4096


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


def main() -> None:
    print_section(section, __doc__)


if __name__ == "__main__":
    main()
