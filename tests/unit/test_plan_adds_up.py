"""`awl models info FILE --plan` adds up: the weights are the file's tensor bytes (less an MTP
layer llama.cpp skips), split into parts that sum to them, for every kind of fixture (plain
attention, a hybrid MoE, one with an MTP block, one whose output head is its embedding as
Gemma's is, one that declares an MTP block it does not hold).

A report had "weights 405.2 MiB (18 attention x 3.6 MiB)" for a 241.4 MiB Gemma file: its tied
head was counted twice and the parts listed did not make the total.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import gguf
import pytest
from rich.console import Console

from agentworld_local.cli.models_info import collect, render
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.fixtures.tiny_gguf import write_llama_fixture, write_qwen35moe_fixture
from agentworld_local.models.inspect import inspect_gguf
from agentworld_local.models.memory import estimate_memory
from agentworld_local.models.units import format_bytes

_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
_SIZE = re.compile(r"(\d+(?:\.\d)?) (B|KiB|MiB|GiB)\b")


@pytest.fixture(scope="module")
def files(tmp_path_factory, llama_gguf, qwen_gguf) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("plans")
    return {
        "llama": llama_gguf,
        "hybrid": qwen_gguf,
        "mtp": write_qwen35moe_fixture(folder / "mtp.gguf", mtp=True),
        "tied": write_llama_fixture(folder / "tied.gguf", tied_output=True),
        "declared": write_qwen35moe_fixture(folder / "declared.gguf", mtp="declared"),
    }


def _tensor_bytes(path: Path, *, skip_block: int | None = None) -> int:
    """The tensors' data sizes from the stock gguf reader (not awl's), less one block's."""
    return sum(int(t.n_bytes) for t in gguf.GGUFReader(path).tensors
               if skip_block is None or not t.name.startswith(f"blk.{skip_block}."))


def _printed(facts: dict) -> str:
    out = io.StringIO()
    render(facts, Console(file=out, width=600, color_system=None))
    return out.getvalue()


def _size(text: str) -> float:
    number, unit = _SIZE.fullmatch(text.strip()).groups()
    return float(number) * _UNITS[unit]


@pytest.mark.parametrize("kind", ["llama", "hybrid", "mtp", "tied", "declared"])
def test_the_weights_are_the_file_tensors_and_their_parts_add_up(kind, files):
    path = files[kind]
    facts = collect(str(path), plan=True, ctx=4096)
    memory = facts["memory"]
    mtp_block = 8 if kind == "mtp" else None  # the fixture's MTP block: in the file, not loaded
    assert memory["weights_bytes"] == _tensor_bytes(path, skip_block=mtp_block)
    assert memory["weights_bytes"] + memory["skipped_mtp_bytes"] == _tensor_bytes(path)
    assert sum(part["bytes"] for part in memory["weights_parts"]) == memory["weights_bytes"]
    assert facts["gguf"]["tensor_bytes"] == _tensor_bytes(path)

    # What is printed: the total, and parts that sum to it within their rounding.
    text = _printed(facts)
    row = next(line for line in text.splitlines() if line.strip().startswith("weights "))
    total_text, parts_text = row.split("(", 1)
    total = _size(total_text.removeprefix("  weights").strip())
    assert total_text.split()[-2:] == format_bytes(memory["weights_bytes"]).split()
    parts = [float(n) * _UNITS[u] for n, u in _SIZE.findall(parts_text)]
    assert len(parts) == len(memory["weights_parts"]), row
    rounding = sum(0.05 * _UNITS[u] for _, u in _SIZE.findall(parts_text)) + 0.05 * _UNITS[total_text.split()[-1]]
    assert abs(sum(parts) - total) <= rounding, row
    if kind == "mtp":
        skipped = re.escape(format_bytes(memory["skipped_mtp_bytes"]))
        assert re.search(rf"not loaded +{skipped}  \(the file's MTP layer", text), text
    if kind == "hybrid":
        assert "6 recurrent layers without experts" in row and "2 attention layers without experts" in row
        assert "routed experts of 8 layers" in row


def test_a_tied_head_is_counted_once_on_the_cpu_as_llama_cpp_maps_it(files):
    path = files["tied"]
    estimate = estimate_memory(inspect_gguf(path), 2048)
    assert estimate.tied_output_bytes == estimate.input_bytes > 0
    backend = LlamaBackend(path, n_ctx=2048, gpu_layers=0, verbose=True, notice=lambda line: None)
    try:
        mapped = re.search(r"CPU_Mapped model buffer size\s*=\s*([\d.]+) MiB", "\n".join(backend.notices))
    finally:
        backend.close()
    assert mapped, "llama.cpp did not log its model buffer"
    assert estimate.weights_bytes == pytest.approx(float(mapped.group(1)) * 1024**2, abs=0.01 * 1024**2)
    # On the CPU alone it is counted once; on a GPU the output layer gets its own copy of the
    # embedding (the embedding itself stays on the CPU), and the GPU plan counts that copy.
    assert estimate.cpu_bytes(0) == (estimate.weights_bytes + estimate.kv_bytes + estimate.recurrent_bytes
                                     + estimate.compute_bytes + estimate.held_bytes)
    layers = sum(layer.total(2048) for layer in estimate.layers)
    assert estimate.gpu_bytes(-1) == estimate.tied_output_bytes + estimate.output_bytes + layers + estimate.compute_bytes
    assert estimate.cpu_bytes(-1) == estimate.input_bytes + estimate.held_bytes


@pytest.mark.slow  # the stock gguf reader parses Gemma's 262k-token vocabulary: 20 s of CPU; the fixtures above stay
def test_the_plan_of_the_reported_gemma_file_adds_up(gemma_gguf):
    target = gemma_gguf
    facts = collect(str(target), plan=True, ctx=4096)
    memory = facts["memory"]
    assert memory["weights_bytes"] == _tensor_bytes(target) < target.stat().st_size
    assert sum(part["bytes"] for part in memory["weights_parts"]) == memory["weights_bytes"]
    row = next(line for line in _printed(facts).splitlines() if line.strip().startswith("weights "))
    assert "18 attention layers" in row and "(the output head is the embeddings)" in row
