"""Resident memory per turn over a long session, with the turn checkpoints' bytes beside it.

Each turn keeps one checkpoint (the recurrent state at the turn's end), so the process is
expected to grow by that much per turn and not more: the table shows the resident set
(RSS) after each turn, the checkpoint bytes, and the growth beyond the checkpoints since
turn 1. The model is loaded in a child process of its own, so nothing this script holds
counts.

    .venv/bin/python bench/memory_growth.py [--quick] [--turns 40]
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import evaluated, LABELS, model, print_section, table  # noqa: E402

ACTIONS = ["ls -la", "cd src", "cat main.py", "python main.py", "git status", "git diff", "pwd", "ls", "make test", "C-c"]
MiB = 2**20


def session(path: str, turns: int, tokens: int, flash_attn: str) -> list[dict[str, int]]:
    """In this process: per turn, RSS and checkpoint bytes (the child's side of `measure`)."""
    import gc

    import psutil

    from agentworld_local.domains import get_domain
    from agentworld_local.engine.llama import LlamaBackend
    from agentworld_local.engine.settings import SessionSettings
    from agentworld_local.engine.types import SamplingConfig, ThinkBudget
    from agentworld_local.engine.world import World
    from agentworld_local.models.offload_options import OffloadOptions

    process = psutil.Process()
    backend = LlamaBackend(path, n_ctx=16384, gpu_layers=0, offload=OffloadOptions(flash_attn=flash_attn))
    settings = SessionSettings(sampling=SamplingConfig(temperature=0.6, max_tokens=tokens), think=ThinkBudget.parse("off"), seed=1)
    world = World(backend, get_domain("terminal"), settings)
    rows = []
    for i in range(turns):
        world.run_turn(ACTIONS[i % len(ACTIONS)])
        gc.collect()
        rows.append({"turn": i + 1, "rss": process.memory_info().rss, "checkpoints": backend.checkpoint_bytes(),
                     "tokens": len(evaluated(backend))})
    backend.close()
    return rows


def measure(path: Path, turns: int, tokens: int, flash_attn: str = "auto") -> list[dict[str, int]]:
    code = (f"import sys, json; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); import memory_growth; "
            f"print(json.dumps(memory_growth.session({str(path)!r}, {turns}, {tokens}, {flash_attn!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the session's process exited {done.returncode}: {done.stderr.strip()[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def growth_rows(rows: list[dict[str, int]], every: int) -> list[list[object]]:
    first = rows[0]
    out = []
    for row in rows:
        if row["turn"] != 1 and row["turn"] % every and row is not rows[-1]:
            continue
        grown, kept = row["rss"] - first["rss"], row["checkpoints"] - first["checkpoints"]
        out.append([row["turn"], f"{row['tokens']:,}", f"{row['rss'] / MiB:.1f}", f"{grown / MiB:+.1f}",
                    f"{row['checkpoints'] / MiB:.1f}", f"{kept / MiB:+.1f}", f"{(grown - kept) / MiB:+.1f}"])
    return out


def section(quick: bool) -> str:
    kind, turns, tokens, every = ("tiny", 6, 8, 2) if quick else ("big", 40, 24, 5)
    path = model(kind)
    parts = ["## Resident memory per turn",
             f"A {turns}-turn terminal session on the {LABELS[kind]} ({tokens} tokens per turn) in a child process: "
             "its resident set after each turn beside the bytes its turn checkpoints hold. The last column is what "
             "the process gained since turn 1 beyond the checkpoints (it should stay near 0; below 0 when the "
             "checkpoints reuse memory llama.cpp had already taken and freed)."]
    for flash in ("auto", "off"):
        rows = measure(path, turns, tokens, flash)
        parts.append(f"Flash attention `{flash}`:")
        parts.append(table(["turn", "tokens in context", "RSS MiB", "RSS since turn 1", "checkpoints MiB",
                            "checkpoints since turn 1", "beyond checkpoints MiB"], growth_rows(rows, every)))
    return "\n\n".join(parts)


def main() -> None:
    print_section(section, __doc__)


if __name__ == "__main__":
    main()
