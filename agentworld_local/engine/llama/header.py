"""Does this llama.cpp build accept a GGUF? Only the header and vocabulary are read."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path

import llama_cpp

from agentworld_local.engine.llama.logs import LOAD_LOCK, LOGS
from agentworld_local.models.gguf_file import check_gguf_path


@dataclass(frozen=True)
class VocabCheck:
    known_architecture: bool
    error: str | None  # llama.cpp's own words when the header did not load
    seconds: float


def vocab_check(path: str | Path) -> VocabCheck:
    """Load only the header and vocabulary (`vocab_only`: no tensor is read) to see if llama.cpp accepts it.
    Remembered per file (path, size, modification time): a load asks twice, and a 262k-token
    vocabulary takes about a second to read."""
    file = check_gguf_path(path)
    stat = file.stat()
    return _vocab_check(str(file.resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _vocab_check(file: str, size: int, mtime_ns: int) -> VocabCheck:
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    with LOAD_LOCK:
        LOGS.clear()
        started = time.perf_counter()
        model = llama_cpp.llama_model_load_from_file(file.encode("utf-8"), params)
        seconds = time.perf_counter() - started
        log = LOGS.text()
    if model:
        llama_cpp.llama_model_free(model)
        return VocabCheck(True, None, seconds)
    error = next((line.split("error loading model:")[-1].strip() for line in log.splitlines()
                  if "error loading model" in line), "llama.cpp could not read the file")
    return VocabCheck("unknown model architecture" not in log, error, seconds)


def knows_architecture(path: str | Path) -> bool:
    """Whether this llama.cpp build knows the file's architecture (fast: no weights are read)."""
    return vocab_check(path).known_architecture
