"""llama.cpp load options that `Llama()` does not expose: expert tensors kept in host memory,
flash attention left to llama.cpp (`auto`), and the KV cache's type.

- Expert offload (llama.cpp's `--cpu-moe` / `--n-cpu-moe N`): `llama_model_params` has a
  NULL-terminated array of (regex, buffer type) overrides, `tensor_buft_overrides`. Tensors
  whose names match go to the CPU buffer type, whatever `n_gpu_layers` says, so a MoE model
  keeps attention, the shared expert and its caches on the GPU and the routed experts
  (most of its bytes, few of its FLOPs per token) in RAM.
- Flash attention `auto`: `Llama(flash_attn=...)` knows only on and off; llama.cpp's own
  default, AUTO, probes the device and falls back when it cannot. The context parameters are
  given AUTO on their way to `llama_init_from_model`.
Both wrap the binding functions `Llama()` calls, for one load only (under LOAD_LOCK), and
keep the ctypes objects alive until the load has ended.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator
from typing import Any

import llama_cpp

from agentworld_local.engine.llama.devices import cpu_buffer_type
from agentworld_local.models.offload_options import ALL_LAYERS, OffloadOptions

#: llama.cpp's LLM_FFN_EXPS_REGEX (common/common.h): the routed experts' tensors, not the shared expert's.
EXPERT_TENSORS = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps"
#: ggml type ids of the KV cache types offered (ggml.h's enum ggml_type).
KV_GGML_TYPES = {"f16": llama_cpp.GGML_TYPE_F16, "q8_0": llama_cpp.GGML_TYPE_Q8_0}


class TensorOverride(ctypes.Structure):
    """struct llama_model_tensor_buft_override (include/llama.h)."""

    _fields_ = [("pattern", ctypes.c_char_p), ("buft", ctypes.c_void_p)]


def expert_pattern(cpu_moe: int) -> str | None:
    """The regex of the expert tensors kept on the CPU: every layer's (ALL_LAYERS), the first
    `cpu_moe` layers' (as llama.cpp's --n-cpu-moe counts), or None for none."""
    if cpu_moe == ALL_LAYERS:
        return EXPERT_TENSORS
    if cpu_moe <= 0:
        return None
    return rf"^blk\.({'|'.join(str(i) for i in range(cpu_moe))}){EXPERT_TENSORS}"


def _override_array(pattern: str) -> Any:
    overrides = (TensorOverride * 2)()  # the second, zeroed, is the terminator
    overrides[0].pattern = pattern.encode()
    overrides[0].buft = cpu_buffer_type()
    return overrides


@contextlib.contextmanager
def tuned_load(options: OffloadOptions) -> Iterator[None]:
    """While a `Llama()` is created: its model gets the expert overrides, its context flash
    attention AUTO when `options.flash_attn` is `auto`."""
    bindings = llama_cpp.llama_cpp
    pattern = expert_pattern(options.cpu_moe)
    keep: list[Any] = []
    restore: list[tuple[str, Any]] = []
    if pattern is not None:
        overrides = _override_array(pattern)
        keep.append(overrides)
        default_params = bindings.llama_model_default_params

        def params_with_overrides() -> Any:
            params = default_params()
            params.tensor_buft_overrides = ctypes.cast(overrides, ctypes.c_void_p)
            return params

        restore.append(("llama_model_default_params", default_params))
        bindings.llama_model_default_params = params_with_overrides
    if options.flash_attn == "auto":
        init = bindings.llama_init_from_model

        def init_with_auto_flash_attention(model: Any, params: Any) -> Any:
            params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO  # a copy: passed by value
            return init(model, params)

        restore.append(("llama_init_from_model", init))
        bindings.llama_init_from_model = init_with_auto_flash_attention
    try:
        yield
    finally:
        for name, original in reversed(restore):
            setattr(bindings, name, original)
        keep.clear()


def llama_kwargs(options: OffloadOptions) -> dict[str, Any]:
    """The `Llama()` arguments for the options it does expose (flash attention on/off, KV type)."""
    kv = KV_GGML_TYPES[options.kv_type]
    return {"flash_attn": options.flash_attn == "on", "type_k": kv, "type_v": kv}
