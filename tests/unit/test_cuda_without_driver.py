"""A CUDA build of llama-cpp-python on a machine without the NVIDIA driver: `awl doctor` and
`awl run` say in one line what is wrong and how to fix it, never with a traceback.

What really happens there (bench/cuda_build.sh, llama-cpp-python 0.3.36 built with
-DGGML_CUDA=on, a machine with the CUDA toolkit and no driver): `import llama_cpp` itself
fails, because libggml-cuda.so needs the driver's libcuda.so.1. The stand-in `llama_cpp` below
raises that exact error, so these tests run on any machine, with or without a GPU.
"""

from __future__ import annotations

import importlib.abc
import importlib.metadata
import json
import os
import sys
from pathlib import Path

import pytest

from agentworld_local.engine.llama import library
from tests.cli.helpers import REPO, assert_one_line_error, awl, awl_env

#: What `import llama_cpp` raised with the CUDA build and no driver (the path is the venv's).
OBSERVED = ("Failed to load shared library '/tmp/awl-cuda-venv/lib/python3.11/site-packages/llama_cpp/lib/"
            "libllama.so': libcuda.so.1: cannot open shared object file: No such file or directory")
VERSION = importlib.metadata.version("llama-cpp-python")
CPU_REINSTALL = (f'CMAKE_ARGS="-DGGML_CUDA=off" {sys.executable} -m pip install --force-reinstall --no-cache-dir '
                 f"llama-cpp-python=={VERSION}")
LINE = ("llama-cpp-python here was built with CUDA, but no NVIDIA driver was found (libcuda.so.1): install the "
        f"NVIDIA driver, or reinstall the CPU build: `{CPU_REINSTALL}`")


@pytest.fixture
def cuda_build_without_driver(tmp_path) -> dict[str, str]:
    """An environment whose `llama_cpp` is a CUDA build that fails to load as it does without the
    driver: its libraries' names (libggml-cuda.so ...) and the exact RuntimeError of its import."""
    package = tmp_path / "site" / "llama_cpp"
    (package / "lib").mkdir(parents=True)
    for name in ("libllama.so", "libggml.so", "libggml-base.so", "libggml-cpu.so", "libggml-cuda.so"):
        (package / "lib" / name).write_bytes(b"")
    (package / "__init__.py").write_text(f"raise RuntimeError({OBSERVED!r})\n", encoding="utf-8")
    return awl_env(tmp_path / "home", PYTHONPATH=f"{package.parent}{os.pathsep}{REPO}")


def test_doctor_says_in_one_line_what_is_wrong_and_how_to_fix_it(tmp_path, cuda_build_without_driver):
    result = awl("doctor", home=tmp_path, env=cuda_build_without_driver)
    assert result.returncode == 1, result.stderr  # a check that failed
    assert "Traceback" not in result.stdout + result.stderr
    assert LINE in result.stdout.splitlines()  # one line, not wrapped, ready to copy
    assert f"llama-cpp-python  {VERSION}" in result.stdout
    assert "CUDA, CPU (from its library files)" in result.stdout
    assert "threads" in result.stdout  # the facts that need no llama.cpp are still there

    facts = json.loads(awl("doctor", "--json", home=tmp_path, env=cuda_build_without_driver).stdout)
    assert facts["build"]["error"] == LINE
    assert facts["build"]["backends"] == ["CUDA", "CPU"] and facts["build"]["gpu_offload"] is False
    assert facts["advice"] == {"why": LINE, "command": CPU_REINSTALL}
    assert facts["llama_cpp_python"] == VERSION
    assert facts["files"]["state_cache"] is None


def test_run_refuses_with_the_same_line(tmp_path, cuda_build_without_driver, llama_gguf):
    for json_events in ((), ("--json",)):
        result = awl("run", "--model", str(llama_gguf), "--max-tokens", "8", *json_events,
                     home=tmp_path, env=cuda_build_without_driver, stdin="ls\n")
        assert_one_line_error(result, LINE)
        assert result.stderr.strip() == f"awl: error: {LINE}"


class _Raises(importlib.abc.MetaPathFinder):
    """`import llama_cpp` raises what the broken build raised."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def find_spec(self, name, path=None, target=None):  # noqa: ARG002
        if name == "llama_cpp":
            raise self.error
        return None


def test_load_llama_cpp_turns_the_import_failure_into_one_line(monkeypatch):
    monkeypatch.delitem(sys.modules, "llama_cpp", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_Raises(RuntimeError(OBSERVED)), *sys.meta_path])
    with pytest.raises(library.LlamaCppUnavailable) as caught:
        library.load_llama_cpp()
    assert caught.value.one_line() == LINE
    assert caught.value.command == CPU_REINSTALL
    assert caught.value.__cause__ is None and caught.value.__suppress_context__  # no chained traceback to show


def test_load_llama_cpp_when_it_is_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # `import llama_cpp` -> ModuleNotFoundError
    with pytest.raises(library.LlamaCppUnavailable) as caught:
        library.load_llama_cpp()
    assert caught.value.one_line().startswith(f"llama-cpp-python is not installed in this Python ({sys.executable}):")
    assert caught.value.command == f'{sys.executable} -m pip install "llama-cpp-python>=0.3.36,<0.4"'


@pytest.mark.parametrize(("error", "expected"), [
    (OSError("libcublas.so.13: cannot open shared object file: No such file or directory"),
     "llama-cpp-python here was built with CUDA, but the CUDA toolkit's library libcublas.so.13 is not found: "
     "install the CUDA toolkit's libraries (or add their folder to LD_LIBRARY_PATH), or reinstall the CPU build: "
     f"`{CPU_REINSTALL}`"),
    (RuntimeError("Failed to load shared library '/x/libllama.so': libvulkan.so.1: cannot open shared object file: "
                  "No such file or directory"),
     "llama-cpp-python here was built with Vulkan, but no Vulkan driver was found (libvulkan.so.1): install the "
     f"Vulkan driver, or reinstall the CPU build: `{CPU_REINSTALL}`"),
    (RuntimeError("Failed to load shared library '/x/libllama.so': /x/libggml-cpu.so: undefined symbol: ggml_foo"),
     f"llama-cpp-python {VERSION} cannot load here (/x/libggml-cpu.so: undefined symbol: ggml_foo): reinstall it: "
     f"`{sys.executable} -m pip install --force-reinstall --no-cache-dir llama-cpp-python=={VERSION}`"),
    (ModuleNotFoundError("No module named 'numpy'", name="numpy"),
     f"llama-cpp-python {VERSION} cannot import numpy, which it needs: install it: "
     f"`{sys.executable} -m pip install numpy`."),
])
def test_each_failure_is_one_line_with_its_fix(error, expected):
    line = library.explain(error).one_line()
    assert line == expected
    assert "\n" not in line


def test_the_backends_of_a_build_are_read_from_its_file_names(tmp_path, monkeypatch):
    package = tmp_path / "llama_cpp"
    (package / "lib").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('never imported')\n", encoding="utf-8")
    for name in ("libggml-cpu.so", "libggml-base.so", "libggml-vulkan.so", "libggml-blas.so", "libllama.so"):
        (package / "lib" / name).write_bytes(b"")
    monkeypatch.delitem(sys.modules, "llama_cpp", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert library.built_backends() == ["Vulkan", "BLAS", "CPU"]
    assert Path(package / "lib").exists()
