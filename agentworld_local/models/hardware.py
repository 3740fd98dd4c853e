"""Facts about this machine: RAM, CPU threads, GPUs (read-only queries of the host).

GPUs are read two ways: what the OS shows (`nvidia-smi`, or Apple Silicon's unified
memory via `sysctl`), and what the llama.cpp build itself can use (its ggml devices,
listed by `engine.llama.build_devices()`). The offload plan trusts the build's view:
a GPU the build cannot use is no help, but `awl doctor` shows both, because the
difference is what tells a user to rebuild llama-cpp-python.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

import psutil

_QUERY_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class GpuInfo:
    name: str
    total_bytes: int | None
    free_bytes: int | None
    source: str  # "llama.cpp", "nvidia-smi" or "sysctl"
    backend: str = ""  # "CUDA", "Metal", "Vulkan", ... (the build's backend; "" for OS-only facts)
    unified: bool = False  # shares system RAM (Apple Silicon, integrated GPUs)
    driver: str = ""


@dataclass(frozen=True)
class Hardware:
    ram_total: int
    ram_available: int
    cpu_threads: int
    cpu_cores: int | None
    gpus: tuple[GpuInfo, ...] = ()  # devices the llama.cpp build can offload to
    system: str = field(default_factory=platform.system)
    machine: str = field(default_factory=platform.machine)

    @property
    def gpu_free(self) -> int:
        return sum(gpu.free_bytes or 0 for gpu in self.gpus)

    @property
    def unified(self) -> bool:
        return any(gpu.unified for gpu in self.gpus)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _run(args: list[str]) -> str | None:
    """Output of a read-only system query, or None when the tool is absent or fails."""
    if shutil.which(args[0]) is None:
        return None
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=_QUERY_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def parse_nvidia_smi(text: str) -> list[GpuInfo]:
    """Rows of `nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version --format=csv,noheader,nounits`."""
    gpus = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) < 3 or not cells[0]:
            continue
        total, free = (int(float(c)) * 1024 * 1024 if c.replace(".", "", 1).isdigit() else None for c in cells[1:3])
        gpus.append(GpuInfo(cells[0], total, free, "nvidia-smi", driver=cells[3] if len(cells) > 3 else ""))
    return gpus


def nvidia_gpus() -> list[GpuInfo]:
    out = _run(["nvidia-smi", "--query-gpu=name,memory.total,memory.free,driver_version",
                "--format=csv,noheader,nounits"])
    return parse_nvidia_smi(out) if out else []


def apple_gpu() -> GpuInfo | None:
    """Apple Silicon: the GPU shares system memory (Metal may use most, not all, of it)."""
    if sys.platform != "darwin" or platform.machine() != "arm64":
        return None
    name = (_run(["sysctl", "-n", "machdep.cpu.brand_string"]) or "Apple Silicon").strip()
    memsize = (_run(["sysctl", "-n", "hw.memsize"]) or "").strip()
    total = int(memsize) if memsize.isdigit() else None
    return GpuInfo(name, total, psutil.virtual_memory().available, "sysctl", unified=True)


def system_gpus() -> list[GpuInfo]:
    """GPUs the OS shows, whatever the llama.cpp build can use."""
    apple = apple_gpu()
    return [apple] if apple else nvidia_gpus()


def detect_hardware(gpus: tuple[GpuInfo, ...] | list[GpuInfo] = ()) -> Hardware:
    """This machine's RAM and CPUs; `gpus` are the devices the caller's llama.cpp build can use."""
    memory = psutil.virtual_memory()
    return Hardware(
        ram_total=int(memory.total),
        ram_available=int(memory.available),
        cpu_threads=os.cpu_count() or 1,
        cpu_cores=psutil.cpu_count(logical=False),
        gpus=tuple(gpus),
    )


def rebuild_command(gpu: str, *, python: str | None = None, version: str | None = None) -> str:
    """The pip command that rebuilds llama-cpp-python for `gpu` ("CUDA" or "Metal") in this environment.

    It names this environment's Python (a bare `pip` may belong to another one) and pins the
    installed version, so the rebuild changes the backend and nothing else.
    """
    flag = {"CUDA": "-DGGML_CUDA=on", "Metal": "-DGGML_METAL=on"}[gpu]
    package = f"llama-cpp-python=={version}" if version and version[0].isdigit() else "llama-cpp-python"
    return f'CMAKE_ARGS="{flag}" {python or sys.executable} -m pip install --force-reinstall --no-cache-dir {package}'


def rebuild_advice(
    build_gpu_backend: str | None, system: list[GpuInfo] | tuple[GpuInfo, ...], *, version: str | None = None
) -> tuple[str, str] | None:
    """(why, command) when the build is CPU-only on a machine with a GPU it could use, else None."""
    if build_gpu_backend is not None or not system:
        return None
    gpu = system[0]
    if gpu.source == "sysctl":
        return (f"This llama-cpp-python build is CPU-only, but {gpu.name} has a Metal GPU. Rebuild it with Metal:",
                rebuild_command("Metal", version=version))
    if gpu.source == "nvidia-smi":
        return (f"This llama-cpp-python build is CPU-only, but this machine has an NVIDIA GPU ({gpu.name}). "
                "Rebuild it with CUDA (needs the CUDA toolkit, `nvcc`; the build takes a few minutes):",
                rebuild_command("CUDA", version=version))
    return None
