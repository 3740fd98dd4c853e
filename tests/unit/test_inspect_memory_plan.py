"""GGUF inspection, the memory estimate and the offload plan.

The estimate is checked against what llama.cpp really allocates for the tiny fixtures
(its `llama_kv_cache: size`, model and compute buffer log lines, and the measured
recurrent state); the plan's rules are checked on synthetic machines (no GPU here) with
the real model's numbers from docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import gguf
import llama_cpp
import numpy as np
import pytest

from agentworld_local.engine import llama as engine
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.errors import ModelError
from agentworld_local.fixtures.tiny_gguf import write_qwen35moe_fixture
from agentworld_local.models.hardware import GpuInfo, Hardware, parse_nvidia_smi, rebuild_advice
from agentworld_local.models.inspect import GgufSummary, LayerInfo, RecurrentShape, _FastReader, inspect_gguf
from agentworld_local.models.offload_options import OffloadOptions
from agentworld_local.models.memory import CHECKPOINT_BUDGET, PARKED_STATE_BUDGET, PROMPT_STATE_BUDGET, estimate_memory
from agentworld_local.models.plan import MIN_CTX, plan_offload, smaller_plan

GiB = 1024**3
MiB = 1024**2


@pytest.fixture(scope="module")
def mtp_gguf(tmp_path_factory) -> Path:
    """The qwen35moe fixture with the extra MTP ("nextn") block, as community GGUFs have."""
    return write_qwen35moe_fixture(tmp_path_factory.mktemp("mtp") / "tiny-qwen35moe-mtp.gguf", mtp=True)


# -- inspection ---------------------------------------------------------------------------------


def test_inspect_reads_the_hybrid_fixture_with_its_mtp_layer(mtp_gguf, qwen_gguf):
    summary = inspect_gguf(mtp_gguf)
    assert summary.architecture == "qwen35moe"
    assert (summary.block_count, summary.nextn_layers, summary.n_layers) == (9, 1, 8)
    # 2 x (3 Gated DeltaNet + 1 full attention), then the MTP block
    assert [layer.kind for layer in summary.layers] == ["recurrent"] * 3 + ["attention"] + ["recurrent"] * 3 + [
        "attention", "mtp"]
    assert (summary.expert_count, summary.expert_used_count, summary.expert_shared_count) == (8, 2, 1)
    assert summary.context_length == 65536
    assert (summary.head_count, summary.key_length, summary.layers[3].kv_heads) == (4, 32, 2)
    assert summary.quantization == "F16" and summary.chat_template
    assert summary.file_size == mtp_gguf.stat().st_size
    stock = gguf.GGUFReader(mtp_gguf)
    assert summary.n_params == sum(int(t.n_elements) for t in stock.tensors)
    assert summary.tensor_bytes == sum(int(t.n_bytes) for t in stock.tensors)
    assert summary.vocab_size == len(stock.fields["tokenizer.ggml.tokens"].data)

    plain = inspect_gguf(qwen_gguf)
    assert (plain.block_count, plain.nextn_layers) == (8, 0)
    assert plain.layers == summary.layers[:8]  # the same trunk, layer by layer


def test_fast_reader_reads_the_same_metadata_as_the_stock_reader(mtp_gguf):
    stock, fast = gguf.GGUFReader(mtp_gguf), _FastReader(mtp_gguf)
    assert list(stock.fields) == list(fast.fields)
    for key, field in stock.fields.items():
        mine = fast.fields[key]
        if field.types[0] == gguf.GGUFValueType.ARRAY and field.types[-1] == gguf.GGUFValueType.STRING:
            assert int(mine.parts[4][0]) == len(field.data), key  # string arrays: the count is kept
        else:
            assert mine.contents() == field.contents(), key
    assert [(t.name, t.n_bytes, t.data_offset) for t in stock.tensors] == [
        (t.name, t.n_bytes, t.data_offset) for t in fast.tensors]


def test_a_large_vocabulary_is_read_as_one_block_not_one_view_per_token(tmp_path, monkeypatch):
    # The real model has about 248k tokens; the stock reader took ~30 s on such a file here.
    path = tmp_path / "big-vocab.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_token_list([f"t{i}" for i in range(250_000)])
    writer.add_token_types([1] * 250_000)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    from agentworld_local.models import inspect as inspecting

    reads = []
    original = inspecting._FastReader._get

    def counted(self, *args, **kwargs):
        reads.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(inspecting._FastReader, "_get", counted)
    summary = inspect_gguf(path)
    assert summary.vocab_size == 250_000
    # The array is read as one block, not one view per token (the stock reader's 500,000 reads
    # took ~30 s): counted in reads, not seconds, so a loaded machine cannot make it fail.
    assert len(reads) < 1_000, len(reads)


@pytest.mark.parametrize("keep", [10, 200, 5000, 0.5, -1])
def test_a_truncated_gguf_is_a_model_error_that_says_to_download_again(tmp_path, mtp_gguf, keep):
    data = mtp_gguf.read_bytes()
    cut = int(len(data) * keep) if isinstance(keep, float) else (len(data) + keep if keep < 0 else keep)
    broken = tmp_path / "cut.gguf"
    broken.write_bytes(data[:cut])
    with pytest.raises(ModelError) as error:
        inspect_gguf(broken, name="qwen-agentworld-35b-a3b:UD-Q4_K_M")
    line = error.value.one_line()
    assert "truncated or damaged" in line and f"{cut:,} bytes" in line
    assert "Re-download it: `awl models pull qwen-agentworld-35b-a3b:UD-Q4_K_M`" in line


# -- the estimate against llama.cpp -------------------------------------------------------------


def _logged_bytes(log: str, pattern: str) -> float:
    match = re.search(pattern + r"\s*=\s*([\d.]+) MiB", log)
    assert match, pattern
    return float(match.group(1)) * MiB


@pytest.mark.parametrize(("kind", "flash_attn", "kv_type"), [
    ("qwen", "off", "f16"), ("qwen", "on", "f16"), ("qwen", "on", "q8_0"), ("llama", "off", "f16"), ("llama", "on", "f16"),
    ("mtp", "auto", "f16"),
])
def test_the_estimate_matches_what_llama_cpp_allocates(kind, flash_attn, kv_type, qwen_gguf, llama_gguf, mtp_gguf):
    path = {"qwen": qwen_gguf, "llama": llama_gguf, "mtp": mtp_gguf}[kind]
    n_ctx = 8192
    estimate = estimate_memory(inspect_gguf(path), n_ctx, flash_attn=flash_attn != "off", kv_type=kv_type)
    backend = engine.LlamaBackend(path, n_ctx=n_ctx, gpu_layers=0,
                                  offload=OffloadOptions(flash_attn=flash_attn, kv_type=kv_type))
    try:
        log = backend.load_log
        # KV cache: exact (llama.cpp prints MiB with two decimals)
        assert estimate.kv_bytes == pytest.approx(_logged_bytes(log, r"llama_kv_cache: size"), abs=0.01 * MiB)
        # Weights: what llama.cpp maps, within its print rounding (MTP weights are not loaded)
        assert estimate.weights_bytes == pytest.approx(_logged_bytes(log, r"CPU_Mapped model buffer size"), rel=0.01)
        # Compute buffers: an estimate that may err on the safe side, never far below
        compute = _logged_bytes(log, r"CPU compute buffer size")
        assert 0.95 * compute <= estimate.compute_bytes <= 1.30 * compute
        if backend.is_stateful:
            list(backend.generate([{"role": "user", "content": "ls -la"}], sampling=SamplingConfig(max_tokens=2),
                                  think=ThinkBudget("off"), seed=0))
            measured = llama_cpp.llama_state_seq_get_size_ext(backend._ctx, 0, llama_cpp.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY)
            assert measured == 33_964  # the fact in the brief: our recurrent-state estimate is checked against it
            # The measurement carries a small header besides the states themselves.
            assert estimate.recurrent_bytes == pytest.approx(measured, rel=0.01)
        else:
            assert estimate.recurrent_bytes == 0
    finally:
        backend.close()
    if kind == "mtp":
        assert estimate.skipped_bytes > 0 and estimate.weights_bytes == estimate_memory(inspect_gguf(qwen_gguf), n_ctx).weights_bytes


def qwen_agentworld_summary() -> GgufSummary:
    """Qwen-AgentWorld-35B-A3B at UD-Q4_K_M, from docs/ARCHITECTURE.md: 40 layers = 10 x (3 DeltaNet +
    1 attention) + 1 MTP block, 2 KV heads of dim 256, 262,144 context, 22,134,529,280 bytes."""
    embed = 248_320 * 2048 * 4.5 / 8  # the vocabulary at about 4.5 bits per weight
    per_layer = (22_134_529_280 - 2 * embed) / 41
    layers = []
    for index in range(41):
        kind = "mtp" if index == 40 else ("attention" if (index + 1) % 4 == 0 else "recurrent")
        layers.append(LayerInfo(index, kind, int(per_layer), kv_heads=2 if kind == "attention" else 0))
    return GgufSummary(
        path=Path("Qwen-AgentWorld-35B-A3B-UD-Q4_K_M.gguf"), file_size=22_134_529_280, gguf_version=3,
        architecture="qwen35moe", name="Qwen-AgentWorld-35B-A3B", block_count=41, nextn_layers=1,
        context_length=262_144, embedding_length=2048, head_count=16, key_length=256, value_length=256,
        vocab_size=248_320, expert_count=256, expert_used_count=8, expert_shared_count=1, file_type="Q4_K_M",
        tensor_bytes_by_type={"Q4_K": 22_000_000_000}, n_params=35_000_000_000, tensor_bytes=22_134_529_280,
        chat_template=True, layers=tuple(layers), input_bytes=int(embed), output_bytes=int(embed),
        recurrent=RecurrentShape(conv_kernel=4, inner_size=4096, state_size=128, group_count=16),
    )


def test_the_real_model_keeps_kv_only_in_its_ten_attention_layers():
    estimate = estimate_memory(qwen_agentworld_summary(), 262_144)
    # 10 layers x 2 heads x (256 + 256) x 2 bytes: "about 20 KB per token" (docs/ARCHITECTURE.md)
    assert estimate.kv_bytes_per_token == 20_480
    assert estimate.kv_bytes == 5 * GiB
    # 30 DeltaNet layers x (conv 3 x 8192 + state 128 x 4096) f32 values, whatever the context
    assert estimate.recurrent_bytes == 30 * (3 * 8192 + 128 * 4096) * 4
    assert estimate_memory(qwen_agentworld_summary(), 4096).recurrent_bytes == estimate.recurrent_bytes
    assert estimate.max_gpu_layers == 42  # 41 blocks + the output layer, as llama.cpp counts
    assert estimate.skipped_bytes > 0 and estimate.weights_bytes < 22_134_529_280


def test_the_plan_counts_the_turn_checkpoints_and_held_prompt_states():
    # Issue 27: the real model's ~63 MB recurrent state per turn fills the 2 GiB checkpoint
    # budget; the plan counts it (and the prompt states) as RAM, not only llama.cpp's buffers.
    estimate = estimate_memory(qwen_agentworld_summary(), 262_144)
    assert estimate.checkpoint_bytes == CHECKPOINT_BUDGET
    assert estimate.prompt_state_bytes == PROMPT_STATE_BUDGET  # the 5 GiB KV exceeds the budget
    assert estimate.parked_state_bytes == PARKED_STATE_BUDGET  # issue 43: a session waiting for a place
    assert estimate.total_bytes == (estimate.weights_bytes + estimate.kv_bytes + estimate.recurrent_bytes
                                    + estimate.compute_bytes + CHECKPOINT_BUDGET + PROMPT_STATE_BUDGET
                                    + PARKED_STATE_BUDGET)
    # A short context has room for fewer turns: one state per 32 tokens at most.
    short = estimate_memory(qwen_agentworld_summary(), 1024)
    assert short.checkpoint_bytes == 32 * estimate.recurrent_bytes
    assert short.prompt_state_bytes == short.kv_bytes + short.recurrent_bytes
    assert short.parked_state_bytes == short.kv_bytes + short.recurrent_bytes


def test_gpu_layers_are_counted_the_way_llama_cpp_places_them():
    estimate = estimate_memory(qwen_agentworld_summary(), 16384)
    # n_gpu_layers = 1 offloads the output layer only; each further one adds a block from the last down.
    assert estimate.gpu_bytes(1) == estimate.output_bytes + estimate.compute_bytes
    for k in range(2, estimate.max_gpu_layers + 1):
        block = estimate.layers[estimate.max_gpu_layers - k]
        assert estimate.gpu_bytes(k) - estimate.gpu_bytes(k - 1) == block.total(16384)
    assert estimate.gpu_bytes(-1) == estimate.gpu_bytes(estimate.max_gpu_layers)
    # Everything is somewhere, once; the CPU keeps the embedding and, when partial, a compute buffer.
    assert estimate.cpu_bytes(0) == estimate.total_bytes
    # awl's own host memory (checkpoints, held prompt states) stays in RAM whatever is offloaded.
    assert estimate.cpu_bytes(-1) == estimate.input_bytes + estimate.held_bytes
    assert estimate.gpu_bytes(20) + estimate.cpu_bytes(20) == estimate.total_bytes + estimate.compute_bytes


# -- the plan on synthetic machines -------------------------------------------------------------


def machine(ram_gib: float, gpu_free_gib: float | None = None, *, unified: bool = False) -> Hardware:
    gpus = ()
    if gpu_free_gib is not None:
        gpus = (GpuInfo("GPU0", int(gpu_free_gib * 1.05 * GiB), int(gpu_free_gib * GiB), "llama.cpp", "CUDA", unified),)
    return Hardware(ram_total=int(ram_gib * 1.1 * GiB), ram_available=int(ram_gib * GiB), cpu_threads=16,
                    cpu_cores=8, gpus=gpus)


def test_a_big_gpu_takes_every_layer_and_the_full_context():
    estimate = estimate_memory(qwen_agentworld_summary(), 262_144)
    plan = plan_offload(estimate, machine(120, 139), n_ctx_wanted=262_144)
    assert (plan.gpu_layers, plan.max_layers, plan.n_ctx, plan.fits) == (42, 42, 262_144, True)
    assert plan.gpu_bytes <= 139 * GiB - plan.margin
    assert "All 42 layers fit" in plan.reason


def test_a_24_gb_gpu_takes_as_many_layers_as_fit_with_a_margin():
    estimate = estimate_memory(qwen_agentworld_summary(), 16384)
    hardware = machine(60, 23)
    plan = plan_offload(estimate, hardware, n_ctx_wanted=16384)
    assert 0 < plan.gpu_layers < 42 and plan.fits and plan.n_ctx == 16384
    usable = 23 * GiB - max(512 * MiB, 0.1 * 23 * GiB)
    assert plan.gpu_bytes <= usable < estimate.gpu_bytes(plan.gpu_layers + 1)  # the most that fit
    assert plan.cpu_bytes == estimate.cpu_bytes(plan.gpu_layers)
    assert f"{plan.gpu_layers} of 42 layers fit" in plan.reason


def test_a_cpu_only_machine_keeps_zero_layers_and_the_wanted_context():
    estimate = estimate_memory(qwen_agentworld_summary(), 16384)
    plan = plan_offload(estimate, machine(60), n_ctx_wanted=16384)
    assert (plan.gpu_layers, plan.n_ctx, plan.fits) == (0, 16384, True)
    assert "No GPU" in plan.reason


def test_the_context_shrinks_when_memory_is_short_and_never_exceeds_the_trained_one():
    estimate = estimate_memory(qwen_agentworld_summary(), 262_144)
    plan = plan_offload(estimate, machine(30), n_ctx_wanted=262_144)
    assert plan.fits and MIN_CTX <= plan.n_ctx < 262_144
    assert estimate.with_ctx(plan.n_ctx).cpu_bytes(0) <= plan.ram_budget
    assert estimate.with_ctx(plan.n_ctx * 2).cpu_bytes(0) > plan.ram_budget  # halving stopped at the first fit
    assert "reduced from 262,144" in plan.reason
    capped = plan_offload(estimate, machine(200), n_ctx_wanted=1_000_000)
    assert capped.n_ctx == 262_144 and "trained for 262,144" in capped.reason


def test_a_machine_too_small_says_so():
    estimate = estimate_memory(qwen_agentworld_summary(), 16384)
    plan = plan_offload(estimate, machine(12), n_ctx_wanted=16384)
    assert not plan.fits and plan.n_ctx == MIN_CTX
    assert "does not fit" in plan.reason and "smaller quantization" in plan.reason


def test_unified_memory_counts_gpu_and_cpu_parts_against_the_same_ram():
    estimate = estimate_memory(qwen_agentworld_summary(), 16384)
    roomy = plan_offload(estimate, machine(60, 48, unified=True), n_ctx_wanted=16384)
    assert roomy.gpu_layers == 42 and roomy.fits
    # Metal may only use 12 GiB: the rest of the layers run on the CPU, from the same RAM.
    limited = plan_offload(estimate, machine(60, 12, unified=True), n_ctx_wanted=16384)
    assert 0 < limited.gpu_layers < 42 and limited.fits
    assert limited.gpu_bytes + limited.cpu_bytes <= limited.ram_budget
    # Metal would take 48 GiB, but only 22 GiB of RAM are free: the model does not fit in them.
    tight = plan_offload(estimate, machine(22, 48, unified=True), n_ctx_wanted=16384)
    assert tight.gpu_bytes <= tight.ram_budget < tight.gpu_bytes + tight.cpu_bytes
    assert not tight.fits and "does not fit" in tight.reason


def test_after_out_of_memory_the_retry_plan_is_strictly_smaller():
    estimate = estimate_memory(qwen_agentworld_summary(), 16384)
    hardware = machine(60, 139)
    first = plan_offload(estimate, hardware, n_ctx_wanted=16384)
    retry = smaller_plan(estimate, hardware, failed_layers=first.gpu_layers, failed_ctx=first.n_ctx)
    assert retry is not None and retry.gpu_layers < first.gpu_layers and retry.n_ctx <= first.n_ctx
    assert smaller_plan(estimate, hardware, failed_layers=-1, failed_ctx=16384).gpu_layers < 42
    on_cpu = smaller_plan(estimate, machine(200), failed_layers=0, failed_ctx=16384)
    assert on_cpu is not None and (on_cpu.gpu_layers, on_cpu.n_ctx) == (0, 8192)
    assert smaller_plan(estimate, machine(200), failed_layers=0, failed_ctx=MIN_CTX) is None


# -- hardware facts -----------------------------------------------------------------------------


def test_nvidia_smi_rows_become_gpu_facts():
    rows = "NVIDIA H200, 143771, 140000, 580.159.03\nNVIDIA GeForce RTX 4090, 24564, [N/A], 550.54\n"
    h200, rtx = parse_nvidia_smi(rows)
    assert (h200.name, h200.total_bytes, h200.free_bytes, h200.driver) == ("NVIDIA H200", 143771 * MiB, 140000 * MiB,
                                                                            "580.159.03")
    assert rtx.total_bytes == 24564 * MiB and rtx.free_bytes is None


def test_rebuild_advice_only_for_a_cpu_build_on_a_machine_with_a_gpu():
    nvidia = [GpuInfo("NVIDIA H200", 140 * GiB, 139 * GiB, "nvidia-smi")]
    why, command = rebuild_advice(None, nvidia, version="0.3.36")
    assert "NVIDIA H200" in why
    assert command == (f'CMAKE_ARGS="-DGGML_CUDA=on" {sys.executable} -m pip install --force-reinstall '
                       "--no-cache-dir llama-cpp-python==0.3.36")
    apple = [GpuInfo("Apple M3 Max", 64 * GiB, 60 * GiB, "sysctl", unified=True)]
    assert rebuild_advice(None, apple)[1].startswith('CMAKE_ARGS="-DGGML_METAL=on" ')
    assert rebuild_advice("CUDA", nvidia) is None  # already a GPU build
    assert rebuild_advice(None, []) is None  # no GPU to build for


# -- this llama.cpp build -----------------------------------------------------------------------


def test_the_architecture_check_reads_the_header_only(tmp_path, mtp_gguf):
    import psutil

    process = psutil.Process()
    engine.vocab_check.__globals__["_vocab_check"].cache_clear()  # a fresh read, not the remembered answer
    before = process.io_counters().read_chars
    check = engine.vocab_check(mtp_gguf)
    read = process.io_counters().read_chars - before
    assert check.known_architecture and check.error is None
    data_start = _FastReader(mtp_gguf).data_offset
    assert read < data_start + 64 * 1024 < mtp_gguf.stat().st_size  # the header, not the 1.2 MB of weights
    assert check.seconds < 1.0

    unknown = tmp_path / "future.gguf"
    writer = gguf.GGUFWriter(str(unknown), "qwen99moe")
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert engine.knows_architecture(unknown) is False
    first = engine.vocab_check(unknown)
    assert "qwen99moe" in first.error
    # Remembered per file (a load asks twice): the same answer, until the file changes.
    assert engine.vocab_check(unknown) is first
    os.utime(unknown, ns=(unknown.stat().st_atime_ns, unknown.stat().st_mtime_ns + 1_000_000))
    assert engine.vocab_check(unknown) is not first


def test_build_facts_agree_with_the_bindings():
    backends = engine.build_backends()
    assert "CPU" in backends
    assert (engine.gpu_backend() is not None) == bool(llama_cpp.llama_supports_gpu_offload())
    devices = engine.build_devices()
    assert bool(devices) <= bool(llama_cpp.llama_supports_gpu_offload())
    assert all(device.source == "llama.cpp" for device in devices)


@pytest.mark.skipif(bool(llama_cpp.llama_supports_gpu_offload()), reason="a GPU build plans instead")
def test_auto_on_a_cpu_only_build_stays_on_the_cpu_without_planning(qwen_gguf):
    notices: list[str] = []
    backend = engine.LlamaBackend(qwen_gguf, n_ctx=4096, gpu_layers="auto", notice=notices.append)
    try:
        assert backend.gpu_layers == 0 and backend.n_ctx == 4096
        assert backend.plan is None
        assert len(notices) == 1 and notices[0].startswith("memory estimate for a 4,096-token context on the CPU")
    finally:
        backend.close()


# -- experts in RAM (--cpu-moe / --n-cpu-moe, and `auto` when the model does not fit) ----------


def moe_summary() -> GgufSummary:
    """The real model with its routed experts counted: 256 experts are about 92% of a layer's bytes."""
    base = qwen_agentworld_summary()
    layers = tuple(LayerInfo(layer.index, layer.kind, layer.weight_bytes, kv_heads=layer.kv_heads,
                             expert_bytes=int(layer.weight_bytes * 0.92)) for layer in base.layers)
    return GgufSummary(**{**base.__dict__, "layers": layers})


def test_a_moe_model_too_big_for_the_gpu_keeps_experts_in_ram_not_layers():
    estimate = estimate_memory(moe_summary(), 16384, flash_attn=True)
    plan = plan_offload(estimate, machine(60, 16), n_ctx_wanted=16384)
    # Every layer on the GPU, the experts of the first N layers in RAM, as few as the budget allows.
    assert plan.gpu_layers == 42 and 0 < plan.cpu_moe < 40 and plan.fits
    assert plan.gpu_bytes == estimate.gpu_bytes(42, plan.cpu_moe) <= plan.gpu_budget < estimate.gpu_bytes(42, plan.cpu_moe - 1)
    assert plan.experts_label == f"--n-cpu-moe {plan.cpu_moe}" and "kept in RAM" in plan.reason
    # Every byte is somewhere, once: the experts moved from the GPU's share to the RAM's.
    moved = estimate.cpu_experts(list(estimate.layers), plan.cpu_moe)
    assert plan.gpu_bytes + moved == estimate.gpu_bytes(42)
    assert plan.cpu_bytes == estimate.input_bytes + moved + estimate.compute_bytes + estimate.held_bytes
    # Without expert offload the same machine gets a layer split.
    layers_only = plan_offload(estimate, machine(60, 16), n_ctx_wanted=16384, expert_offload=False)
    assert 0 < layers_only.gpu_layers < 42 and layers_only.cpu_moe == 0


def test_experts_given_by_hand_are_kept_and_the_layers_planned_around_them():
    estimate = estimate_memory(moe_summary(), 16384, flash_attn=True)
    plan = plan_offload(estimate, machine(60, 8), n_ctx_wanted=16384, cpu_moe=-1)  # --cpu-moe
    assert plan.gpu_layers == 42 and plan.cpu_moe == -1 and plan.experts_label == "--cpu-moe"
    assert plan.gpu_bytes == estimate.gpu_bytes(42, -1) < 8 * GiB
    assert plan.cpu_bytes >= estimate.expert_bytes


def test_flash_attention_and_a_q8_0_cache_shrink_the_estimate():
    plain = estimate_memory(qwen_agentworld_summary(), 131_072)
    flash = estimate_memory(qwen_agentworld_summary(), 131_072, flash_attn=True)
    q8 = estimate_memory(qwen_agentworld_summary(), 131_072, flash_attn=True, kv_type="q8_0")
    assert flash.compute_bytes < plain.compute_bytes / 5  # the scores are no longer materialised
    assert q8.kv_bytes_per_token == 20_480 * 34 // 64  # q8_0: 34 bytes per 32 values instead of 64
    assert flash.kv_bytes == plain.kv_bytes and q8.kv_bytes < flash.kv_bytes


@pytest.mark.parametrize(("flags", "fragment"), [
    (dict(kv_type="q4"), "Unknown --kv-type `q4`"),
    (dict(n_cpu_moe=-1), "--n-cpu-moe -1 must be 0 or more"),
    (dict(flash_attn="maybe"), "Unknown --flash-attn `maybe`"),
    (dict(speculate="sometimes"), "Unknown --speculate `sometimes`"),
    (dict(cpu_moe=True, n_cpu_moe=3), "--cpu-moe and --n-cpu-moe both"),
    (dict(kv_type="q8_0", flash_attn="off"), "needs flash attention"),
])
def test_offload_flags_that_cannot_work_are_one_input_error(flags, fragment):
    from agentworld_local.errors import InputError

    with pytest.raises(InputError) as error:
        OffloadOptions.from_flags(**flags)
    assert fragment in error.value.one_line() and "\n" not in error.value.one_line()


def test_a_gpu_too_small_even_without_experts_splits_layers_with_every_expert_in_ram():
    estimate = estimate_memory(moe_summary(), 16384, flash_attn=True)
    without_experts = estimate.gpu_bytes(-1, -1)
    gpu = (without_experts / 2 + 512 * MiB) / GiB  # half of what every layer needs without its experts
    plan = plan_offload(estimate, machine(60, gpu), n_ctx_wanted=16384)
    assert plan.cpu_moe == -1 and 0 < plan.gpu_layers < 42 and plan.fits
    assert plan.gpu_bytes == estimate.gpu_bytes(plan.gpu_layers, -1) <= plan.gpu_budget
    # More layers than a split that takes the experts along.
    assert plan.gpu_layers > plan_offload(estimate, machine(60, gpu), n_ctx_wanted=16384, expert_offload=False).gpu_layers
    assert "every layer" in plan.reason and "kept in RAM" in plan.reason


# -- the default context (no --ctx) ----------------------------------------------------------------


def test_without_ctx_a_roomy_cpu_machine_gets_the_ceiling_not_the_trained_262k():
    from agentworld_local.models.plan import default_context

    estimate = estimate_memory(qwen_agentworld_summary(), 32768)
    n_ctx, why = default_context(estimate, machine(120), ceiling=32768)
    assert n_ctx == 32768
    assert "ceiling" in why and "262,144" in why


def test_without_ctx_a_tight_machine_gets_the_largest_context_that_fits():
    from agentworld_local.models.plan import default_context

    estimate = estimate_memory(qwen_agentworld_summary(), 262_144)
    hardware = machine(30)
    n_ctx, why = default_context(estimate, hardware, ceiling=262_144)
    assert MIN_CTX <= n_ctx < 262_144 and "largest that fits" in why
    assert plan_offload(estimate, hardware, n_ctx_wanted=n_ctx).fits
    assert plan_offload(estimate, hardware, n_ctx_wanted=n_ctx * 2).n_ctx < n_ctx * 2  # the next step does not fit
    # Four sessions in one context, each with this context: their caches are planned together.
    shared, _ = default_context(estimate, hardware, ceiling=262_144, parallel=4)
    assert MIN_CTX <= shared < n_ctx
    assert plan_offload(estimate, hardware, n_ctx_wanted=shared * 4).n_ctx == shared * 4
    # A machine that cannot hold the model at all: the smallest context, and a reason that says so.
    n_ctx, why = default_context(estimate, machine(12), ceiling=262_144)
    assert n_ctx == MIN_CTX and "may not fit" in why


def test_without_ctx_a_longer_context_never_costs_gpu_layers_or_experts():
    from agentworld_local.models.plan import default_context

    estimate = estimate_memory(qwen_agentworld_summary(), 262_144)
    hardware = machine(60, 23)
    n_ctx, why = default_context(estimate, hardware, ceiling=262_144)
    smallest = plan_offload(estimate, hardware, n_ctx_wanted=MIN_CTX)
    chosen = plan_offload(estimate, hardware, n_ctx_wanted=n_ctx)
    assert (chosen.gpu_layers, chosen.cpu_moe, chosen.fits) == (smallest.gpu_layers, smallest.cpu_moe, True)
    assert n_ctx < 262_144  # on 23 GB the trained context would take layers off the GPU
    if n_ctx < 262_144:
        bigger = plan_offload(estimate, hardware, n_ctx_wanted=n_ctx * 2)
        assert (bigger.gpu_layers, bigger.cpu_moe) != (smallest.gpu_layers, smallest.cpu_moe)
        assert "same layers on the GPU" in why
    # A big GPU holds the whole trained context with every layer on it.
    assert default_context(estimate, machine(120, 139), ceiling=262_144)[0] == 262_144


def test_a_load_without_ctx_says_the_chosen_context_and_why_and_an_explicit_ctx_wins(llama_gguf, qwen_gguf):
    from agentworld_local.engine.loading import check_ctx_for_model

    said: list[str] = []
    # The llama fixture was trained for 4,096 tokens, less than the ceiling.
    assert check_ctx_for_model(llama_gguf, None, hardware=machine(16), notice=said.append) == 4096
    assert said == ["context: 4,096 tokens, what the model was trained for, and it fits in memory; `--ctx N` sets another."]
    said.clear()
    # 33 MiB usable beyond the 512 MiB margin: the fixture's caches (and the states awl holds beside
    # them: checkpoints, prompt and parked states) fit at 8k tokens, not at 16k.
    small = Hardware(ram_total=1024**3, ram_available=545 * MiB, cpu_threads=2, cpu_cores=2)
    chosen = check_ctx_for_model(qwen_gguf, None, hardware=small, notice=said.append)
    assert MIN_CTX < chosen < 32768 and "largest that fits this machine's free memory" in said[0]
    assert check_ctx_for_model(qwen_gguf, 2048, hardware=small, notice=said.append) == 2048
    assert check_ctx_for_model(qwen_gguf, 65536, hardware=machine(16), notice=said.append) == 65536
