"""A new session's time to its first observation token, with and without the system-prompt state cache.

A new terminal session (the domain's own system prompt, `--think off`, greedy) on a model
already loaded: the time from the action to the first observation text it streams. Without
the cache every new session evaluates the system prompt; with it the first session
evaluates and stores it, and later sessions load its state from disk. Each new session is a
reset of the loaded model (what the runner does), so model load time is not counted; the
state file is read from the page cache, as on a machine that ran the model recently.

    .venv/bin/python bench/state_cache.py [--quick]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import LABELS, model, print_section, table  # noqa: E402

from agentworld_local.domains import get_domain  # noqa: E402
from agentworld_local.engine import events  # noqa: E402
from agentworld_local.engine.llama import LlamaBackend  # noqa: E402
from agentworld_local.engine.llama.state_cache import StateCache  # noqa: E402
from agentworld_local.engine.settings import SessionSettings  # noqa: E402
from agentworld_local.engine.types import SamplingConfig, ThinkBudget  # noqa: E402
from agentworld_local.engine.world import World  # noqa: E402

SHOWN = (events.ObservationDelta, events.UntaggedDelta)


def new_session(backend: LlamaBackend, action: str) -> tuple[float, dict[str, int]]:
    """(seconds to the first observation text, the turn's token counts) of a new session's first turn."""
    backend.reset()
    settings = SessionSettings(sampling=SamplingConfig(temperature=0, max_tokens=8), think=ThinkBudget.parse("off"), seed=1)
    world = World(backend, get_domain("terminal"), settings)
    started = time.perf_counter()
    first = None
    for event in world.step(action):
        if first is None and isinstance(event, SHOWN):
            first = time.perf_counter() - started
        if isinstance(event, events.TurnFinished):
            tokens = event.record.tokens
    return (first if first is not None else time.perf_counter() - started), tokens


def measure(path: Path, sessions: int, cache_dir: Path) -> dict[str, float]:
    actions = ["ls -la", "cat README.md", "git status", "pwd", "make test"]
    cold = LlamaBackend(path, n_ctx=8192, gpu_layers=0)
    try:
        off = [new_session(cold, actions[i % len(actions)]) for i in range(sessions)]
    finally:
        cold.close()
    cache = StateCache(cache_dir)
    cache.clear()
    cached = LlamaBackend(path, n_ctx=8192, gpu_layers=0, state_cache=cache)
    try:
        store = new_session(cached, actions[0])  # evaluates the system prompt and writes its state
        hits = [new_session(cached, actions[(i + 1) % len(actions)]) for i in range(sessions)]
    finally:
        cached.close()
    return {
        "prompt": statistics.median(tokens["prompt_total"] for _, tokens in hits),
        "off_evaluated": statistics.median(tokens["prompt_evaluated"] for _, tokens in off),
        "hit_evaluated": statistics.median(tokens["prompt_evaluated"] for _, tokens in hits),
        "off_s": statistics.median(seconds for seconds, _ in off),
        "store_s": store[0],
        "hit_s": statistics.median(seconds for seconds, _ in hits),
        "state_bytes": cache.info().bytes,
    }


def section(quick: bool) -> str:
    kinds, sessions = (["tiny"], 1) if quick else (["big", "tiny", "gemma"], 3)
    rows = []
    with tempfile.TemporaryDirectory(prefix="awl-state-cache-") as directory:
        for kind in kinds:
            path = model(kind)
            if path is None:
                rows.append([LABELS[kind], "not installed", "", "", "", "", ""])
                continue
            r = measure(path, sessions, Path(directory) / kind)
            rows.append([LABELS[kind], f"{r['prompt']:,.0f}: {r['off_evaluated']:,.0f} / {r['hit_evaluated']:,.0f}",
                         f"{r['off_s']:.3f}", f"{r['store_s']:.3f}", f"{r['hit_s']:.3f}", f"{r['hit_s'] / r['off_s']:.2f}x",
                         f"{r['state_bytes'] / 1e6:.1f}"])
    return "\n\n".join([
        "## A new session's first observation token: the system-prompt state cache",
        f"A new terminal session's first turn on a loaded model (the domain's system prompt, `--think off`, greedy): "
        f"seconds from the action to the first observation text, median of {sessions} sessions; without the cache, "
        "the first session with an empty cache (it evaluates the prompt and writes its state), and later sessions "
        "(they load the state from disk). Raw seconds beside the ratio, measured in one run.",
        table(["model", "prompt tokens: evaluated without / with a hit", "no cache (s)", "first, storing (s)",
               "cache hit (s)", "hit / no cache", "state on disk (MB)"], rows),
    ])


def main() -> None:
    print_section(section, __doc__)


if __name__ == "__main__":
    main()
