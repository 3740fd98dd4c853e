"""Tokens per second for each way of placing a model: CPU, a layer split, experts in RAM, all on the GPU.

Prints one line per layout (no pass/fail): prompt and decode speed, GPU layers, the experts
llama.cpp placed in RAM (from its log), flash attention and the compute buffer it allocated.
Loads go through LlamaBackend, so the options reach llama.cpp the way `awl run` passes them.
On a CPU-only build every layout runs on the CPU (the numbers then show only that the
options load and run); bench/gpu_check.sh runs this on a CUDA build.

    .venv/bin/python bench/offload_speed.py [--model FILE.gguf ...] [--prompt 512] [--decode 64]
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

import numpy as np

from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.fixtures.tiny_gguf import write_qwen35moe_fixture
from agentworld_local.models.inspect import inspect_gguf
from agentworld_local.models.offload_options import ALL_LAYERS, OffloadOptions

# The wider qwen35moe fixture of bench/turn_cost.py (hidden 512), with more experts so that
# they are most of the bytes, as in the real model.
BENCH_SIZES = dict(n_embd=512, head_dim=64, n_rot=16, rope_sections=[4, 2, 2, 0], ssm_d_state=64, n_ff_exp=256,
                   n_ff_shexp=512, n_expert=32, n_expert_used=4)


def layouts(path: Path) -> list[tuple[str, str | int, OffloadOptions]]:
    summary = inspect_gguf(path)
    half = max(1, summary.n_layers // 2)
    rows: list[tuple[str, str | int, OffloadOptions]] = [
        ("cpu", 0, OffloadOptions()),
        ("layers (half)", half, OffloadOptions()),
    ]
    if summary.expert_count:
        rows.append(("experts in RAM", "all", OffloadOptions(cpu_moe=ALL_LAYERS)))
        rows.append(("experts of half in RAM", "all", OffloadOptions(cpu_moe=half)))
    rows.append(("full", "all", OffloadOptions()))
    rows.append(("full, no flash attn", "all", OffloadOptions(flash_attn="off")))
    return rows


def measure(path: Path, gpu_layers: str | int, options: OffloadOptions, prompt: int, decode: int) -> dict[str, object]:
    backend = LlamaBackend(path, n_ctx=max(2048, prompt + decode + 16), gpu_layers=gpu_layers, offload=options)
    try:
        llm = backend._llm
        rng = np.random.default_rng(0)
        tokens = [int(t) for t in rng.integers(10, min(llm.n_vocab(), 30000), prompt)]
        started = time.perf_counter()
        llm.eval(tokens)
        prompt_s = time.perf_counter() - started
        started = time.perf_counter()
        for token in tokens[:decode]:  # one token per decode: the cost does not depend on which
            llm.eval([token])
        decode_s = time.perf_counter() - started
        log = backend.load_log
        compute = sum(float(m) for m in re.findall(r"compute buffer size =\s*([\d.]+) MiB", log))
        offloaded = re.search(r"offloaded (\d+/\d+) layers to GPU", log)
        return {
            "prompt_tps": prompt / prompt_s, "decode_tps": decode / decode_s,
            "offloaded": offloaded.group(1) if offloaded else "0",
            "experts_in_ram": len(backend.overridden_tensors),
            "flash_attn": {True: "on", False: "off", None: "?"}[backend.flash_attention],
            "compute_mib": compute,
        }
    finally:
        backend.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, action="append", help="GGUF files (default: the wide qwen35moe fixture)")
    parser.add_argument("--prompt", type=int, default=512, help="prompt tokens evaluated in one batch")
    parser.add_argument("--decode", type=int, default=64, help="tokens decoded one at a time (at most --prompt)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        models = args.model or [write_qwen35moe_fixture(Path(tmp) / "bench-qwen35moe-moe.gguf", **BENCH_SIZES)]
        for path in models:
            print(f"\n{path.name}")
            print(f"  {'layout':<24} {'GPU layers':>10} {'experts in RAM':>15} {'flash attn':>10} "
                  f"{'compute MiB':>11} {'prompt tok/s':>13} {'decode tok/s':>13}")
            for name, gpu_layers, options in layouts(path):
                row = measure(path, gpu_layers, options, args.prompt, args.decode)
                print(f"  {name:<24} {row['offloaded']:>10} {row['experts_in_ram']:>15} {row['flash_attn']:>10} "
                      f"{row['compute_mib']:>11.1f} {row['prompt_tps']:>13.1f} {row['decode_tps']:>13.1f}", flush=True)


if __name__ == "__main__":
    main()
