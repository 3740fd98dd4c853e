"""Waiting turns as data: the runner's scheduling cost per turn with 50 and with 2,000 turns
waiting, and the CPU that waiting turns use.

A scripted model with 4 places (no model time to speak of, so what is measured is the
runner's own work), 2,000 sessions open in both runs. 50 or 2,000 sessions send one step; the first four hold their places at a gate
until all the others wait behind them; then the gate opens and the queue drains. Printed, from
one run:
- the drain's wall time per turn at 50 and at 2,000 waiting, and their ratio (target: within
  1.5x of each other: giving a freed place to the next turn does not grow with the queue);
- the process's CPU seconds per wall second while the 2,000 only wait (target: about 0: a
  waiting turn is an entry in a queue, not a thread that polls).

    python bench/mailbox_drain.py [--turns 2000] [--small 50] [--places 4]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentworld_local.engine.scripted import ScriptedBackend  # noqa: E402
from agentworld_local.session.runner import NewSession, SessionRunner  # noqa: E402
from agentworld_local.session.spec import SessionSpec  # noqa: E402
from agentworld_local.testing.answers import answer  # noqa: E402


class HeldAtTheGate:
    """A scripted model whose turns wait for `gate` before their first chunk."""

    def __init__(self, inner: Any, gate: threading.Event) -> None:
        self.inner, self.gate = inner, gate

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def for_session(self) -> Any:
        return HeldAtTheGate(self.inner.for_session(), self.gate)

    def generate(self, messages: Any, **options: Any) -> Any:
        self.gate.wait()
        yield from self.inner.generate(messages, **options)


def drain(turns: int, places: int, folder: Path, *, sessions: int, idle_s: float = 0.0) -> tuple[float, float]:
    """(seconds per turn to drain `turns` queued steps, CPU seconds per wall second while they
    waited). `sessions` are open either way (one step each for the first `turns`), so both
    sizes run with the same heap and files: what differs is the queue."""
    gate = threading.Event()
    backend = HeldAtTheGate(ScriptedBackend([answer("marker_form").scripted()], parallel=places), gate)
    runner = SessionRunner(backend=backend)
    try:
        spec = SessionSpec(domain="terminal", think="off").resolve()
        folder = Path(tempfile.mkdtemp(dir=folder))  # a run's own files
        sids = []
        for number in range(sessions):
            outcome = runner.open(NewSession.from_spec(spec, folder / f"{number}.jsonl")).wait()
            outcome.raise_failure()
            sids.append(outcome.view.id)
        sent = [runner.step(sid, "ls") for sid in sids[:turns]]
        while runner.load_now.waiting < turns - places:  # every one is in the queue
            time.sleep(0.01)
        cpu_busy = 0.0
        if idle_s:
            wall, cpu = time.perf_counter(), time.process_time()
            time.sleep(idle_s)
            cpu_busy = (time.process_time() - cpu) / (time.perf_counter() - wall)
        started = time.perf_counter()
        gate.set()
        for one in sent:
            one.wait()
        return (time.perf_counter() - started) / turns, cpu_busy
    finally:
        gate.set()
        runner.close()


def measure(turns: int, small: int, places: int, idle_s: float) -> tuple[float, float, float]:
    """(ms per turn with `small` waiting, with `turns` waiting, CPU s/s while `turns` wait)."""
    with tempfile.TemporaryDirectory() as folder:
        drain(small, places, Path(folder), sessions=small)  # warm-up: imports, first files
        few, _ = drain(small, places, Path(folder), sessions=turns)
        many, cpu_busy = drain(turns, places, Path(folder), sessions=turns, idle_s=idle_s)
    return few * 1e3, many * 1e3, cpu_busy


def section(quick: bool) -> str:
    """The report's section (bench/performance.py)."""
    turns = 500 if quick else 2000
    few, many, cpu_busy = measure(turns, 50, 4, 1.0 if quick else 2.0)
    return "\n".join([
        "## mailbox_drain", "",
        f"Waiting turns as data: {turns} sessions open, a scripted model with 4 places; 50 or {turns} steps "
        "queued behind four held at a gate, then drained (ms of the runner's own work per turn).", "",
        "| waiting | ms per turn |", "|---|---|", f"| 50 | {few:.3f} |", f"| {turns} | {many:.3f} |", "",
        f"Ratio {turns} / 50: **{many / few:.2f}x** (target: at most 1.5x). CPU while {turns - 4} turns only wait: "
        f"**{cpu_busy:.3f} s per s** (target: about 0)."])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--small", type=int, default=50)
    parser.add_argument("--places", type=int, default=4)
    parser.add_argument("--idle", type=float, default=2.0, help="seconds to watch the CPU while turns only wait")
    args = parser.parse_args()
    small, large, cpu_busy = measure(args.turns, args.small, args.places, args.idle)
    print(f"places: {args.places}")
    print(f"drain, {args.small} waiting:   {small:.3f} ms per turn")
    print(f"drain, {args.turns} waiting: {large:.3f} ms per turn")
    print(f"ratio ({args.turns} / {args.small}): {large / small:.2f}x (target: at most 1.5x)")
    print(f"CPU while {args.turns - args.places} turns only wait: {cpu_busy:.3f} s per s (target: about 0)")


if __name__ == "__main__":
    main()
