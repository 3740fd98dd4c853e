"""The in-process llama.cpp backend: the only package that imports `llama_cpp`.

One job per module: devices (what this build can offload to), header (does llama.cpp accept
a GGUF), planning (GPU layers, experts in RAM and context, said before the load), placement
(what Llama() does not expose: expert tensors kept in RAM, flash attention auto, KV cache
type), loading (progress, Ctrl+C, failures explained), logs (llama.cpp's log captured, never printed), checkpoints (turn
states copied out and set back), vocab (the GGUF's template and tokenizer; prompt tokens
counted before a load), backend (LlamaBackend: the append-only context).
"""

from agentworld_local.engine.llama.backend import LlamaBackend
from agentworld_local.engine.llama.devices import (
    build_backends,
    build_devices,
    gpu_backend,
    llama_cpp_version,
    machine_hardware,
    supports_gpu_offload,
)
from agentworld_local.engine.llama.header import knows_architecture, vocab_check

__all__ = [
    "LlamaBackend",
    "build_backends",
    "build_devices",
    "gpu_backend",
    "knows_architecture",
    "llama_cpp_version",
    "machine_hardware",
    "supports_gpu_offload",
    "vocab_check",
]
