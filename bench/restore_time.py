"""Undo and fork restore time against the length of the history (it should be flat).

A session whose first action carries a long text (1k, 10k, 50k tokens of history) and two
short turns after it; then an undo of the last turn and a fork at turn 2, each followed by
a turn. Measured: the time to restore the checkpoint where that turn's answer began (recurrent
state + trimming the attention cache) and the tokens re-evaluated, beside the time the same history took to
evaluate once (what a restore without checkpoints would cost again).

    .venv/bin/python bench/restore_time.py [--quick]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import evaluated, LABELS, model, print_section, table  # noqa: E402

from agentworld_local.domains import get_domain  # noqa: E402
from agentworld_local.engine.llama import LlamaBackend  # noqa: E402
from agentworld_local.engine.settings import SessionSettings  # noqa: E402
from agentworld_local.engine.types import SamplingConfig, ThinkBudget  # noqa: E402
from agentworld_local.engine.world import World  # noqa: E402

REPEATS = 3
_WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split()


def long_action(backend: LlamaBackend, tokens: int) -> str:
    """`cat <<EOF` of a made-up file about `tokens` tokens long (measured with the model's tokenizer)."""
    line = " ".join(_WORDS) + "\n"
    per_line = max(1, len(backend.tokenize(line)))
    body = "".join(f"{i} {line}" for i in range(max(1, tokens // (per_line + 2))))
    return f"cat > notes.txt <<'EOF'\n{body}EOF"


def measure(path: Path, history: int, tokens: int) -> dict[str, float]:
    backend = LlamaBackend(path, n_ctx=history + 8192, gpu_layers=0)
    try:
        settings = SessionSettings(sampling=SamplingConfig(temperature=0.0, max_tokens=tokens),
                                   think=ThinkBudget.parse("off"), seed=1)
        world = World(backend, get_domain("terminal"), settings)
        first = world.run_turn(long_action(backend, history))
        world.run_turn("ls")
        last = world.run_turn("pwd")
        undo_ms, undo_tokens, fork_ms, fork_tokens, same = [], [], [], [], True
        for _ in range(REPEATS):  # the median: a first restore may page memory in
            world.undo()
            redo = world.run_turn("pwd")
            forked = world.fork(2).run_turn("pwd")
            undo_ms.append(redo.timings["restore_s"] * 1000)
            fork_ms.append(forked.timings["restore_s"] * 1000)
            undo_tokens.append(redo.tokens["prompt_evaluated"])
            fork_tokens.append(forked.tokens["prompt_evaluated"])
            same = same and redo.raw_output == last.raw_output == forked.raw_output
        return {
            "history": len(evaluated(backend)),
            "first_prompt_s": first.timings["prompt_s"],
            "undo_ms": statistics.median(undo_ms),
            "undo_tokens": max(undo_tokens),
            "fork_ms": statistics.median(fork_ms),
            "fork_tokens": max(fork_tokens),
            "same": float(same),
        }
    finally:
        backend.close()


def section(quick: bool) -> str:
    # The test fixture in both modes: a 50k-token history is evaluated once, at the hybrid's prompt speed.
    kind, sizes, tokens = ("tiny", (256, 1024), 4) if quick else ("tiny", (1_000, 10_000, 50_000), 8)
    path = model(kind)
    rows, results = [], []
    for size in sizes:
        result = measure(path, size, tokens)
        results.append(result)
        rows.append([f"{size:,}", f"{result['history']:,}", f"{result['first_prompt_s']:.2f}",
                     f"{result['undo_ms']:.2f}", result["undo_tokens"], f"{result['fork_ms']:.2f}", result["fork_tokens"],
                     "yes" if result["same"] else "no"])
    ratio = (f"Largest / smallest history: undo restore {results[-1]['undo_ms'] / max(results[0]['undo_ms'], 1e-6):.2f}x, "
             f"fork restore {results[-1]['fork_ms'] / max(results[0]['fork_ms'], 1e-6):.2f}x, while the history "
             f"has {sizes[-1] / sizes[0]:.0f}x the tokens.")
    return "\n\n".join([
        "## Undo and fork restore time",
        f"On the {LABELS[kind]}: a first action carrying a long text, two short turns, then an undo of the last "
        f"turn and a fork at turn 2, each followed by the same turn (greedy; median of {REPEATS}). Restore = setting the "
        "checkpoint where the re-run turn's answer began (recurrent state) and trimming the attention cache; "
        "the turn then evaluates the end of its generation prompt that the history does not keep; beside it the time the history took to "
        "evaluate once, which a context without checkpoints pays again.",
        table(["history tokens (besides the system prompt)", "tokens in context", "history eval s (once)", "undo restore ms", "undo tokens evaluated",
               "fork restore ms", "fork tokens evaluated", "same output"], rows),
        ratio,
    ])


def main() -> None:
    print_section(section, __doc__)


if __name__ == "__main__":
    main()
