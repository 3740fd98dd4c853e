"""The in-process llama.cpp backend: the only package that imports `llama_cpp`.

One job per module: devices (what this build can offload to), header (does llama.cpp accept
a GGUF), planning (GPU layers, experts in RAM and context, said before the load), placement
(what Llama() does not expose: expert tensors kept in RAM, flash attention auto, KV cache
type), loading (progress, Ctrl+C, failures explained), logs (llama.cpp's log captured, never printed), checkpoints (turn
states copied out and set back), vocab (the GGUF's template and tokenizer; prompt tokens
counted before a load), backend (LlamaBackend: the append-only context), library (whether
llama_cpp loads here at all: a CUDA build without the NVIDIA driver is one line, not a traceback).
"""

from agentworld_local.engine.llama.library import LlamaCppUnavailable, load_llama_cpp

load_llama_cpp()  # first: LlamaCppUnavailable (what is wrong, how to fix it) before any module imports llama_cpp

from agentworld_local.engine.llama.backend import LlamaBackend  # noqa: E402
from agentworld_local.engine.llama.devices import (  # noqa: E402
    build_backends,
    build_devices,
    gpu_backend,
    llama_cpp_version,
    machine_hardware,
    supports_gpu_offload,
)
from agentworld_local.engine.llama.header import knows_architecture, vocab_check  # noqa: E402

__all__ = [
    "LlamaBackend",
    "LlamaCppUnavailable",
    "build_backends",
    "build_devices",
    "gpu_backend",
    "knows_architecture",
    "llama_cpp_version",
    "machine_hardware",
    "supports_gpu_offload",
    "vocab_check",
]
