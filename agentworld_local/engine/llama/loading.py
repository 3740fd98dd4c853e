"""Opening a GGUF with llama.cpp: progress (and Ctrl+C) during the load, failures explained."""

from __future__ import annotations

import contextlib
import functools
import re
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import llama_cpp
from llama_cpp import Llama

from agentworld_local.engine.llama.devices import llama_cpp_version
from agentworld_local.engine.llama.logs import LOGS
from agentworld_local.engine.llama.mtp import require_mtp_layer, with_mtp_layers
from agentworld_local.engine.llama.placement import llama_kwargs, tuned_load
from agentworld_local.errors import AwlError, Cancelled, ModelLoadError
from agentworld_local.models.inspect import GgufSummary, inspect_gguf, truncation
from agentworld_local.models.offload_options import OffloadOptions


@functools.cache
def _extra_buffers_safe() -> bool:
    """Whether to let llama.cpp repack weights into its extra CPU buffer types.

    On CPUs with AMX, llama.cpp puts quantized weights in an AMX buffer, and decoding then
    segfaults on some models (Gemma 3 270M Q4_K_M in llama-cpp-python 0.3.36, seen here).
    Plain buffers are slower there but never crash; elsewhere the repacking stays on.
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            return " amx_tile" not in cpuinfo.read()
    except OSError:
        return True  # not Linux: no AMX CPU runs macOS or Windows builds we know of


@contextlib.contextmanager
def load_progress(progress: Callable[[float], object] | None) -> Iterator[None]:
    """Hand llama.cpp a progress callback (Llama() has no hook) that also lets Ctrl+C stop the load,
    and the caller too: `progress` returning False stops it (raising Cancelled).

    An exception cannot leave a C callback (Python prints and ignores it, and the load went
    on), so while loading SIGINT and SIGTERM only set a flag; the callback then answers
    False, llama.cpp stops, and the signal goes to the handler that was there before, once
    the load has ended. Handlers can be set only in the main thread; elsewhere the load
    just reports progress.
    """
    # `Llama` calls the binding module's function, not the package re-export.
    bindings = llama_cpp.llama_cpp
    original = bindings.llama_model_default_params
    caught: list[int] = []
    cancelled: list[bool] = []

    def report(value: float, user_data: Any) -> bool:
        if caught or cancelled:
            return False
        if progress is not None and progress(float(value)) is False:
            cancelled.append(True)  # the caller cancelled the load (the runner's cancel)
            return False
        return True

    callback = llama_cpp.llama_progress_callback(report)

    def params_with_progress() -> Any:
        params = original()
        params.progress_callback = callback
        params.use_extra_bufts = _extra_buffers_safe()
        return params

    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for number in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(number) not in (signal.SIG_IGN, None):  # None: set outside Python
                previous[number] = signal.signal(number, lambda signum, frame: caught.append(signum))
    bindings.llama_model_default_params = params_with_progress
    stopped = False
    try:
        yield
    except Exception:
        if not caught and not cancelled:
            raise
        stopped = True  # llama.cpp's "failed to load" only says that it obeyed the signal or the cancel
    finally:
        bindings.llama_model_default_params = original
        for number, handler in previous.items():
            signal.signal(number, handler)
    if caught:
        signal.raise_signal(caught[0])  # the caller's handler decides (KeyboardInterrupt, exit)
        if stopped:
            raise KeyboardInterrupt()
    if cancelled and stopped:
        raise Cancelled("The model load was cancelled.", "Start it again when you want the model.")


def explain_load_failure(path: Path, log: str) -> AwlError:
    for line in log.splitlines():
        if "unknown model architecture" in line:
            arch = line.split("unknown model architecture:")[-1].strip().strip("'\"")
            return ModelLoadError(
                f"This llama.cpp build (llama-cpp-python {llama_cpp_version()}) does not know the "
                f"architecture `{arch}` of {path.name}.",
                "Upgrade with `pip install -U llama-cpp-python`, or pick a model of a supported architecture.",
            )
    for line in log.splitlines():
        if "cache type" in line and "does not divide" in line:  # llama_init_from_model's check
            return ModelLoadError(
                f"This llama.cpp build cannot keep {path.name}'s KV cache in that type: "
                f"{line.split(':', 1)[-1].strip()}.",
                "Use `--kv-type f16`.",
            )
    if is_out_of_memory(log):
        return ModelLoadError(
            f"Not enough memory to load {path.name}.",
            "Try a smaller quantization, fewer `--gpu-layers`, or a smaller `--ctx` "
            "(`awl models info FILE --plan` shows what fits).",
        )
    short = truncation(path)
    if short is not None:
        return ModelLoadError(f"{path.name} is truncated or damaged ({short}).",
                              "Download it again (`awl models pull NAME` for a registry model).")
    missing = _MISSING_TENSOR.search(log)
    if missing:
        return ModelLoadError(
            f"llama.cpp could not load {path.name}: it has no tensor `{missing.group(1) or missing.group(2)}`"
            f"{_blocks_said(path)}. All its tensor data is there, so downloading it again will not help.",
            "The file was converted without that tensor: use another GGUF of this model.",
        )
    detail = next((line.strip() for line in reversed(log.splitlines()) if "error" in line.lower()), "")
    detail = detail.split("error loading model:")[-1].strip()
    return ModelLoadError(
        f"llama.cpp could not load {path.name}" + (f": {detail}" if detail else "") + " (all its tensor data is "
        "there: the cause is the file's content or this llama.cpp build, not the download).",
        f"Try another GGUF of this model or a newer llama-cpp-python (this is {llama_cpp_version()}); "
        "run with `--verbose` to see llama.cpp's log.",
    )


#: llama.cpp's words for a tensor the model needs and the file lacks (loader, and check_tensor_dims).
_MISSING_TENSOR = re.compile(r"missing tensor '([^']+)'|tensor '([^']+)' not found")


def _blocks_said(path: Path) -> str:
    """" (its header declares 9 layers; it holds 8)" when the header and the tensors disagree, else ""."""
    summary = _summary(path)
    if summary is None:
        return ""
    indexes = {layer.index for layer in summary.layers if layer.weight_bytes}
    held = max(indexes, default=-1) + 1
    declared = summary.header_block_count
    return f" (its header declares {declared} layers; it holds {held})" if held != declared else ""


def _summary(path: Path) -> GgufSummary | None:
    """The file's header summary, None when it cannot be read (llama.cpp then says what is wrong)."""
    try:
        return inspect_gguf(path)
    except Exception:  # noqa: BLE001 - a damaged file gets its own clear message from the load
        return None


class OutOfMemory(Exception):
    """llama.cpp could not allocate the model's buffers: worth one retry with a smaller plan."""


def is_out_of_memory(log: str) -> bool:
    return any("failed to allocate" in line or "out of memory" in line.lower() for line in log.splitlines())


@contextlib.contextmanager
def _context_params(change: Callable[[Any], None]) -> Iterator[None]:
    """While a `Llama()` is created: `change` edits the context parameters on their way to
    `llama_init_from_model` (llama-cpp-python has no option for them; a copy: passed by value)."""
    bindings = llama_cpp.llama_cpp
    init = bindings.llama_init_from_model

    def init_with_change(model: Any, params: Any) -> Any:
        change(params)
        return init(model, params)

    bindings.llama_init_from_model = init_with_change
    try:
        yield
    finally:
        bindings.llama_init_from_model = init


def with_parallel(parallel: int) -> contextlib.AbstractContextManager[None]:
    """While a `Llama()` is created (it has no such option): its context holds `parallel`
    sequences, each with a KV cache of the `n_ctx` asked (llama.cpp's non-unified cache: each
    sequence its own cells, so one session never runs out of room because of another) and
    its own recurrent state."""
    if parallel <= 1:
        return contextlib.nullcontext()

    def change(params: Any) -> None:
        params.n_seq_max = parallel
        params.n_ctx = params.n_ctx * parallel
        params.kv_unified = False

    return _context_params(change)


def with_rollback(tokens: int) -> contextlib.AbstractContextManager[None]:
    """While a `Llama()` is created: its recurrent layers keep a snapshot of their state after
    each of the last `tokens` tokens of a batch, so that `llama_memory_seq_rm` can drop up to
    that many (a rejected speculative draft) instead of refusing (llama.cpp's `n_rs_seq`, for
    the architectures it supports; others ignore it). Costs `tokens` more copies of the state."""
    if tokens <= 0:
        return contextlib.nullcontext()
    return _context_params(lambda params: setattr(params, "n_rs_seq", tokens))


def open_llama(
    path: Path,
    gpu_layers: int,
    n_ctx: int,
    *,
    n_batch: int,
    threads: int | None,
    echo: Callable[[str], None] | None,
    options: OffloadOptions = OffloadOptions(),
    retrying: bool = False,
    parallel: int = 1,
    rollback: int = 0,
    mtp: bool = False,
) -> Llama:
    """Llama() over the GGUF; `echo`: where llama.cpp's log lines go (verbose), None: kept only;
    `options`: expert offload, flash attention, KV cache type (placement.py); `parallel`:
    how many sessions keep a place in the context at once (with_parallel); `rollback`: recurrent
    tokens a sequence can drop at its end (with_rollback); `mtp`: load the model's MTP block too.
    A file that declares an MTP block it holds no tensors for loads as the blocks it holds
    (GgufSummary.kv_overrides); `mtp` is then refused before the load (mtp.require_mtp_layer)."""
    summary = _summary(path)
    if mtp:
        require_mtp_layer(path.name, summary)
    overrides = summary.kv_overrides() if summary is not None else {}
    LOGS.clear()
    LOGS.echo = echo
    try:
        with tuned_load(options), with_parallel(parallel), with_rollback(rollback), with_mtp_layers(mtp):
            return Llama(
                model_path=str(path),
                n_gpu_layers=gpu_layers,
                n_ctx=n_ctx,
                n_batch=n_batch,
                n_ubatch=n_batch,
                n_threads=threads,
                n_threads_batch=threads,
                # Sliding-window caches drop old positions; keep them so checkpoints can restore.
                swa_full=True,
                # Llama's own verbose mode prints to stderr; its log reaches `echo` through LOGS.
                verbose=False,
                kv_overrides=overrides or None,
                **llama_kwargs(options),
            )
    except (ValueError, RuntimeError, OSError):
        log = LOGS.text()
        if is_out_of_memory(log) and not retrying:
            raise OutOfMemory() from None
        raise explain_load_failure(path, log) from None
