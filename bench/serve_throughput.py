"""Several sessions over one loaded model: throughput when their turns run at once, and the
prompt tokens a turn evaluates when sessions take turns.

One model loaded with 8 session slots (`LlamaBackend(parallel=8)`: a llama.cpp sequence per
session, decoded together, engine/llama/batching.py). Terminal sessions (the domain's own
system prompt, `--think off`, temperature 0.8, a seed each, 32-token answers) take a first
turn each (not timed: it evaluates the system prompt), then 1, 2, 4 or 8 of them run their
next turns at once, one thread each, as `awl serve` does: generated tokens per second of all
sessions together (wall clock), against one session alone, and the sessions served per
llama_decode. Then 8 sessions interleaved turn by turn: the prompt tokens each later turn
evaluates, on the 8-slot model and on a one-slot model (what `awl run` loads: a session that
gets the context back evaluates its history again).

    .venv/bin/python bench/serve_throughput.py [--quick]
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import LABELS, model, print_section, table  # noqa: E402

from agentworld_local.domains import get_domain  # noqa: E402
from agentworld_local.engine.llama import LlamaBackend  # noqa: E402
from agentworld_local.engine.settings import SessionSettings  # noqa: E402
from agentworld_local.engine.types import SamplingConfig, ThinkBudget  # noqa: E402
from agentworld_local.engine.world import World  # noqa: E402

ACTIONS = ["ls -la", "cat README.md", "cd src", "git status", "python main.py", "pwd", "make test", "git diff"]
SLOTS = 8
N_CTX = 6144  # per session: the terminal prompt and a few turns


def world(backend: LlamaBackend, number: int) -> World:
    settings = SessionSettings(sampling=SamplingConfig(temperature=0.8, max_tokens=32),
                               think=ThinkBudget.parse("off"), seed=100 + number)
    return World(backend, get_domain("terminal"), settings)


def together(backend: LlamaBackend, count: int, turns: int) -> tuple[float, int, float]:
    """`count` sessions, each a first turn, then `turns` more at once: (seconds, tokens
    generated in them, sessions per decode)."""
    worlds = [world(backend, number) for number in range(count)]
    for number, each in enumerate(worlds):
        each.run_turn(ACTIONS[number % len(ACTIONS)])
    generated = [0] * count
    start = threading.Barrier(count + 1)

    def play(number: int) -> None:
        start.wait()
        for turn in range(1, turns + 1):
            record = worlds[number].run_turn(ACTIONS[(number + turn) % len(ACTIONS)])
            generated[number] += record.tokens["generated"]

    threads = [threading.Thread(target=play, args=(number,)) for number in range(count)]
    for thread in threads:
        thread.start()
    stats = backend._batcher.stats
    rounds, served = stats.rounds, stats.sequences
    start.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    per_decode = (stats.sequences - served) / max(1, stats.rounds - rounds)
    return seconds, sum(generated), per_decode


def interleaved(backend: LlamaBackend, sessions: int, turns: int) -> tuple[float, float]:
    """Sessions taking turns one after the other: median prompt tokens (evaluated, total) of turns 2 on."""
    worlds = [world(backend, number) for number in range(sessions)]
    evaluated, total = [], []
    for turn in range(turns):
        for number, each in enumerate(worlds):
            record = each.run_turn(ACTIONS[(number + turn) % len(ACTIONS)])
            if turn:
                evaluated.append(record.tokens["prompt_evaluated"])
                total.append(record.tokens["prompt_total"])
    return statistics.median(evaluated), statistics.median(total)


def load(path: Path, slots: int) -> LlamaBackend:
    return LlamaBackend(path, n_ctx=N_CTX, gpu_layers=0, parallel=slots, notice=lambda text: None)


def section(quick: bool) -> str:
    kinds, turns, counts = (["tiny"], 1, (1, 2)) if quick else (["big", "gemma"], 2, (1, 2, 4, 8))
    mixed = 2 if quick else SLOTS  # sessions interleaved turn by turn
    rows, spread = [], []
    for kind in kinds:
        path = model(kind)
        if path is None:
            rows.append([LABELS[kind], "not installed"] + [""] * 5)
            continue
        backend = load(path, SLOTS)
        try:
            alone = None
            for count in counts:
                seconds, generated, per_decode = together(backend, count, turns)
                rate = generated / seconds
                alone = alone or rate
                rows.append([LABELS[kind], count, f"{seconds:.2f}", generated, f"{rate:.1f}", f"{rate / alone:.2f}x",
                             f"{per_decode:.2f}"])
            many = interleaved(backend, mixed, turns + 1)
        finally:
            backend.close()
        one = load(path, 1)
        try:
            single = interleaved(one, mixed, turns + 1)
        finally:
            one.close()
        spread.append([LABELS[kind], f"{many[1]:.0f}", f"{many[0]:.0f}", f"{single[0]:.0f}",
                       f"{single[0] / max(1.0, many[0]):.1f}x"])
    return "\n\n".join([
        "## Several sessions over one model: throughput and prompt tokens per turn",
        f"One model loaded with {SLOTS} session slots (a llama.cpp sequence each, {N_CTX:,} tokens of context each, "
        "decoded together). Terminal sessions (the domain's system prompt, `--think off`, temperature 0.8, a seed "
        f"each, 32-token answers) take a first turn, then N of them run {turns} more turns at once, one thread "
        "each: generated tokens per second of all sessions together (wall clock) beside one session alone, and "
        "the sessions served per llama_decode. Measured in one run.",
        table(["model", "sessions at once", "seconds", "tokens generated", "tokens/s (all)", "vs one session",
               "sessions per decode"], rows),
        f"{mixed} sessions interleaved turn by turn ({turns + 1} turns each): median prompt tokens of a later turn, "
        f"and how many it evaluates on the {SLOTS}-slot model and on a one-slot model (`awl run`'s: a session that "
        "gets the context back evaluates its history again after the last checkpoint another session left that "
        "starts its prompt: the system prompt, and on a hybrid model turn 1's prompt up to its action, where that "
        "turn keeps its state).",
        table(["model", "prompt tokens", f"evaluated ({SLOTS} slots)", "evaluated (1 slot)", "1 slot / 8 slots"],
              spread),
    ])


def main() -> None:
    print_section(section, __doc__)


if __name__ == "__main__":
    main()
