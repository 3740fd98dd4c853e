"""Per-turn cost of copying a turn checkpoint (the recurrent state) out of llama.cpp.

Prints numbers measured in one run (no pass/fail): the old copy through a Python list
(`bytes(buffer[:written])`) against the direct copy the backend uses
(`ctypes.string_at(buffer, written)`), for the state of the bench-size hybrid fixture
read from llama.cpp, and for a buffer the size of the real model's state (~60 MB).

    .venv/bin/python bench/checkpoint_copy.py [--repeats 20] [--real-mb 60] [--section [--quick]]
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import llama_cpp  # noqa: E402 - a benchmark of the llama.cpp path itself

from bench_models import bench_model, repacking_as_awl, table  # noqa: E402


def per_call_ms(copy: Callable[[], bytes], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        copy()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def timings(buffer: ctypes.Array, written: int, repeats: int) -> tuple[float, float]:
    """(old list copy ms, string_at ms) per copy."""
    old = per_call_ms(lambda: bytes(buffer[:written]), repeats)
    new = per_call_ms(lambda: ctypes.string_at(buffer, written), repeats)
    assert bytes(buffer[:written]) == ctypes.string_at(buffer, written)
    return old, new


def compare(label: str, buffer: ctypes.Array, written: int, repeats: int) -> None:
    old, new = timings(buffer, written, repeats)
    print(f"{label}: {written / 1e6:.2f} MB  old list copy {old:8.2f} ms/turn  string_at {new:7.3f} ms/turn  ({old / new:.0f}x)")


def section(quick: bool) -> str:
    """The report's section: both copies of the big fixture's state and of a real-size one."""
    repeats, real_mb = (3, 4) if quick else (20, 60)
    buffer, written = fixture_state(bench_model())
    cases = [("big qwen35moe fixture's state", buffer, written, repeats)]
    size = real_mb * 1_000_000
    cases.append((f"a {real_mb} MB state (the real model's is about 60 MB)", (ctypes.c_uint8 * size)(), size,
                  max(1, repeats // 10)))
    rows = []
    for label, buf, n, count in cases:
        old, new = timings(buf, n, count)
        rows.append([label, f"{n / 1e6:.2f}", f"{old:.2f}", f"{new:.3f}", f"{old / new:.0f}x"])
    return "\n\n".join([
        "## Checkpoint copy per turn",
        "Copying a turn checkpoint (the recurrent state) out of llama.cpp, median per copy: the old copy through a "
        "Python list (`bytes(buffer[:n])`) against the direct copy the backend uses (`ctypes.string_at`).",
        table(["state", "MB", "list copy ms", "string_at ms", "ratio"], rows),
    ])


def fixture_state(model: Path) -> tuple[ctypes.Array, int]:
    with repacking_as_awl():
        llm = llama_cpp.Llama(model_path=str(model), n_ctx=2048, n_gpu_layers=0, verbose=False)
    llm.eval(llm.tokenize(b"<|im_start|>user\nls -la<|im_end|>\n" * 8, add_bos=False, special=True))
    flags = llama_cpp.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY
    size = llama_cpp.llama_state_seq_get_size_ext(llm.ctx, 0, flags)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data_ext(llm.ctx, buffer, size, 0, flags)
    llm.close()
    return buffer, written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", action="store_true", help="print the report's section instead")
    parser.add_argument("--quick", action="store_true", help="with --section: small sizes")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--real-mb", type=int, default=60, help="size of the real model's state, in MB")
    args = parser.parse_args()
    if args.section:
        print(section(args.quick))
        return
    with tempfile.TemporaryDirectory() as directory:
        buffer, written = fixture_state(bench_model(Path(directory)))
        compare("bench fixture state", buffer, written, args.repeats)
    size = args.real_mb * 1_000_000
    big = (ctypes.c_uint8 * size)()
    compare(f"a {args.real_mb} MB state", big, size, max(1, args.repeats // 10))


if __name__ == "__main__":
    main()
