"""What this llama.cpp build can do: its backends and the GPUs it sees (ggml's device registry)."""

from __future__ import annotations

import ctypes
import functools
from typing import Any

import llama_cpp

from agentworld_local.models.hardware import GpuInfo, Hardware, detect_hardware

# ggml registry names -> the backend names users know.
_BACKEND_NAMES = {"MTL": "Metal", "CUDA": "CUDA", "ROCm": "ROCm", "Vulkan": "Vulkan", "SYCL": "SYCL",
                  "CANN": "CANN", "OpenCL": "OpenCL", "BLAS": "BLAS", "RPC": "RPC", "CPU": "CPU"}
_CPU_DEVICE_TYPE = 0  # GGML_BACKEND_DEVICE_TYPE_CPU
_GPU_DEVICE_TYPES = {1: False, 2: True}  # GGML_BACKEND_DEVICE_TYPE_GPU, _IGPU (-> shares host memory)


def supports_gpu_offload() -> bool:
    return bool(llama_cpp.llama_supports_gpu_offload())


def llama_cpp_version() -> str:
    return getattr(llama_cpp, "__version__", "unknown")


@functools.cache
def _ggml() -> Any | None:
    """libggml with the device-registry functions typed, or None if the bindings lack them."""
    try:
        from llama_cpp import _ggml as ggml_module

        lib = ggml_module.libggml
        c_void = ctypes.c_void_p
        for name, restype, argtypes in (
            ("ggml_backend_reg_count", ctypes.c_size_t, []),
            ("ggml_backend_reg_get", c_void, [ctypes.c_size_t]),
            ("ggml_backend_reg_name", ctypes.c_char_p, [c_void]),
            ("ggml_backend_dev_count", ctypes.c_size_t, []),
            ("ggml_backend_dev_get", c_void, [ctypes.c_size_t]),
            ("ggml_backend_dev_name", ctypes.c_char_p, [c_void]),
            ("ggml_backend_dev_description", ctypes.c_char_p, [c_void]),
            ("ggml_backend_dev_type", ctypes.c_int, [c_void]),
            ("ggml_backend_dev_backend_reg", c_void, [c_void]),
            ("ggml_backend_dev_memory", None, [c_void, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]),
            ("ggml_backend_dev_by_type", c_void, [ctypes.c_int]),
            ("ggml_backend_dev_buffer_type", c_void, [c_void]),
        ):
            function = getattr(lib, name)
            function.restype, function.argtypes = restype, argtypes
        return lib
    except (ImportError, AttributeError, OSError):
        return None


def build_backends() -> list[str]:
    """Backends compiled into this llama.cpp build, e.g. ["CUDA", "CPU"] or ["Metal", "BLAS", "CPU"]."""
    lib = _ggml()
    if lib is not None:
        names = [lib.ggml_backend_reg_name(lib.ggml_backend_reg_get(i)).decode() for i in range(lib.ggml_backend_reg_count())]
    else:  # older bindings: "CUDA : ARCHS = 890 | ... | CPU : SSE3 = 1 | ..."
        info = llama_cpp.llama_print_system_info().decode("utf-8", errors="replace")
        names = [part.rsplit("|", 1)[-1].strip() for part in info.split(" : ")[:-1]]
    return [_BACKEND_NAMES.get(name, name) for name in names if name]


def gpu_backend() -> str | None:
    """The backend `--gpu-layers` offloads to (CUDA, Metal, Vulkan, ...), None for a CPU-only build."""
    if not supports_gpu_offload():
        return None
    return next((name for name in build_backends() if name not in ("CPU", "BLAS", "RPC")), "GPU")


def cpu_buffer_type() -> int:
    """ggml's CPU buffer type (host memory): where `--cpu-moe` keeps the expert tensors."""
    lib = _ggml()
    if lib is None:
        raise RuntimeError("these llama-cpp-python bindings do not expose ggml's device registry")
    device = lib.ggml_backend_dev_by_type(_CPU_DEVICE_TYPE)
    return int(lib.ggml_backend_dev_buffer_type(device))


def build_devices() -> list[GpuInfo]:
    """GPUs this build can offload to, with the free memory llama.cpp itself sees."""
    lib = _ggml()
    if lib is None or not supports_gpu_offload():
        return []
    devices = []
    for i in range(lib.ggml_backend_dev_count()):
        device = lib.ggml_backend_dev_get(i)
        unified = _GPU_DEVICE_TYPES.get(lib.ggml_backend_dev_type(device))
        if unified is None:
            continue  # the CPU and accelerators that work beside it (BLAS)
        free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
        lib.ggml_backend_dev_memory(device, ctypes.byref(free), ctypes.byref(total))
        registry = lib.ggml_backend_reg_name(lib.ggml_backend_dev_backend_reg(device)).decode()
        unified = unified or registry == "MTL"  # Apple Silicon: the GPU's memory is the system RAM
        name = lib.ggml_backend_dev_description(device) or lib.ggml_backend_dev_name(device)
        devices.append(GpuInfo(
            name=f"{lib.ggml_backend_dev_name(device).decode()} ({name.decode()})",
            total_bytes=total.value or None,
            free_bytes=free.value or None,
            source="llama.cpp",
            backend=_BACKEND_NAMES.get(registry, registry),
            unified=unified,
        ))
    return devices


def machine_hardware() -> Hardware:
    """This machine's facts, with the GPUs this build can use (see models.hardware)."""
    return detect_hardware(build_devices())
