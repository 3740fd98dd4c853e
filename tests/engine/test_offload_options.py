"""Expert offload, flash attention and the KV cache type on the real llama.cpp path (CPU build).

The options reach llama.cpp through its low-level parameters (engine/llama/placement.py):
its own log names every expert tensor it placed by the override, and the model's outputs
stay what they were. The outputs compared are the logits after each token of a prompt fed
one token at a time (teacher forcing): a greedy answer of a random-weight fixture is a
few tokens, while the logits show any difference in any layer.
"""

from __future__ import annotations

import llama_cpp
import numpy as np
import pytest

from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.errors import InputError, ModelLoadError
from agentworld_local.models.offload_options import ALL_LAYERS, OffloadOptions

PROMPT = "<|im_start|>user\nls -la /var/log && cat notes.txt<|im_end|>\n<|im_start|>assistant\n"
EXPERTS = ("ffn_down_exps.weight", "ffn_gate_exps.weight", "ffn_up_exps.weight")


def _load(path, **options) -> LlamaBackend:
    return LlamaBackend(path, n_ctx=512, gpu_layers=0, offload=OffloadOptions(**options))


def _logits(backend: LlamaBackend) -> np.ndarray:
    """The logits after each prompt token, fed one at a time, then greedy tokens for 8 more."""
    n_vocab = backend._llm.n_vocab()
    rows: list[np.ndarray] = []

    def feed(token: int) -> None:
        backend._llm.eval([token])
        rows.append(np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(backend._ctx, -1), shape=(n_vocab,)).copy())

    for token in backend.tokenize(PROMPT):
        feed(token)
    for _ in range(8):
        feed(int(np.argmax(rows[-1])))
    return np.stack(rows)


@pytest.fixture(scope="module")
def reference(qwen_gguf) -> np.ndarray:
    backend = _load(qwen_gguf, flash_attn="off")
    try:
        return _logits(backend)
    finally:
        backend.close()


@pytest.mark.parametrize(("cpu_moe", "layers"), [(ALL_LAYERS, range(8)), (3, range(3))])
def test_experts_in_ram_reach_llama_cpp_and_change_no_output(qwen_gguf, reference, cpu_moe, layers):
    backend = _load(qwen_gguf, cpu_moe=cpu_moe, flash_attn="off")
    try:
        # llama.cpp's own log: every routed expert tensor of those layers, and nothing else
        # (not the shared expert `ffn_*_shexp`, not the router `ffn_gate_inp`).
        assert sorted(backend.overridden_tensors) == sorted(f"blk.{i}.{name}" for i in layers for name in EXPERTS)
        assert backend.offload.cpu_moe == cpu_moe
        np.testing.assert_array_equal(_logits(backend), reference)
    finally:
        backend.close()


def test_without_the_option_no_tensor_is_overridden(qwen_gguf):
    backend = _load(qwen_gguf, flash_attn="off")
    try:
        assert backend.overridden_tensors == [] and backend.flash_attention is False
    finally:
        backend.close()


@pytest.mark.parametrize("flash_attn", ["on", "auto"])
def test_flash_attention_is_on_by_default_and_keeps_the_outputs(qwen_gguf, reference, flash_attn):
    backend = _load(qwen_gguf, flash_attn=flash_attn)
    try:
        assert backend.flash_attention is True  # llama.cpp said so (auto: its probe found the CPU supports it)
        logits = _logits(backend)
        # Not bit-identical: flash attention sums the softmax in another order (online, with f16
        # K/V products on the CPU), so the logits move by about 0.05% of their range; the
        # greedy choice at every position, hence a greedy answer, does not.
        np.testing.assert_allclose(logits, reference, rtol=0, atol=2e-3 * np.abs(reference).max())
        assert (logits.argmax(axis=1) == reference.argmax(axis=1)).all()
    finally:
        backend.close()


def test_a_q8_0_kv_cache_loads_and_stays_close(qwen_gguf, reference):
    backend = _load(qwen_gguf, kv_type="q8_0")
    try:
        assert "K (q8_0)" in backend.load_log and "V (q8_0)" in backend.load_log
        # A quantized cache is lossy (about 0.5% of the logits' range here): the prompt's greedy
        # choices hold, but a random-weight model's near ties may break differently afterwards.
        prompt = len(reference) - 8
        logits = _logits(backend)[:prompt]
        np.testing.assert_allclose(logits, reference[:prompt], rtol=0, atol=2e-2 * np.abs(reference).max())
        assert (logits.argmax(axis=1) == reference[:prompt].argmax(axis=1)).all()
    finally:
        backend.close()


def test_a_kv_type_llama_cpp_refuses_is_one_line(llama_gguf):
    # The llama fixture's heads are 16 wide: q8_0's 32-value blocks cannot hold them.
    with pytest.raises(ModelLoadError) as error:
        _load(llama_gguf, kv_type="q8_0")
    line = error.value.one_line()
    assert "\n" not in line and "q8_0" in line and "`--kv-type f16`" in line


def test_experts_in_ram_for_a_model_without_experts_is_refused_before_the_load(llama_gguf):
    with pytest.raises(InputError) as error:
        _load(llama_gguf, cpu_moe=ALL_LAYERS)
    assert "has no experts" in error.value.one_line() and "Drop --cpu-moe" in error.value.one_line()


def test_auto_on_a_gpu_too_small_for_the_model_keeps_experts_in_ram(qwen_gguf, reference, monkeypatch):
    """`--gpu-layers auto` where the model does not fit: the plan keeps the first layers' experts
    in RAM, and the load hands exactly those to llama.cpp. The GPU is a synthetic one (this
    build is CPU-only, so llama.cpp runs everything on the CPU and the outputs stay the same);
    its free memory is what the whole model needs, less the experts of the first 3 layers."""
    from agentworld_local.engine.llama import planning
    from agentworld_local.models.hardware import GpuInfo, Hardware
    from agentworld_local.models.memory import estimate_memory
    from agentworld_local.models.inspect import inspect_gguf
    from agentworld_local.models.plan import margin_for

    estimate = estimate_memory(inspect_gguf(qwen_gguf), 512, flash_attn=True)
    needed = estimate.gpu_bytes(-1, 3)
    assert needed < estimate.gpu_bytes(-1, 2)
    free = needed + 512 * 1024**2  # the margin a small GPU keeps free
    assert free - margin_for(free) == needed
    gpu = GpuInfo("CUDA0 (synthetic)", free, free, "llama.cpp", "CUDA")
    monkeypatch.setattr(planning, "supports_gpu_offload", lambda: True)
    monkeypatch.setattr(planning, "machine_hardware", lambda: Hardware(64 * 1024**3, 32 * 1024**3, 4, 2, (gpu,)))
    notices: list[str] = []
    backend = LlamaBackend(qwen_gguf, n_ctx=512, gpu_layers="auto", notice=notices.append)
    try:
        assert backend.plan is not None and backend.plan.cpu_moe == 3 and backend.gpu_layers == 9
        assert "(--n-cpu-moe 3)" in notices[0] and "kept in RAM" in notices[0]
        assert sorted(backend.overridden_tensors) == sorted(f"blk.{i}.{name}" for i in range(3) for name in EXPERTS)
        np.testing.assert_allclose(_logits(backend), reference, rtol=0, atol=2e-3 * np.abs(reference).max())
    finally:
        backend.close()


def test_offload_options_for_a_model_not_loaded_here_are_one_line(tmp_path):
    from agentworld_local.engine.remote.options import RemoteOptions
    from agentworld_local.engine.loading import load_backend

    server = RemoteOptions(base_url="http://127.0.0.1:9/v1", api_model="world")
    for model, remote in ((None, server), (f"scripted:{tmp_path / 'answers.txt'}", None)):
        with pytest.raises(InputError) as error:
            load_backend(model, remote=remote, offload=OffloadOptions(kv_type="q8_0"))
        assert "not this model" in error.value.one_line() and "Drop them" in error.value.one_line()
