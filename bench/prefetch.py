"""Time to the first answer token after the action, with and without prefetch between turns.

A terminal session (the domain's own system prompt, `--think off`, greedy) played twice on a
loaded model with the same actions: once as before (each turn evaluates its known start, the
last answer's history form and the turn prompt up to the action, after the action comes),
once with that known start evaluated before the action (`LlamaBackend.prefetch`, what the
runner does while the user reads and types; not timed, as the user's reading is not). Timed:
from the action to the first token the model answers. Also the share of a turn's evaluated
tokens that were known before its action, and whether both plays gave the same answers.

    .venv/bin/python bench/prefetch.py [--quick]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import LABELS, model, print_section, table  # noqa: E402

from agentworld_local.domains import get_domain  # noqa: E402
from agentworld_local.engine import events  # noqa: E402
from agentworld_local.engine.llama import LlamaBackend  # noqa: E402
from agentworld_local.engine.settings import SessionSettings  # noqa: E402
from agentworld_local.engine.types import SamplingConfig, ThinkBudget  # noqa: E402
from agentworld_local.engine.world import World  # noqa: E402

ACTIONS = ["ls -la", "cat README.md", "cd src", "git status", "python main.py", "pwd", "make test", "git diff"]
FIRST_TOKEN = (events.ThinkingDelta, events.AnswerDelta, events.UntaggedDelta)


def play(backend: LlamaBackend, turns: int, prefetch: bool) -> list[tuple[float, int, int, str]]:
    """Per turn: (seconds from the action to the first answer token, tokens evaluated before
    the action, tokens evaluated after it, the raw answer)."""
    backend.reset()
    settings = SessionSettings(sampling=SamplingConfig(temperature=0, max_tokens=48), think=ThinkBudget.parse("off"), seed=1)
    world = World(backend, get_domain("terminal"), settings)
    out = []
    for number in range(turns):
        before = world.backend.prefetch(world.next_turn_prefix()) if prefetch else 0  # the session's, as the runner's
        started = time.perf_counter()
        first = None
        for event in world.step(ACTIONS[number % len(ACTIONS)]):
            if first is None and isinstance(event, FIRST_TOKEN):
                first = time.perf_counter() - started
            if isinstance(event, events.TurnFinished):
                record = event.record
        out.append((first if first is not None else time.perf_counter() - started, before,
                    record.tokens["prompt_evaluated"], record.raw_output))
    return out


def measure(path: Path, turns: int) -> dict[str, float | bool]:
    backend = LlamaBackend(path, n_ctx=8192, gpu_layers=0, notice=lambda text: None)
    try:
        off, on = play(backend, turns, prefetch=False), play(backend, turns, prefetch=True)
    finally:
        backend.close()
    later_known = sum(before for _, before, _, _ in on[1:])
    later_all = sum(before + after for _, before, after, _ in on[1:])
    return {
        "first_off": off[0][0], "first_on": on[0][0],
        "later_off": statistics.median(t for t, *_ in off[1:]), "later_on": statistics.median(t for t, *_ in on[1:]),
        "first_share": on[0][1] / (on[0][1] + on[0][2]),
        "later_share": later_known / later_all if later_all else 0.0,
        "later_after": statistics.median(after for _, _, after, _ in on[1:]),
        "same": [raw for *_, raw in off] == [raw for *_, raw in on],
    }


def section(quick: bool) -> str:
    kinds, turns = (["tiny"], 3) if quick else (["big", "gemma", "tiny"], 8)
    rows = []
    for kind in kinds:
        path = model(kind)
        if path is None:
            rows.append([LABELS[kind], "not installed"] + [""] * 7)
            continue
        r = measure(path, turns)
        rows.append([LABELS[kind], f"{r['first_off']:.3f}", f"{r['first_on']:.3f}", f"{r['first_share']:.0%}",
                     f"{r['later_off']:.3f}", f"{r['later_on']:.3f}", f"{r['later_on'] / r['later_off']:.2f}x",
                     f"{r['later_share']:.0%} ({r['later_after']:.0f} after)", "yes" if r["same"] else "NO"])
    return "\n\n".join([
        "## Time to the first answer token after the action: prefetch between turns",
        f"A terminal session of {turns} turns (the domain's system prompt, `--think off`, greedy, 48-token answers) "
        "played twice on a loaded model: without prefetch, and with each turn's known start (the last answer's "
        "history form and the turn prompt up to the action; for turn 1 the system prompt, task and state) evaluated "
        "before the action, as the runner does while the user types. Seconds from the action to the first answer "
        "token (turn 1 alone; turns 2 on, median), the share of a turn's evaluated tokens known before its action "
        "(with the median tokens left after it), and whether both plays answered alike. Raw seconds beside the "
        "ratio, measured in one run.",
        table(["model", "turn 1 without (s)", "turn 1 with (s)", "turn 1 known before", "later without (s)",
               "later with (s)", "with / without", "later known before", "same answers"], rows),
    ])


def main() -> None:
    print_section(section, __doc__)


if __name__ == "__main__":
    main()
