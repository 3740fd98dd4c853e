"""Whether llama-cpp-python loads here; when it does not, one line that says what is wrong and
how to fix it (LlamaCppUnavailable), instead of a traceback.

`import llama_cpp` loads libllama.so and, through libggml.so, every ggml backend the wheel was
built with. A CUDA build needs the NVIDIA driver's libcuda.so.1 at that moment (ggml-cuda calls
the driver API for its memory pool), so on a machine without the driver the import itself fails.
llama-cpp-python 0.3.36 built by bench/cuda_build.sh, on a machine with the CUDA toolkit and no
driver, says:

    RuntimeError: Failed to load shared library '.../site-packages/llama_cpp/lib/libllama.so':
    libcuda.so.1: cannot open shared object file: No such file or directory

Nothing can fall back to the CPU then: the CPU code is in the libraries that failed to load. So
engine/llama/__init__.py calls `load_llama_cpp()` before anything else: every way into llama.cpp
(`awl run`, `play`, `serve`, the prompt counter) stops with the same one line, and `awl doctor`
(which catches it) reports it with the other facts. Nothing here loads a library itself: the
installed version and the backends come from the package's metadata and file names.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from agentworld_local.errors import ModelError

PACKAGE = "llama-cpp-python"

# ggml's library names (libggml-cuda.so, ggml-cuda.dll) -> the backend names users know.
_LIBRARY_BACKENDS = {"cuda": "CUDA", "metal": "Metal", "hip": "ROCm", "vulkan": "Vulkan", "sycl": "SYCL",
                     "cann": "CANN", "opencl": "OpenCL", "blas": "BLAS", "rpc": "RPC", "cpu": "CPU"}
# A missing library -> the backend that needs it, and what provides it.
_NEEDED_BY = (
    (re.compile(r"^libcuda\.so"), "CUDA", "driver"),
    (re.compile(r"^lib(cudart|cublas|cublasLt|nvrtc|nccl)\.so"), "CUDA", "runtime"),
    (re.compile(r"^libvulkan\.so"), "Vulkan", "driver"),
    (re.compile(r"^lib(amdhip64|hipblas|rocblas|hsa-runtime64)\.so"), "ROCm", "runtime"),
)
_MISSING_LIBRARY = re.compile(r"([\w.+-]+\.so[\w.]*): cannot open shared object file")


class LlamaCppUnavailable(ModelError):
    """llama-cpp-python is not installed, or its libraries cannot load on this machine.
    `command`: the one command that fixes it (also in the hint), for `awl doctor --json`;
    `version`, `backends`: the installed build's, read from its metadata and file names."""

    def __init__(self, message: str, hint: str, *, command: str) -> None:
        super().__init__(message, hint)
        self.command = command
        self.version = installed_version()  # what `awl doctor` reports of a build it cannot load
        self.backends = built_backends()


def load_llama_cpp() -> ModuleType:
    """`import llama_cpp`, or LlamaCppUnavailable with the reason and the fix on one line."""
    try:
        import llama_cpp
    except (ImportError, OSError, RuntimeError) as error:  # RuntimeError: llama_cpp's "Failed to load shared library"
        raise explain(error) from None
    return llama_cpp


def installed_version() -> str | None:
    """The installed llama-cpp-python's version, read from its metadata (nothing is loaded)."""
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None


def built_backends() -> list[str]:
    """The ggml backends the installed wheel holds, from its libraries' file names (libggml-cuda.so
    -> "CUDA"), without loading any: what a build that cannot load was built for."""
    try:
        spec = importlib.util.find_spec("llama_cpp")
    except Exception:  # noqa: BLE001 - a fact for a report, never a new failure
        return []
    names: list[str] = []
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for path in sorted((Path(folder) / "lib").glob("*ggml-*")):
            backend = _LIBRARY_BACKENDS.get(path.name.split("ggml-", 1)[1].split(".", 1)[0])
            if backend and backend not in names:
                names.append(backend)
    return sorted(names, key=lambda name: name in ("BLAS", "RPC", "CPU"))  # as ggml lists them: the GPU first


def _package(version: str | None) -> str:
    return f"{PACKAGE}=={version}" if version and version[0].isdigit() else PACKAGE


def cpu_reinstall_command(version: str | None = None) -> str:
    """The pip command that puts back the CPU build of this version, in this environment (an
    exported CMAKE_ARGS would otherwise build the same backend again)."""
    return (f'CMAKE_ARGS="-DGGML_CUDA=off" {sys.executable} -m pip install --force-reinstall --no-cache-dir '
            f"{_package(version)}")


def explain(error: BaseException) -> LlamaCppUnavailable:
    """What a failed `import llama_cpp` means here, and the fix, as one LlamaCppUnavailable."""
    version = installed_version()
    python = sys.executable
    if isinstance(error, ModuleNotFoundError) and (error.name or "").split(".")[0] == "llama_cpp":
        command = f'{python} -m pip install "{PACKAGE}>=0.3.36,<0.4"'
        return LlamaCppUnavailable(f"{PACKAGE} is not installed in this Python ({python}):",
                                   f"install it: `{command}` (the first install builds it, a few minutes).",
                                   command=command)
    if isinstance(error, ModuleNotFoundError) and error.name:  # one of its own dependencies (numpy, ...)
        command = f"{python} -m pip install {error.name.split('.')[0]}"
        return LlamaCppUnavailable(f"{PACKAGE} {version} cannot import {error.name}, which it needs:",
                                   f"install it: `{command}`.", command=command)
    text = " ".join(str(error).split())
    missing = _MISSING_LIBRARY.search(text)
    library = missing.group(1) if missing else None
    for pattern, backend, provider in _NEEDED_BY if library else ():
        if pattern.match(library):
            command = cpu_reinstall_command(version)
            if provider == "driver":
                driver = "NVIDIA" if backend == "CUDA" else backend
                what, fix = f"no {driver} driver was found ({library})", f"install the {driver} driver"
            else:
                toolkit = "CUDA toolkit" if backend == "CUDA" else backend
                what = f"the {toolkit}'s library {library} is not found"
                fix = f"install the {toolkit}'s libraries (or add their folder to LD_LIBRARY_PATH)"
            return LlamaCppUnavailable(f"{PACKAGE} here was built with {backend}, but {what}:",
                                       f"{fix}, or reinstall the CPU build: `{command}`", command=command)
    # Anything else (a library missing for no known backend, an undefined symbol, a libc too old):
    # llama_cpp's own words, less the long path it names, and a clean reinstall.
    reason = text.split("': ", 1)[1] if "Failed to load shared library" in text and "': " in text else text
    command = f"{python} -m pip install --force-reinstall --no-cache-dir {_package(version)}"
    return LlamaCppUnavailable(f"{PACKAGE} {version} cannot load here ({reason.rstrip('.')}):",
                               f"reinstall it: `{command}`", command=command)
