"""Self-speculation (prompt-lookup drafts, engine/llama/speculation.py): tokens per second with
`--speculate on` against `off` on the same model, prompt and token count, greedy on both sides
(the tokens are the same, which is checked), on a session whose observation repeats the
context (`cat` of a file shown before) and on one that does not. The runs alternate and the
median of each side is kept, so a busy neighbour slows both.

    .venv/bin/python bench/speculation.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import llama_cpp  # noqa: E402 - the rollback setting the section reports

from bench_models import LABELS, gpu_layers, model, table  # noqa: E402

from agentworld_local.engine.llama import LlamaBackend, checkpoints  # noqa: E402  (a module, not a name in __all__)
from agentworld_local.engine.llama.speculation import MISS_RUN  # noqa: E402
from agentworld_local.models.offload_options import OffloadOptions
from agentworld_local.engine.types import GenerationDone, GenerationStats, SamplingConfig, ThinkBudget  # noqa: E402

N_CTX = 4096
FILE = "\n".join(f"{n:>4}  def handler_{n}(request):  return respond(request, status={200 + n % 5})"
                 for n in range(1, 13))
SESSIONS = {
    # The observation is a file the context already shows: the drafter should be right often.
    "repeating": [
        {"role": "system", "content": "You simulate a Linux terminal. Answer with the command's output only."},
        {"role": "user", "content": "cat -n app.py"},
        {"role": "assistant", "content": FILE},
        {"role": "user", "content": "clear; cat -n app.py"},
    ],
    # Fresh prose: little to look up.
    "non-repeating": [
        {"role": "system", "content": "You are a storyteller."},
        {"role": "user", "content": "Tell a short story about a lighthouse keeper and a storm."},
    ],
}


def turn(backend: LlamaBackend, messages: list[dict[str, str]], tokens: int) -> tuple[str, GenerationStats]:
    backend.reset()
    sampling = SamplingConfig(temperature=0.0, max_tokens=tokens, repetition_guard=False, stop_at_observation=False)
    for event in backend.generate(messages, sampling=sampling, think=ThinkBudget.parse("off"), seed=1):
        if isinstance(event, GenerationDone):
            return event.raw_output, event.stats
    raise RuntimeError("the generation ended without GenerationDone")


def measure(path: Path, tokens: int, repeats: int) -> tuple[list[list[object]], str]:
    off = LlamaBackend(path, n_ctx=N_CTX, gpu_layers=gpu_layers(), offload=OffloadOptions(speculate="off"))
    on = LlamaBackend(path, n_ctx=N_CTX, gpu_layers=gpu_layers(), offload=OffloadOptions(speculate="on"))
    # What `auto` decided for this model here, and drafting with its pause after misses.
    auto = LlamaBackend(path, n_ctx=N_CTX, gpu_layers=gpu_layers(), offload=OffloadOptions(speculate="auto"))
    rows = []
    try:
        for name, messages in SESSIONS.items():
            rates: dict[str, list[float]] = {"off": [], "on": [], "auto": []}
            same, drafted, accepted, generated, auto_drafted = True, 0, 0, 0, 0
            for _ in range(repeats):
                text_off, stats_off = turn(off, messages, tokens)
                text_on, stats_on = turn(on, messages, tokens)
                text_auto, stats_auto = turn(auto, messages, tokens)
                same = same and text_on == text_off and text_auto == text_off
                rates["off"].append(stats_off.tokens_per_s)
                rates["on"].append(stats_on.tokens_per_s)
                rates["auto"].append(stats_auto.tokens_per_s)
                drafted, accepted, generated = stats_on.drafted, stats_on.accepted, stats_on.generated_tokens
                auto_drafted = stats_auto.drafted
            rate_off, rate_on, rate_auto = (statistics.median(rates[mode]) for mode in ("off", "on", "auto"))
            rows.append([name, generated, f"{rate_off:.1f}", f"{rate_on:.1f}", f"{rate_on / rate_off:.2f}",
                         drafted, accepted, f"{accepted / drafted:.0%}" if drafted else "-",
                         f"on, drafts of {auto.verify_width - 1}" if auto.speculate else "off",
                         f"{rate_auto / rate_off:.2f}", auto_drafted,
                         "yes" if same else "NO"])
        snapshot = ""
        if on.is_stateful:  # how a rejected draft's recurrent state is rolled back, and what a copy would cost
            started = time.perf_counter()
            size = len(checkpoints.copy_state(on._ctx))
            snapshot = (f"rejected drafts rolled back through llama.cpp's recurrent snapshots "
                        f"(n_rs_seq {llama_cpp.llama_n_rs_seq(on._ctx)}); copying the {size / 1024:.0f} KiB state "
                        f"instead takes {(time.perf_counter() - started) * 1000:.2f} ms a verify")
    finally:
        off.close()
        on.close()
        auto.close()
    return rows, snapshot


def section(quick: bool) -> str:
    tokens, repeats = (24, 1) if quick else (96, 3)
    header = ["session", "tokens", "off tok/s", "on tok/s", "on / off", "drafted", "accepted", "acceptance",
              "auto", "auto / off", "auto drafted", "same tokens"]
    parts = ["## Self-speculation (prompt lookup)", "",
             f"Greedy decode of {tokens} tokens with `--speculate on` against `off` (alternating, median of "
             f"{repeats}), CPU only, on a session whose answer repeats a file the context shows and on fresh prose; "
             "drafts of up to 8 tokens after a 2-4 token match, verified in one batch. A random-weight fixture "
             "copies nothing, so its acceptance shows only its own loops; Gemma's shows a real model's. A "
             "verify batch is not always computed as one-token decodes are (Gemma 3 on this CPU: from 4 rows; a "
             "hybrid model's recurrent layers: from 2), so `on`'s greedy answer can branch at a near-tie "
             "(`same tokens`: docs/speculation.md, \"Identical tokens: what holds\"). `auto`: what "
             "`--speculate auto` chose for the model (attention-only: drafts as long as the batches the load's "
             "probe found computed like one-token decodes allow; hybrid: off) and its rate, drafting paused after "
             f"{MISS_RUN} drafts in a row kept nothing."]
    for kind in ("big", "gemma"):
        path = model(kind)
        if path is None:
            parts += ["", f"{LABELS[kind]}: not installed here."]
            continue
        rows, snapshot = measure(path, tokens, repeats)
        parts += ["", f"**{LABELS[kind]}**" + (f" ({snapshot})" if snapshot else ""), "",
                  table(header, rows)]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    print(section(parser.parse_args().quick))
