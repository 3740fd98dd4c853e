"""A warm first turn's time to the first token: awl's system-prompt state cache against llama-server's prompt cache.

awl: one model loaded once (a LlamaBackend with the state cache on, in a temporary
directory). Session 1 of the terminal domain (its own system prompt, `--think off`, greedy)
evaluates the prompt and stores the system prompt's state; sessions 2..N are new sessions on
the same loaded model, each a first turn with another action, after a reset (the sequence
emptied, as when a session lands in a slot another system prompt's session held: its start
comes from the state held in memory; a runner's next session in the same slot restores the
prefix the slot still holds, which copies less).
Timed: from the action to the first answer token it streams (and to the first observation
text); counted: the prompt tokens the turn evaluated (only those after the cached system
prompt, when the cache hits).

llama-server: the same model file, n_ctx, threads and batch sizes, one slot, its prompt cache
as it ships (cache_prompt true). It gets exactly the token ids awl evaluated for each session:
session 1's untimed (that fills its cache), then each later session's, streamed (/completion,
greedy), right after awl's turn for that session, so the sides alternate. Timed: from the
request to the first streamed token, on the client; counted: its `timings.prompt_n`.

    .venv/bin/python bench/first_turn.py [--quick] [--llama-server PATH]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import LABELS, evaluated, model, table  # noqa: E402
from llama_server_binary import LlamaServer, binary_from_args, print_section_with_server  # noqa: E402

from agentworld_local.domains import get_domain  # noqa: E402
from agentworld_local.engine import events  # noqa: E402
from agentworld_local.engine.llama import LlamaBackend, loading  # noqa: E402
from agentworld_local.engine.llama.state_cache import StateCache  # noqa: E402
from agentworld_local.engine.settings import SessionSettings  # noqa: E402
from agentworld_local.engine.types import SamplingConfig, ThinkBudget  # noqa: E402
from agentworld_local.engine.world import World  # noqa: E402

N_CTX, N_BATCH, MAX_TOKENS = 8192, 512, 16
ACTIONS = ["ls -la", "cat README.md", "git status", "pwd", "make test", "cd src", "python main.py", "git diff",
           "uname -a", "df -h", "whoami", "echo hello"]
FIRST_TOKEN = (events.ThinkingDelta, events.AnswerDelta, events.UntaggedDelta)
SHOWN = (events.ObservationDelta, events.UntaggedDelta)


def awl_session(backend: LlamaBackend, action: str) -> dict[str, object]:
    """A new session's first turn: seconds to its first token and first observation text, tokens
    evaluated, and the prompt's token ids (what llama-server is sent)."""
    backend.reset()
    settings = SessionSettings(sampling=SamplingConfig(temperature=0, max_tokens=MAX_TOKENS),
                               think=ThinkBudget.parse("off"), seed=1)
    world = World(backend, get_domain("terminal"), settings)
    started = time.perf_counter()
    first = shown = None
    for event in world.step(action):
        now = time.perf_counter() - started
        if first is None and isinstance(event, FIRST_TOKEN):
            first = now
        if shown is None and isinstance(event, SHOWN):
            shown = now
        if isinstance(event, events.TurnFinished):
            record = event.record
    total = time.perf_counter() - started
    return {"first": first if first is not None else total, "shown": shown, "evaluated": record.tokens["prompt_evaluated"],
            "prompt": evaluated(backend)[: record.tokens["prompt_total"]]}


def server_session(server: LlamaServer, prompt: list[int]) -> tuple[float, int]:
    """(seconds to the first streamed token, tokens llama-server evaluated) for one prompt."""
    body = {"prompt": prompt, "n_predict": MAX_TOKENS, "temperature": 0, "cache_prompt": True}
    first, prompt_n = None, -1
    for seconds, event in server.stream(body):
        if first is None:
            first = seconds
        if event.get("stop") and "timings" in event:
            prompt_n = event["timings"]["prompt_n"]
    return first, prompt_n


def measure(path: Path, sessions: int, binary: Path | None, cache_dir: Path) -> dict[str, object]:
    cache = StateCache(cache_dir)
    cache.clear()
    backend = LlamaBackend(path, n_ctx=N_CTX, n_batch=N_BATCH, gpu_layers=0, state_cache=cache, notice=lambda text: None)
    server = None
    result: dict[str, object] = {"server": "not found"}
    try:
        store = awl_session(backend, ACTIONS[0])  # evaluates the system prompt and stores its state
        if binary is not None:
            params = backend._llm.context_params
            # Repacking as awl loads it: where awl turns it off (AMX CPUs), llama-server's crashes some models.
            extra = () if loading._extra_buffers_safe() else ("--no-repack",)
            try:
                server = LlamaServer(binary, path, n_ctx=N_CTX, threads=params.n_threads,
                                     threads_batch=params.n_threads_batch, n_batch=N_BATCH, n_ubatch=N_BATCH, extra=extra)
                server_first = server_session(server, store["prompt"])  # untimed: fills its cache
                result["server"] = "ran" + (" (--no-repack)" if extra else "")
            except (RuntimeError, OSError) as error:
                result["server"] = f"failed: {str(error).split(':')[0]}"
                server = None
        awl, served = [], []
        for number in range(1, sessions):
            awl.append(awl_session(backend, ACTIONS[number % len(ACTIONS)]))
            if server is not None:
                served.append(server_session(server, awl[-1]["prompt"]))
    finally:
        if server is not None:
            server.stop()
        backend.close()
    shown = [s["shown"] for s in awl if s["shown"] is not None]
    result.update({
        "prompt": statistics.median(len(s["prompt"]) for s in awl),
        "store_s": store["first"], "store_evaluated": store["evaluated"],
        "awl_s": statistics.median(s["first"] for s in awl),
        "awl_shown_s": statistics.median(shown) if shown else None,
        "awl_evaluated": statistics.median(s["evaluated"] for s in awl),
        "awl_all": [s["first"] for s in awl],
    })
    if served:
        result.update({"server_s": statistics.median(s for s, _ in served),
                       "server_evaluated": statistics.median(n for _, n in served),
                       "server_first_s": server_first[0], "server_first_evaluated": server_first[1],
                       "server_all": [s for s, _ in served]})
    return result


def section(quick: bool, binary: Path | None = None) -> str:
    binary = binary or binary_from_args()
    kinds, sessions = (["tiny"], 3) if quick else (["gemma", "big"], 9)
    rows = []
    with tempfile.TemporaryDirectory(prefix="awl-first-turn-") as directory:
        for kind in kinds:
            path = model(kind)
            if path is None:
                rows.append([LABELS[kind], "not installed"] + [""] * 6)
                continue
            r = measure(path, sessions, binary, Path(directory) / kind)
            served = "server_s" in r
            rows.append([
                LABELS[kind], f"{r['prompt']:,.0f}",
                f"{r['store_s']:.3f} ({r['store_evaluated']:,})",
                f"{r['awl_s']:.3f}" + (f" / {r['awl_shown_s']:.3f}" if r["awl_shown_s"] is not None else ""),
                f"{r['awl_evaluated']:,.0f}",
                f"{r['server_s']:.3f}" if served else r["server"],
                f"{r['server_evaluated']:,.0f} (session 1: {r['server_first_evaluated']:,})" if served else "",
                f"{r['awl_s'] / r['server_s']:.2f}x" if served else "",
                ", ".join(f"{t:.2f}" for t in r["awl_all"]) + (
                    " / " + ", ".join(f"{t:.2f}" for t in r["server_all"]) if served else ""),
            ])
    server_note = (f"llama-server: `{binary}`, repacking as awl loads." if binary else
                   "llama-server: not found (no `--llama-server`, AWL_LLAMA_SERVER or `llama-server` on PATH); "
                   "only awl is measured.")
    return "\n\n".join([
        "## A warm first turn's first token: awl's state cache against llama-server's prompt cache",
        f"A new terminal session's first turn on a loaded model (the domain's system prompt, `--think off`, greedy, "
        f"n_ctx {N_CTX:,}, n_batch = n_ubatch = {N_BATCH}, the same threads on both sides) after session 1 stored "
        f"the system prompt (awl: its state cache; llama-server: its slot's prompt cache, one slot). Median of "
        f"sessions 2..{sessions}, each a different action, awl and llama-server alternating on the same token ids. "
        "Seconds to the first answer token (awl also to the first observation text), and the prompt tokens each "
        f"evaluated. Target: awl / llama-server at most 1.3x. {server_note}",
        table(["model", "prompt tokens", "awl session 1, storing: s (evaluated)", "awl first token / observation (s)",
               "awl evaluated", "llama-server first token (s)", "llama-server evaluated", "awl / llama-server",
               "each session: awl / llama-server (s)"], rows),
    ])


if __name__ == "__main__":
    print_section_with_server(section, __doc__)
