"""The in-process llama.cpp backend: the only module that imports `llama_cpp`.

Performance core (docs/ARCHITECTURE.md): the session is one token list that only grows,
with a checkpoint at every turn boundary (the end of the last user message, before the
generation prompt). Hybrid models (recurrent + attention layers) cannot drop tokens from
the middle of their recurrent state, so a checkpoint stores the recurrent state alone
(partial sequence state, a few KB) and a restore trims the attention cache to match.
A turn restores the newest checkpoint that is a prefix of the new prompt and evaluates
only the tokens after it; undo and fork are the same restore.
"""

from __future__ import annotations

import codecs
import contextlib
import ctypes
import functools
import gc
import re
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp
from llama_cpp import Llama
from llama_cpp import _internals as llama_internals

from agentworld_local.contract.parse import THINK_OPEN
from agentworld_local.engine.guard import GenerationGuard
from agentworld_local.engine.template import ChatTemplate, fallback_template
from agentworld_local.engine.answer_rules import AnswerRules
from agentworld_local.engine.thinking import FORCED_THINK_END
from agentworld_local.engine.types import (
    GenerationDone,
    GenerationEvent,
    GenerationStats,
    ModelInfo,
    SamplingConfig,
    ThinkBudget,
)
from agentworld_local.errors import AwlError, GenerationError, ModelError, ModelLoadError
from agentworld_local.models.gguf_file import check_gguf_path, file_identity
from agentworld_local.models.hardware import GpuInfo, Hardware, detect_hardware
from agentworld_local.models.inspect import inspect_gguf
from agentworld_local.models.memory import estimate_memory
from agentworld_local.models.units import format_bytes
from agentworld_local.models.plan import OffloadPlan, plan_offload, smaller_plan

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_PARTIAL = llama_cpp.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY
_SEQ = 0


def supports_gpu_offload() -> bool:
    return bool(llama_cpp.llama_supports_gpu_offload())


def llama_cpp_version() -> str:
    return getattr(llama_cpp, "__version__", "unknown")


# -- what this llama.cpp build can do (ggml's device registry, through its C API) -------------

# ggml registry names -> the backend names users know.
_BACKEND_NAMES = {"MTL": "Metal", "CUDA": "CUDA", "ROCm": "ROCm", "Vulkan": "Vulkan", "SYCL": "SYCL",
                  "CANN": "CANN", "OpenCL": "OpenCL", "BLAS": "BLAS", "RPC": "RPC", "CPU": "CPU"}
_GPU_DEVICE_TYPES = {1: False, 2: True}  # GGML_BACKEND_DEVICE_TYPE_GPU, _IGPU (-> shares host memory)


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


@dataclass(frozen=True)
class VocabCheck:
    known_architecture: bool
    error: str | None  # llama.cpp's own words when the header did not load
    seconds: float


def vocab_check(path: str | Path) -> VocabCheck:
    """Load only the header and vocabulary (`vocab_only`: no tensor is read) to see if llama.cpp accepts it."""
    file = check_gguf_path(path)
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    with _LOAD_LOCK:
        _LOGS.lines.clear()
        started = time.perf_counter()
        model = llama_cpp.llama_model_load_from_file(str(file).encode("utf-8"), params)
        seconds = time.perf_counter() - started
        log = _LOGS.text()
    if model:
        llama_cpp.llama_model_free(model)
        return VocabCheck(True, None, seconds)
    error = next((line.split("error loading model:")[-1].strip() for line in log.splitlines()
                  if "error loading model" in line), "llama.cpp could not read the file")
    return VocabCheck("unknown model architecture" not in log, error, seconds)


def knows_architecture(path: str | Path) -> bool:
    """Whether this llama.cpp build knows the file's architecture (fast: no weights are read)."""
    return vocab_check(path).known_architecture


def machine_hardware() -> Hardware:
    """This machine's facts, with the GPUs this build can use (see models.hardware)."""
    return detect_hardware(build_devices())


def plan_for(path: str | Path, n_ctx: int) -> OffloadPlan:
    """The offload plan for this model, this build and this machine's free memory now."""
    estimate = estimate_memory(inspect_gguf(path), n_ctx)
    return plan_offload(estimate, machine_hardware(), n_ctx_wanted=n_ctx)


def _layout(gpu_layers: int, n_ctx: int) -> str:
    if gpu_layers == 0:
        return f"a {n_ctx:,}-token context on the CPU"
    return f"{'all' if gpu_layers < 0 else gpu_layers} GPU layers and a {n_ctx:,}-token context"


def template_handles_thinking(source: str) -> bool:
    """Whether a chat template knows thinking: it writes `<think>` or reads `enable_thinking`."""
    return THINK_OPEN in source or "enable_thinking" in source


def _print_notice(text: str) -> None:
    sys.stderr.write(f"awl: {text}\n")
    sys.stderr.flush()


def resolve_gpu_layers(value: str | int) -> int:
    """A layer count for llama.cpp: N, or `all` (-1). LlamaBackend resolves `auto` with an
    offload plan before it gets here (see `plan_for`)."""
    if isinstance(value, int):
        return value
    text = value.strip().lower()
    if text == "all":
        return -1
    if text.lstrip("-").isdigit():
        return int(text)
    raise AwlError(f"Invalid GPU layer count `{value}`.", "Use `auto`, `all`, or a number such as `--gpu-layers 20`.")


class _LogCapture:
    """Route llama.cpp's log lines to a buffer, so load errors become one clear message."""

    def __init__(self) -> None:
        self.lines: deque[str] = deque(maxlen=400)
        self.echo = False
        self._callback = llama_cpp.llama_log_callback(self._on_log)  # keep a reference alive
        llama_cpp.llama_log_set(self._callback, ctypes.c_void_p(0))

    def _on_log(self, level: int, text: bytes, user_data: Any) -> None:
        line = text.decode("utf-8", errors="replace")
        self.lines.append(line)
        if self.echo:
            sys.stderr.write(line)

    def text(self) -> str:
        return "".join(self.lines)


_LOGS = _LogCapture()
_LOAD_LOCK = threading.Lock()


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
def _load_progress(progress: Callable[[float], None] | None) -> Iterator[None]:
    """Hand llama.cpp a progress callback (Llama() has no hook) that also lets Ctrl+C stop the load.

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

    def report(value: float, user_data: Any) -> bool:
        if caught:
            return False
        if progress is not None:
            progress(float(value))
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
        if not caught:
            raise
        stopped = True  # llama.cpp's "failed to load" only says that it obeyed the signal
    finally:
        bindings.llama_model_default_params = original
        for number, handler in previous.items():
            signal.signal(number, handler)
    if caught:
        signal.raise_signal(caught[0])  # the caller's handler decides (KeyboardInterrupt, exit)
        if stopped:
            raise KeyboardInterrupt()


def _explain_load_failure(path: Path, log: str) -> AwlError:
    for line in log.splitlines():
        if "unknown model architecture" in line:
            arch = line.split("unknown model architecture:")[-1].strip().strip("'\"")
            return ModelLoadError(
                f"This llama.cpp build (llama-cpp-python {llama_cpp_version()}) does not know the "
                f"architecture `{arch}` of {path.name}.",
                "Upgrade with `pip install -U llama-cpp-python`, or pick a model of a supported architecture.",
            )
    if _is_out_of_memory(log):
        return ModelLoadError(
            f"Not enough memory to load {path.name}.",
            "Try a smaller quantization, fewer `--gpu-layers`, or a smaller `--ctx` "
            "(`awl models info FILE --plan` shows what fits).",
        )
    detail = next((line.strip() for line in reversed(log.splitlines()) if "error" in line.lower()), "")
    return ModelLoadError(
        f"llama.cpp could not load {path.name}" + (f": {detail}" if detail else "."),
        "Check that the download is complete; run with `--verbose` to see llama.cpp's log.",
    )


class _OutOfMemory(Exception):
    """llama.cpp could not allocate the model's buffers: worth one retry with a smaller plan."""


def _is_out_of_memory(log: str) -> bool:
    return any("failed to allocate" in line or "out of memory" in line.lower() for line in log.splitlines())


def _open_llama(
    path: Path, gpu_layers: int, n_ctx: int, *, n_batch: int, threads: int | None, verbose: bool, retrying: bool = False
) -> Llama:
    _LOGS.lines.clear()
    _LOGS.echo = verbose
    try:
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
            verbose=verbose,
        )
    except (ValueError, RuntimeError, OSError):
        log = _LOGS.text()
        if _is_out_of_memory(log) and not retrying:
            raise _OutOfMemory() from None
        raise _explain_load_failure(path, log) from None


@dataclass
class _Checkpoint:
    n_tokens: int
    state: bytes | None  # recurrent state for hybrid models; None for attention-only ones


class LlamaBackend:
    """A GGUF model in this process, with an append-only context and turn checkpoints."""

    #: Memory for turn checkpoints; the real model's recurrent state is about 60 MB per turn.
    checkpoint_budget = 2 * 1024**3

    def __init__(
        self,
        model_path: str | Path,
        *,
        gpu_layers: str | int = "auto",
        n_ctx: int = 16384,
        threads: int | None = None,
        n_batch: int = 512,
        progress: Callable[[float], None] | None = None,
        verbose: bool = False,
        name: str | None = None,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        path = check_gguf_path(model_path)
        # Messages for the user before and around the load (the plan, an out-of-memory retry).
        self.notice = notice or _print_notice
        self.plan: OffloadPlan | None = None
        self.gpu_layers, n_ctx = self._choose_layers(path, gpu_layers, n_ctx)
        identity = file_identity(path)
        options = dict(n_batch=n_batch, threads=threads, verbose=verbose)
        with _LOAD_LOCK, _load_progress(progress):
            try:
                self._llm = _open_llama(path, self.gpu_layers, n_ctx, **options)
            except _OutOfMemory:
                gc.collect()  # free what the failed attempt allocated before trying again
                retry = self._smaller_after_oom(path, n_ctx)
                self.gpu_layers, n_ctx = retry.gpu_layers, retry.n_ctx
                self._llm = _open_llama(path, self.gpu_layers, n_ctx, retrying=True, **options)
        llm = self._llm
        self._ctx = llm.ctx
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        self._vocab = llama_cpp.llama_model_get_vocab(llm.model)
        self._stateful = bool(
            llama_cpp.llama_model_is_recurrent(llm.model) or llama_cpp.llama_model_is_hybrid(llm.model)
        )
        self.n_ctx = llm.n_ctx()
        self.n_batch = n_batch
        metadata = llm.metadata
        template_source = metadata.get("tokenizer.chat_template")
        self.template = ChatTemplate(
            template_source or fallback_template(metadata.get("general.architecture")),
            bos_token=self._token_text(llm.token_bos()),
            eos_token=self._token_text(llm.token_eos()),
        )
        self.info = ModelInfo(
            name=name or path.name,
            path=str(path),
            architecture=metadata.get("general.architecture"),
            file_size=identity.size,
            sha256=identity.sha256,
            sha256_scope=identity.scope,
            n_ctx=self.n_ctx,
            gpu_layers=self.gpu_layers,
            chat_template_source="gguf" if template_source else "fallback",
            template_thinks=template_handles_thinking(self.template.source),
        )
        self._tokens: list[int] = []
        self._checkpoints: list[_Checkpoint] = [_Checkpoint(0, None)]
        self._guard = GenerationGuard()

    def _choose_layers(self, path: Path, gpu_layers: str | int, n_ctx: int) -> tuple[int, int]:
        """`auto`: the offload plan when this build has a GPU backend (0 layers on a CPU-only build)."""
        if not (isinstance(gpu_layers, str) and gpu_layers.strip().lower() == "auto"):
            layers = resolve_gpu_layers(gpu_layers)
            self._announce_estimate(path, layers, n_ctx)
            return layers, n_ctx
        if not supports_gpu_offload():
            self._announce_estimate(path, 0, n_ctx)
            return 0, n_ctx
        plan = self.plan = plan_for(path, n_ctx)
        self.notice(
            f"offload plan: {plan.layers_label} layers on the GPU, a {plan.n_ctx:,}-token context, "
            f"{format_bytes(plan.gpu_bytes)} GPU + {format_bytes(plan.cpu_bytes)} RAM. {plan.reason}"
        )
        return plan.gpu_layers, plan.n_ctx

    def _announce_estimate(self, path: Path, gpu_layers: int, n_ctx: int) -> None:
        """Say what the load will take before it starts (a 20 GB load should not surprise)."""
        if not vocab_check(path).known_architecture:
            return  # the load itself says so, in one line
        try:
            estimate = estimate_memory(inspect_gguf(path), n_ctx)
        except ModelError:
            raise  # a truncated or damaged file: its own message says to re-download
        except Exception:  # noqa: BLE001 - an estimate we cannot make must not block a load llama.cpp may manage
            return
        ram = machine_hardware().ram_available if gpu_layers == 0 else None
        self.notice(
            f"memory estimate for {_layout(gpu_layers, n_ctx)}: {format_bytes(estimate.total_bytes)} "
            f"({format_bytes(estimate.weights_bytes)} weights, {format_bytes(estimate.kv_bytes)} KV cache, "
            f"{format_bytes(estimate.recurrent_bytes)} recurrent state, {format_bytes(estimate.compute_bytes)} compute)"
            + (f"; {format_bytes(ram)} RAM available" if ram is not None else "")
            + (". It may not fit: try a smaller `--ctx` or quantization." if ram is not None and estimate.total_bytes > ram else "")
        )

    def _smaller_after_oom(self, path: Path, n_ctx: int) -> OffloadPlan:
        """The one retry after llama.cpp ran out of memory, announced through `notice`."""
        estimate = estimate_memory(inspect_gguf(path), n_ctx)
        retry = smaller_plan(estimate, machine_hardware(), failed_layers=self.gpu_layers, failed_ctx=n_ctx)
        if retry is None:
            raise _explain_load_failure(path, _LOGS.text())
        self.notice(
            f"not enough memory for {_layout(self.gpu_layers, n_ctx)}; retrying once with "
            f"{_layout(retry.gpu_layers, retry.n_ctx)} (about {format_bytes(retry.gpu_bytes + retry.cpu_bytes)})."
        )
        return retry

    # -- tokens ---------------------------------------------------------------------

    def _token_text(self, token: int) -> str:
        if token < 0:
            return ""
        return self._llm.detokenize([token], special=True).decode("utf-8", errors="replace")

    def tokenize(self, text: str) -> list[int]:
        """Tokens of rendered template text (special tokens parsed, no BOS added: templates write it)."""
        # A lone surrogate (damaged input) cannot be UTF-8: it becomes U+FFFD, not an exception.
        return self._llm.tokenize(_LONE_SURROGATE.sub("\ufffd", text).encode("utf-8"), add_bos=False, special=True)

    @property
    def evaluated_tokens(self) -> list[int]:
        """The tokens in the context right now (a copy)."""
        return list(self._tokens)

    @property
    def is_stateful(self) -> bool:
        return self._stateful

    def render(self, messages: list[dict[str, str]], *, think: ThinkBudget) -> tuple[str, str]:
        """(text up to the turn boundary, full prompt text with the generation prompt)."""
        base = self.template.render(messages, add_generation_prompt=False)
        full = self.template.render(messages, add_generation_prompt=True, enable_thinking=think.mode != "off")
        return base, full

    def count_tokens(self, messages: list[dict[str, str]], think: ThinkBudget) -> int:
        """The prompt's tokens, rendered with the model's template as `generate` renders it."""
        text = self.template.render(messages, add_generation_prompt=True, enable_thinking=think.mode != "off")
        return len(self.tokenize(text))

    # -- checkpoints ----------------------------------------------------------------

    def _save_checkpoint(self) -> None:
        n = len(self._tokens)
        if self._checkpoints[-1].n_tokens == n:
            return
        state = None
        if self._stateful:
            size = llama_cpp.llama_state_seq_get_size_ext(self._ctx, _SEQ, _PARTIAL)
            buffer = (ctypes.c_uint8 * size)()
            written = llama_cpp.llama_state_seq_get_data_ext(self._ctx, buffer, size, _SEQ, _PARTIAL)
            # One C-level copy: slicing the ctypes array first builds a Python list of ints
            # (for the real model's ~60 MB state, about a second and half a GB a turn).
            state = ctypes.string_at(buffer, written)
        self._checkpoints.append(_Checkpoint(n, state))
        self._thin_checkpoints()

    def checkpoint_bytes(self) -> int:
        return sum(len(c.state or b"") for c in self._checkpoints)

    def _thin_checkpoints(self) -> None:
        """Keep checkpoints within the memory budget (a real model's state is tens of MB).

        The recent turns stay; older ones are dropped where their neighbours are closest,
        so undo to any turn stays cheap-ish (re-evaluates at most one widened gap).
        """
        keep_recent = 4
        total = self.checkpoint_bytes()
        while total > self.checkpoint_budget and len(self._checkpoints) > keep_recent + 2:
            # Never the first (the empty context), nor the one after turn 1's prompt (a context
            # cut keeps turn 1 and restores it: engine/context_window.py), nor the recent ones.
            candidates = range(2, len(self._checkpoints) - keep_recent)
            gap = lambda i: self._checkpoints[i + 1].n_tokens - self._checkpoints[i - 1].n_tokens  # noqa: E731
            total -= len(self._checkpoints.pop(min(candidates, key=gap)).state or b"")

    def _restore(self, target: int) -> float:
        """Make the context hold exactly self._tokens[:n] for the best reachable n <= target;
        returns the seconds it took."""
        started = time.perf_counter()
        if self._stateful:
            checkpoint = max((c for c in self._checkpoints if c.n_tokens <= target), key=lambda c: c.n_tokens)
            n = checkpoint.n_tokens
            if n == len(self._tokens):
                pass  # nothing was evaluated after this checkpoint
            elif n == 0 or checkpoint.state is None:
                llama_cpp.llama_memory_clear(self._memory, True)
                n = 0
            else:
                buffer = (ctypes.c_uint8 * len(checkpoint.state)).from_buffer_copy(checkpoint.state)
                if llama_cpp.llama_state_seq_set_data_ext(self._ctx, buffer, len(checkpoint.state), _SEQ, _PARTIAL) == 0:
                    llama_cpp.llama_memory_clear(self._memory, True)
                    n = 0
                else:
                    llama_cpp.llama_memory_seq_rm(self._memory, _SEQ, n, -1)
        else:
            n = min(target, len(self._tokens))
            llama_cpp.llama_memory_seq_rm(self._memory, _SEQ, n, -1)
        del self._tokens[n:]
        self._checkpoints = [c for c in self._checkpoints if c.n_tokens <= n]
        self._llm.n_tokens = n
        return time.perf_counter() - started

    def room(self) -> int:
        """Tokens the context can still take."""
        return self.n_ctx - len(self._tokens)

    def _decode(self, tokens: list[int]) -> None:
        """Evaluate `tokens` after the context. Callers check `room()` first: a full context
        makes llama.cpp fail; anything it raises becomes one clear GenerationError."""
        if len(tokens) > self.room():
            raise GenerationError(
                f"The context is full: {len(tokens)} more tokens do not fit in {self.n_ctx:,}.",
                "Start again with a larger `--ctx`, or fork the session at an earlier turn.",
            )
        try:
            self._llm.eval(tokens)
        except (RuntimeError, ValueError, OSError) as error:
            raise GenerationError(
                f"llama.cpp failed while evaluating the conversation ({error}).",
                "Try a smaller `--ctx` or `--gpu-layers`; run with `--verbose` to see llama.cpp's log.",
            ) from None
        self._tokens.extend(tokens)

    def _evaluate(self, tokens: list[int], cancel: threading.Event | None) -> bool:
        """Decode `tokens` after the context, in n_batch chunks; False when cancelled."""
        for start in range(0, len(tokens), self.n_batch):
            if cancel is not None and cancel.is_set():
                return False
            self._decode(tokens[start : start + self.n_batch])
        return True

    def reset(self) -> None:
        """Forget the whole context (a new session on the same loaded model)."""
        with self._guard.hold():
            self._restore(0)

    # -- generation -----------------------------------------------------------------

    def _make_sampler(self, sampling: SamplingConfig, seed: int) -> Any:
        sampler = llama_internals.LlamaSampler()
        if sampling.temperature <= 0:
            sampler.add_greedy()
            return sampler
        sampler.add_top_k(sampling.top_k)
        sampler.add_top_p(sampling.top_p, 1)
        sampler.add_min_p(sampling.min_p, 1)
        sampler.add_temp(sampling.temperature)
        sampler.add_dist(seed & 0xFFFFFFFF)
        return sampler

    def generate(
        self,
        messages: list[dict[str, str]],
        *,
        sampling: SamplingConfig,
        think: ThinkBudget,
        seed: int,
        cancel: threading.Event | None = None,
    ) -> Iterator[GenerationEvent]:
        """Stream the model's answer to `messages` (which end with the current user turn).

        One generation at a time: another one while this is in flight gets BackendBusy.
        """
        with self._guard.hold():
            yield from self._generate(messages, sampling=sampling, think=think, seed=seed, cancel=cancel)

    def _generate(
        self,
        messages: list[dict[str, str]],
        *,
        sampling: SamplingConfig,
        think: ThinkBudget,
        seed: int,
        cancel: threading.Event | None,
    ) -> Iterator[GenerationEvent]:
        stats = GenerationStats()
        started = time.perf_counter()
        base_text, full_text = self.render(messages, think=think)
        full = self.tokenize(full_text)
        base = self.tokenize(base_text)
        # The checkpoint goes where the next turn's prompt will diverge from this one. If the
        # template or tokenizer does not keep the base a prefix, evaluate without a checkpoint.
        boundary = len(base) if full_text.startswith(base_text) and full[: len(base)] == base else 0
        if len(full) + 8 > self.n_ctx:
            raise AwlError(
                f"The conversation needs {len(full)} tokens but the context holds {self.n_ctx}.",
                "Start again with a larger `--ctx`, or fork the session at an earlier turn.",
            )
        common = 0
        limit = min(len(self._tokens), len(full) - 1)  # always evaluate at least one token for logits
        while common < limit and self._tokens[common] == full[common]:
            common += 1
        stats.restore_s = self._restore(common)
        stats.prompt_tokens_total = len(full)
        stats.prompt_tokens_evaluated = len(full) - len(self._tokens)
        if boundary > len(self._tokens):
            if not self._evaluate(full[len(self._tokens) : boundary], cancel):
                yield self._cancelled(stats, started)
                return
            self._save_checkpoint()
        if not self._evaluate(full[len(self._tokens) :], cancel):
            yield self._cancelled(stats, started)
            return
        stats.prompt_s = time.perf_counter() - started
        think_open = full_text.rstrip().endswith(THINK_OPEN)
        yield from self._sample_loop(sampling, think, seed, cancel, think_open, stats)

    def _cancelled(self, stats: GenerationStats, started: float) -> GenerationDone:
        """Cancelled while the prompt was evaluated: nothing was generated yet."""
        stats.finish = "cancelled"
        stats.prompt_s = time.perf_counter() - started
        return GenerationDone(raw_output="", think_open=False, stats=stats)

    def _sample_loop(
        self,
        sampling: SamplingConfig,
        think: ThinkBudget,
        seed: int,
        cancel: threading.Event | None,
        think_open: bool,
        stats: GenerationStats,
    ) -> Iterator[GenerationEvent]:
        sampler = self._make_sampler(sampling, seed)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        rules = AnswerRules(think_open=think_open, think=think, sampling=sampling, stats=stats)
        forced_end = self.tokenize(FORCED_THINK_END)
        started = time.perf_counter()
        try:
            while True:
                if cancel is not None and cancel.is_set():
                    stats.finish = "cancelled"
                    break
                if self.room() < 1:
                    stats.finish = "length"  # the context is full: the turn ends, the session stays usable
                    break
                token = sampler.sample(self._llm._ctx, -1)
                if llama_cpp.llama_vocab_is_eog(self._vocab, token):
                    stats.finish = "stop"
                    break
                self._decode([token])
                yield from rules.feed(decoder.decode(self._llm.detokenize([token], special=True)))
                if rules.finish:
                    stats.finish = rules.finish
                    break
                if rules.budget_spent:
                    if len(forced_end) > self.room():
                        stats.finish = "length"  # no room left even to close thinking
                        break
                    yield from rules.end_thinking()
                    self._decode(forced_end)
        finally:
            sampler.close()
        yield from rules.flush()
        stats.generate_s = time.perf_counter() - started
        raw = "".join(rules.raw) + decoder.decode(b"", final=True)
        yield GenerationDone(raw_output=raw, think_open=think_open, stats=stats)

    def close(self) -> None:
        self._llm.close()
