"""What a larger context costs every turn, with the same history: why the default `--ctx` has
a ceiling.

The same three-turn session (greedy, thinking off) at several context sizes; measured on
the third turn: the time to evaluate its new prompt tokens and the decode speed, with the
ratio to the smallest context beside each. llama.cpp reserves the whole KV cache at load
and its attention mask spans it, so a context far larger than the session uses may slow
every batch.

    .venv/bin/python bench/context_cost.py [--quick]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import LABELS, model, print_section, table  # noqa: E402

from agentworld_local.domains import get_domain  # noqa: E402
from agentworld_local.engine.llama import LlamaBackend  # noqa: E402
from agentworld_local.engine.settings import SessionSettings  # noqa: E402
from agentworld_local.engine.types import SamplingConfig, ThinkBudget  # noqa: E402
from agentworld_local.engine.world import World  # noqa: E402

ACTIONS = ["ls -la", "cat main.py", "git status"]


def third_turn(path: Path, n_ctx: int, tokens: int) -> dict[str, float]:
    backend = LlamaBackend(path, n_ctx=n_ctx, gpu_layers=0)
    try:
        settings = SessionSettings(sampling=SamplingConfig(temperature=0.0, max_tokens=tokens),
                                   think=ThinkBudget.parse("off"), seed=1)
        world = World(backend, get_domain("terminal"), settings)
        record = [world.run_turn(action) for action in ACTIONS][-1]
        return {"prompt_tokens": record.tokens["prompt_evaluated"], "prompt_s": record.timings["prompt_s"],
                "tokens_per_s": record.timings["tokens_per_s"]}
    finally:
        backend.close()


def section(quick: bool) -> str:
    kind, sizes, tokens = ("tiny", (4096, 16384), 8) if quick else ("big", (4096, 16384, 32768, 65536), 32)
    path = model(kind)
    rows, base = [], None
    for n_ctx in sizes:
        r = third_turn(path, n_ctx, tokens)
        base = base or r
        rows.append([f"{n_ctx:,}", r["prompt_tokens"], f"{r['prompt_s'] * 1000:.0f}",
                     f"{r['prompt_s'] / max(base['prompt_s'], 1e-9):.2f}x", f"{r['tokens_per_s']:.1f}",
                     f"{r['tokens_per_s'] / max(base['tokens_per_s'], 1e-9):.2f}x"])
    return "\n\n".join([
        "## Context size against the cost of a turn",
        f"The same three-turn session on the {LABELS[kind]} (greedy, thinking off, {tokens} tokens per turn) loaded "
        "with each context size; the third turn's new prompt tokens and its decode speed, with the ratio to the "
        f"{sizes[0]:,}-token context. Without `--ctx` awl takes the largest context that fits, up to a ceiling, "
        "because of this cost.",
        table(["--ctx", "prompt tokens evaluated", "prompt ms", "/ smallest", "decode tok/s", "/ smallest"], rows),
    ])


def main() -> None:
    print_section(section, __doc__)


if __name__ == "__main__":
    main()
