"""Thinking budget against time per turn: `off`, 256, 1024 and `full`.

The same two-turn terminal session per budget (temperature 0.6, the same seed), on
Gemma 3 270M (real weights: its own length of answer) and on the big generated fixture
(random weights think until the budget ends them, so it shows the budget's cost as an
upper bound). Per turn: thinking tokens, answer tokens and seconds, averaged.

    .venv/bin/python bench/thinking_budget.py [--quick]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import LABELS, model, print_section, table  # noqa: E402

from agentworld_local.domains import get_domain  # noqa: E402
from agentworld_local.engine.llama import LlamaBackend  # noqa: E402
from agentworld_local.engine.settings import SessionSettings  # noqa: E402
from agentworld_local.engine.types import SamplingConfig, ThinkBudget  # noqa: E402
from agentworld_local.engine.world import World  # noqa: E402

ACTIONS = ["ls -la", "cat README.md", "python --version"]
FULL_CAP = 1536


def per_turn(backend: LlamaBackend, think: str, turns: int, max_tokens: int) -> dict[str, float]:
    # `full` ends only when the model closes its thinking: random weights may never, so there the
    # whole turn is capped at FULL_CAP tokens (thinking included).
    full = think == "full"
    sampling = SamplingConfig(temperature=0.6, max_tokens=FULL_CAP if full else max_tokens, max_tokens_counts_thinking=full)
    settings = SessionSettings(sampling=sampling, think=ThinkBudget.parse(think), seed=3)
    world = World(backend, get_domain("terminal"), settings)
    records = [world.run_turn(ACTIONS[i % len(ACTIONS)]) for i in range(turns)]
    backend.reset()
    return {
        "thinking": statistics.mean(r.tokens["thinking"] for r in records),
        "generated": statistics.mean(r.tokens["generated"] for r in records),
        "seconds": statistics.mean(r.timings["total_s"] for r in records),
    }


def section(quick: bool) -> str:
    kinds, budgets, turns, max_tokens = ((["tiny"], ["off", "32"], 1, 16) if quick
                                         else (["gemma", "big"], ["off", "256", "1024", "full"], 2, 128))
    rows, notes = [], []
    for kind in kinds:
        path = model(kind)
        if path is None:
            rows.append([LABELS[kind], "not installed", "", "", "", ""])
            continue
        backend = LlamaBackend(path, n_ctx=8192, gpu_layers=0)
        try:
            if not backend.info.template_thinks:
                notes.append(f"{LABELS[kind]}: its chat template has no thinking, so the budget has no effect there.")
            base = None
            for think in budgets:
                r = per_turn(backend, think, turns, max_tokens)
                base = base or r["seconds"]
                rows.append([LABELS[kind] if think == budgets[0] else "", f"`{think}`", f"{r['thinking']:.0f}",
                             f"{r['generated']:.0f}", f"{r['seconds']:.2f}", f"{r['seconds'] / base:.2f}x"])
        finally:
            backend.close()
    return "\n\n".join([
        "## Thinking budget",
        f"A {turns}-turn terminal session per budget (temperature 0.6, same seed, at most {max_tokens} answer tokens "
        f"after thinking), each from an empty context; per-turn means. `full` lets the model decide, within {FULL_CAP:,} "
        "tokens in all (random weights may think forever).",
        table(["model", "--think", "thinking tokens / turn", "tokens generated / turn (thinking included)", "s / turn", "/ `off`"], rows),
        *notes,
    ])


def main() -> None:
    print_section(section, __doc__)


if __name__ == "__main__":
    main()
