"""Decode speed: awl's sampling loop against a bare llama-cpp-python loop (target: at least 0.97).

Same model, same prompt tokens, same number of generated tokens, greedy on both sides (so
the tokens are the same, which is checked): awl runs a terminal turn as it runs by default
(`--speculate auto`) and, where that drafts, with `--speculate off` too (like for like: the
bare loop drafts nothing); the bare loop is llama.cpp's greedy sampler, `llama_decode` of one
token and detokenize, nothing else. The runs alternate and the median of each side is kept,
so a busy neighbour slows both.

    .venv/bin/python bench/decode_speed.py [--quick]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import llama_cpp  # noqa: E402 - the baseline is llama.cpp's own loop

from bench_models import evaluated, LABELS, model, print_section, repacking_as_awl, table  # noqa: E402

from agentworld_local.domains import get_domain  # noqa: E402
from agentworld_local.engine.llama import LlamaBackend  # noqa: E402
from agentworld_local.engine.settings import SessionSettings  # noqa: E402
from agentworld_local.engine.types import SamplingConfig, ThinkBudget  # noqa: E402
from agentworld_local.engine.world import World  # noqa: E402
from agentworld_local.models.offload_options import OffloadOptions  # noqa: E402

N_CTX = 4096


def awl_turn(path: Path, tokens: int, speculate: str = "auto") -> tuple[list[int], list[int], float, bool, bool]:
    """(prompt tokens, generated tokens, seconds generating, flash attention on, drafting on) of
    one greedy turn."""
    backend = LlamaBackend(path, n_ctx=N_CTX, gpu_layers=0, offload=OffloadOptions(speculate=speculate))
    try:
        settings = SessionSettings(sampling=SamplingConfig(temperature=0.0, max_tokens=tokens),
                                   think=ThinkBudget.parse("off"), seed=1)
        record = World(backend, get_domain("terminal"), settings).run_turn("ls -la")
        tokens = evaluated(backend)
        prompt_total = record.tokens["prompt_total"]
        return (tokens[:prompt_total], tokens[prompt_total:], record.timings["generate_s"], bool(backend.flash_attention),
                backend.speculate)
    finally:
        backend.close()


def bare_loop(path: Path, prompt: list[int], n: int, flash_attn: bool) -> tuple[list[int], float]:
    """(generated tokens, seconds) of llama.cpp's greedy loop after evaluating `prompt`, in a
    context set up as awl's (flash attention as it ran, full sliding-window cache)."""
    with repacking_as_awl():
        llm = llama_cpp.Llama(model_path=str(path), n_ctx=N_CTX, n_gpu_layers=0, n_batch=512, n_ubatch=512,
                              flash_attn=flash_attn, swa_full=True, verbose=False)
    sampler = llama_cpp.llama_sampler_init_greedy()
    try:
        llm.eval(prompt)
        out = []
        one = (llama_cpp.llama_token * 1)()
        started = time.perf_counter()
        for _ in range(n):
            token = llama_cpp.llama_sampler_sample(sampler, llm.ctx, -1)
            one[0] = token
            if llama_cpp.llama_decode(llm.ctx, llama_cpp.llama_batch_get_one(one, 1)) != 0:
                raise RuntimeError("llama_decode failed")
            llm.detokenize([token], special=True)
            out.append(token)
        return out, time.perf_counter() - started
    finally:
        llama_cpp.llama_sampler_free(sampler)
        llm.close()


def compare(path: Path, tokens: int, repeats: int) -> dict[str, object]:
    """Medians of tokens/s: awl by default ("auto"), awl without drafting ("off", where the
    default drafts) and the bare loop, alternating."""
    rates: dict[str, list[float]] = {"auto": [], "off": [], "bare": []}
    same, drafting, n = True, False, 0
    for _ in range(repeats):
        prompt, generated, seconds, flash_attn, drafting = awl_turn(path, tokens)
        n = len(generated)
        rates["auto"].append(n / seconds)
        if drafting:
            _, plain, seconds, _, _ = awl_turn(path, tokens, speculate="off")
            same = same and plain == generated
            rates["off"].append(n / seconds)
        bare, bare_s = bare_loop(path, prompt, n, flash_attn)
        same = same and bare == generated
        rates["bare"].append(n / bare_s)
    medians = {side: statistics.median(values) for side, values in rates.items() if values}
    return {"tokens": n, "drafting": drafting, "same": same, **medians}


def section(quick: bool) -> str:
    kinds, tokens, repeats = (["tiny"], 16, 1) if quick else (["big", "tiny", "gemma"], 256, 5)
    rows = []
    for kind in kinds:
        path = model(kind)
        if path is None:
            rows.append([LABELS[kind], "not installed", "", "", "", "", ""])
            continue
        r = compare(path, tokens, repeats)
        runs = [("`--speculate auto` (drafting on)", r["auto"]), ("`--speculate off`", r["off"])] if r["drafting"] \
            else [("`--speculate auto` (drafting off: as `off`)", r["auto"])]
        for index, (how, rate) in enumerate(runs):
            rows.append([LABELS[kind] if index == 0 else "", how, r["tokens"], f"{rate:.1f}", f"{r['bare']:.1f}",
                         f"{rate / r['bare']:.3f}", "yes" if r["same"] else "no"])
    return "\n\n".join([
        "## Decode speed against a bare llama-cpp-python loop",
        f"Tokens per second while generating, greedy, same prompt and token count on both sides (median of {repeats} "
        "alternating runs): awl's sampling loop (detokenizing, parsing the answer as it streams) against llama.cpp's "
        "greedy sampler + `llama_decode` + detokenize. awl runs as by default (`--speculate auto`) and, where that "
        "drafts, with `--speculate off` too: the bare loop drafts nothing, so that row compares like with like. "
        "Target: awl / bare at least 0.97 without drafting.",
        table(["model", "awl runs", "tokens", "awl tok/s", "bare loop tok/s", "awl / bare", "same tokens"], rows),
    ])


def main() -> None:
    print_section(section, __doc__)


if __name__ == "__main__":
    main()
