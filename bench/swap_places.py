"""Sessions beyond the model's places: prompt tokens per session-turn with 2N sessions on N places against N on N.

RL runs more episodes than the model has places (sequences). A model loaded with N places
(N = 2, 4); N and then 2N terminal sessions (`--think off`, temperature 0.8, a seed each,
16-token answers) send their turns at once through one SessionRunner, as `awl serve` does, so
with 2N a session's place is taken by another between its turns. With parking
(engine/llama/parking.py) the state it left is set back in the place it gets next; without
it (the pool's handover turned off: how it was before) its next turn evaluated its history
again. Per setting: the prompt tokens each turn evaluated (median and mean over the turns
after each session's first, and the mean over all; no idle prefetch, whose tokens no turn
counts), generated tokens per second of all sessions together (wall clock), and the parked
states' counts and size. Measured in one run.

    .venv/bin/python bench/swap_places.py [--quick]
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
from agentworld_local.models.offload_options import OffloadOptions  # noqa: E402
from agentworld_local.session.runner import NewSession, SessionRunner  # noqa: E402
from agentworld_local.session.spec import SessionSpec  # noqa: E402
from agentworld_local.testing import LentBackend  # noqa: E402

N_CTX = 4096


class Clock:
    """The runner's emit: the sessions opened and each one's finished turns."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.opened: list[str] = []
        self.turns: dict[str, list[dict[str, int]]] = {}

    def __call__(self, session: str | None, event: events.SessionEvent) -> None:
        with self.changed:
            if isinstance(event, events.SessionOpened):
                self.opened.append(event.path)
            elif isinstance(event, events.TurnFinished) and session:
                self.turns.setdefault(session, []).append(event.record.tokens)
            self.changed.notify_all()

    def wait(self, condition) -> None:
        with self.changed:
            self.changed.wait_for(condition)


def run(backend: LlamaBackend, sessions: int, turns: int, folder: Path) -> dict[str, float]:
    clock = Clock()
    runner = SessionRunner(clock, backend=LentBackend(backend))
    parked_before, restored_before, seconds_before = backend.parked.parked, backend.parked.restored, backend.parked.seconds
    try:
        for number in range(sessions):
            spec = SessionSpec(domain="terminal", think="off", max_tokens=16, temperature=0.8, seed=number)
            runner.open(NewSession.from_spec(spec.resolve(), folder / f"s{sessions}-{number}.jsonl"))
            clock.wait(lambda: len(clock.opened) > number)
        sids = list(clock.opened)
        started = time.perf_counter()
        for turn in range(turns):
            for sid in sids:
                clock.wait(lambda: len(clock.turns.get(sid, [])) >= turn)
            for sid in sids:
                runner.step(sid, f"echo {turn}")
        for sid in sids:
            clock.wait(lambda: len(clock.turns.get(sid, [])) >= turns)
        seconds = time.perf_counter() - started
        held = backend.parked.bytes + backend.parked.disk_bytes  # the sessions waiting for a place now
    finally:
        runner.close()
    later = [t["prompt_evaluated"] for sid in sids for t in clock.turns[sid][1:]]
    every = [t["prompt_evaluated"] for sid in sids for t in clock.turns[sid]]
    generated = sum(t["generated"] for sid in sids for t in clock.turns[sid])
    moves = backend.parked.parked - parked_before + backend.parked.restored - restored_before
    return {"median": statistics.median(later), "move_ms": (backend.parked.seconds - seconds_before) * 1000 / max(moves, 1), "mean": statistics.mean(later), "all": statistics.mean(every),
            "rate": generated / seconds, "seconds": seconds, "parked": backend.parked.parked - parked_before,
            "restored": backend.parked.restored - restored_before, "held": held}


def section(quick: bool) -> str:
    kinds, turns, places, repeats = (["tiny"], 3, (2,), 1) if quick else (["big"], 6, (2, 4), 3)
    rows = []
    for kind in kinds:
        path = model(kind)
        for n in places:
            # No idle prefetch between turns: what it evaluates would be counted by no turn.
            backend = LlamaBackend(path, n_ctx=N_CTX, gpu_layers=0, parallel=n, notice=lambda text: None,
                                   offload=OffloadOptions(prefetch=False))
            handover = backend.slots._handover
            try:
                with tempfile.TemporaryDirectory() as folder:
                    settings = [(f"{n} on {n}", n, True), (f"{2 * n} on {n}, parking", 2 * n, True),
                                (f"{2 * n} on {n}, no parking (before)", 2 * n, False)]
                    # The first warms the model (its first turns evaluate the system prompt); the 2N
                    # settings alternate, so a busy neighbour slows both.
                    order = [0] + [1, 2] * repeats
                    got: dict[int, list[dict[str, float]]] = {}
                    for number, setting in enumerate(order):
                        backend.slots._handover = handover if settings[setting][2] else None
                        (Path(folder) / str(number)).mkdir()
                        got.setdefault(setting, []).append(
                            run(backend, settings[setting][1], turns, Path(folder) / str(number)))
                    for setting, (label, _, _) in enumerate(settings):
                        runs = got[setting]
                        last = runs[-1]
                        rows.append([LABELS[kind] if kind != "big" else "qwen35moe hidden 512", label,
                                     f"{last['median']:.0f}", f"{last['mean']:.0f}", f"{last['all']:.0f}",
                                     f"{statistics.median(r['rate'] for r in runs):.1f}",
                                     f"{statistics.median(r['seconds'] for r in runs):.1f}",
                                     f"{last['parked']}/{last['restored']}",
                                     f"{statistics.median(r['move_ms'] for r in runs):.2f}",
                                     f"{last['held'] / 2**20:.1f}"])
            finally:
                backend.close()
    return "\n\n".join([
        "## Sessions beyond the model's places (parked states)",
        f"N places, N or 2N terminal sessions each sending {turns} turns at once through one runner (16-token "
        "answers, temperature 0.8; no idle prefetch, so each turn counts all it evaluates). Prompt tokens "
        "evaluated per session-turn after each session's first (median, mean), over all turns (mean); generated "
        "tokens/s of all sessions (wall clock) and the wall time, the median of "
        f"{repeats} alternating runs of the 2N settings; states parked / set back and the milliseconds each took "
        "(the state copied out or in, with the wait for the decode in flight); MiB of parked states at the end "
        "(the sessions waiting for a place). Measured in one run, CPU.",
        table(["model", "sessions on places", "later turns: prompt tokens (median)", "(mean)", "all turns (mean)",
               "tokens/s (all)", "wall s", "parked / restored", "ms each", "parked MiB"], rows),
    ])


def main() -> None:
    print_section(section, __doc__)


if __name__ == "__main__":
    main()
