"""Loading a world model for a session, for any face: nothing is printed here.

Progress (0..1) and notices (one sentence each: a lowered context, the memory plan, a chat
template the model lacks) go to the callbacks the face passes; the CLI prints them on
stderr, the TUI shows them in its own widgets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentworld_local.defaults import DEFAULT_CTX, DEFAULT_CTX_CEILING, MIN_CTX
from agentworld_local.engine.remote.options import SPEC_PREFIX, RemoteOptions
from agentworld_local.engine.types import ThinkBudget
from agentworld_local.errors import InputError

#: `--model scripted:FILE`: the scripted backend (raw answers written in advance) instead of a GGUF.
SCRIPTED = "scripted:"

Progress = Callable[[float], None]
Notice = Callable[[str], None]


def _ignore(text: str) -> None:
    """A notice nobody asked to see (it is still kept in the backend's `notices`)."""


#: llama.cpp's most sequences in one context (LLAMA_MAX_SEQ): a GGUF's --parallel at most.
MAX_PARALLEL = 256


def load_backend(
    model: str | None, *, ctx: int | None = None, gpu_layers: str = "auto", threads: int | None = None,
    verbose: bool = False, progress: Progress | None = None, notice: Notice | None = None,
    remote: RemoteOptions | None = None, offload: Any = None, parallel: int | None = None,
) -> Any:
    """The backend for `model`: a registry name, a GGUF path, or `scripted:FILE`; or a
    server's model: `remote` (with `model` None or `remote.spec`), or `openai:NAME@URL`; several
    servers of it (`remote.more_urls`, `openai:NAME@URL1,URL2`) make a Fleet.

    The context is checked against the model and this machine before the load (a refusal
    costs seconds, not a load); llama_cpp is imported only when a GGUF is loaded, openai
    only for a server. `offload` (models.offload_options.OffloadOptions): experts in RAM,
    flash attention, KV cache type, for a GGUF. `parallel` (`--parallel`): the most turns that
    run at once, the backend's `parallel`: a GGUF gets that many sequences in its context, decoded
    together, each with `ctx` tokens of KV cache (default 1); a server's own count bounds it
    (default: the server's count, else the default of its kind: remote/server_kinds.py).
    """
    notice = notice or _ignore
    check_ctx_value(ctx)
    if model is not None and model != (remote.spec if remote is not None else None):
        # A model typed in a face's one field: `openai:NAME@URL` is a server's; anything else is local.
        remote = RemoteOptions.from_spec(model) if model.startswith(SPEC_PREFIX) else None
    # --no-prefetch does nothing for these (they have no prefetch) and is no mistake.
    if offload is not None and replace(offload, prefetch=True) != type(offload)() and (remote is not None or (model or "").startswith(SCRIPTED)):
        raise InputError("--cpu-moe, --n-cpu-moe, --flash-attn and --kv-type set up a GGUF loaded here, not this model.",
                         "Drop them; a server sets these itself.")
    if remote is not None and remote.more_urls:  # several servers of the model: a fleet (engine/remote/fleet.py)
        from agentworld_local.engine.remote.fleet import Fleet

        return Fleet(remote, n_ctx=ctx, parallel=parallel, notice=notice)
    if remote is not None:
        from agentworld_local.engine.remote.backend import OpenAIBackend

        return OpenAIBackend(remote, n_ctx=ctx, parallel=parallel, notice=notice)
    if not model:
        raise InputError("No model given.", "Add `--model PATH/TO/model.gguf`, or `--backend openai --base-url URL --api-model NAME`.")
    if model.startswith(SCRIPTED):
        from agentworld_local.engine.scripted import ScriptedBackend

        return ScriptedBackend.from_file(model[len(SCRIPTED):], n_ctx=ctx or DEFAULT_CTX)
    from agentworld_local.models.resolve import resolve_model

    resolved = resolve_model(model)
    parallel = parallel or 1
    if parallel > MAX_PARALLEL:
        raise InputError(f"--parallel {parallel:,} is more than llama.cpp runs at once in one context ({MAX_PARALLEL}).",
                         f"Use `--parallel {MAX_PARALLEL}` or less (each takes --ctx tokens of KV cache).")
    from agentworld_local.models.inspect import held_layers_notice

    layers = held_layers_notice(resolved.path)  # an MTP block declared, not held: loaded without it
    if layers and getattr(offload, "speculate", None) != "mtp":  # with mtp the load refuses, saying why
        notice(layers)
    n_ctx = check_ctx_for_model(resolved.path, ctx, notice=notice, offload=offload, parallel=parallel)
    from agentworld_local.engine.llama import LlamaBackend
    from agentworld_local.engine.llama.state_cache import user_state_cache

    return LlamaBackend(resolved.path, gpu_layers=gpu_layers, n_ctx=n_ctx, threads=threads, verbose=verbose,
                        name=resolved.name, progress=progress, notice=notice, offload=offload,
                        state_cache=user_state_cache(), parallel=parallel)


def check_ctx_value(ctx: int | None) -> None:
    if ctx is not None and ctx < MIN_CTX:
        raise InputError(
            f"--ctx {ctx} is too small: the system prompt and one turn need at least {MIN_CTX:,} tokens.",
            f"Use `--ctx {MIN_CTX}` or more, or leave it out (the default is the largest context this machine holds, "
            f"up to {DEFAULT_CTX_CEILING:,}).",
        )


def check_ctx_for_model(
    model_path: Path, ctx: int | None, *, hardware: Any = None, notice: Notice | None = None, offload: Any = None,
    parallel: int = 1,
) -> int:
    """The context size to load: at most what the model was trained on, and what memory can hold.

    An explicit `--ctx` beyond either is refused. Without one, the offload plan chooses the
    largest context this machine holds for the model (`default_ctx`), said through `notice`.
    `hardware` (a models.hardware.Hardware) is for tests; by default this machine's. `offload`
    (OffloadOptions): the KV cache type and flash attention the estimate counts; `parallel`:
    how many parallel each get this context (their caches must fit together).
    """
    from agentworld_local.models.inspect import inspect_gguf

    notice = notice or _ignore
    try:
        summary = inspect_gguf(model_path)
    except Exception:  # noqa: BLE001 - a damaged file gets its own clear message from the load
        return DEFAULT_CTX if ctx is None else ctx
    if ctx is None:
        from agentworld_local.engine.llama import knows_architecture

        if not knows_architecture(model_path):
            return DEFAULT_CTX  # the load says, in one line, that this llama.cpp cannot run it
        wanted, why = default_ctx(summary, hardware, offload, parallel)
        notice(f"context: {wanted:,} tokens, {why}; `--ctx N` sets another.")
        return wanted
    wanted = ctx
    trained = summary.context_length
    if trained and wanted > trained:
        if ctx is not None:
            raise InputError(
                f"--ctx {ctx:,} is more than {model_path.name} was trained for ({trained:,} tokens).",
                f"Use `--ctx {trained}` or less.",
            )
        notice(f"{model_path.name} was trained for {trained:,} tokens of context; using {trained:,}.")
        wanted = trained
    per_token, room = _cache_room(summary, wanted, hardware)
    if per_token and per_token * wanted * parallel > room:
        from agentworld_local.models.units import format_bytes

        fits = max(room // parallel // per_token // 1024 * 1024, 0)
        each = f" for each of {parallel:,} turns at once (--parallel)" if parallel > 1 else ""
        if fits >= MIN_CTX:
            advice = f"Use `--ctx {fits}` or less" + (", or a smaller --parallel." if parallel > 1 else ".")
        else:
            fewer = room // (per_token * wanted)
            advice = f"Use `--parallel {fewer}` or less." if parallel > 1 and fewer >= 1 else "Free memory, or use a machine with more."
        raise InputError(
            f"A {wanted:,}-token context{each} needs about {format_bytes(per_token * wanted * parallel)} for its cache "
            f"alone; this machine has {format_bytes(room)} free.",
            advice,
        )
    return wanted


def default_ctx(summary: Any, hardware: Any = None, offload: Any = None, parallel: int = 1) -> tuple[int, str]:
    """(context size, why) for a load without --ctx: the largest the offload plan fits here, up
    to the model's trained context and DEFAULT_CTX_CEILING (models.plan.default_context)."""
    from agentworld_local.models.memory import estimate_memory
    from agentworld_local.models.offload_options import OffloadOptions
    from agentworld_local.models.plan import default_context

    options = offload or OffloadOptions()
    estimate = estimate_memory(summary, DEFAULT_CTX_CEILING, kv_type=options.kv_type, flash_attn=options.flash_attn != "off")
    if hardware is None:
        from agentworld_local.engine.llama import machine_hardware

        hardware = machine_hardware()
    return default_context(estimate, hardware, ceiling=DEFAULT_CTX_CEILING, cpu_moe=options.cpu_moe,
                           parallel=max(1, parallel))


def _cache_room(summary: Any, n_ctx: int, hardware: Any) -> tuple[int, int]:
    """(bytes a context token takes in caches, bytes of memory free for them on this machine)."""
    from agentworld_local.models.memory import estimate_memory

    estimate = estimate_memory(summary, n_ctx)
    if hardware is None:
        from agentworld_local.engine.llama import machine_hardware

        hardware = machine_hardware()
    room = hardware.ram_available + sum(gpu.free_bytes or 0 for gpu in hardware.gpus if not gpu.unified)
    return estimate.kv_bytes_per_token + estimate.compute_per_token, room


def ctx_ceiling(model: str, *, hardware: Any = None) -> tuple[int | None, str]:
    """(the largest context `model` takes on this machine, why), for choosing one; (None, "")
    when nothing limits it here (a scripted backend, a file that cannot be inspected: its load
    says why)."""
    if model.startswith(SCRIPTED):
        return None, ""
    from agentworld_local.models.inspect import inspect_gguf
    from agentworld_local.models.resolve import resolve_model

    path = resolve_model(model).path
    try:
        summary = inspect_gguf(path)
    except Exception:  # noqa: BLE001 - a damaged file gets its own clear message from the load
        return None, ""
    trained = summary.context_length or None
    per_token, room = _cache_room(summary, trained or MIN_CTX, hardware)
    fits = room // per_token // 1024 * 1024 if per_token else None
    if fits is not None and (trained is None or fits < trained):
        return max(fits, MIN_CTX), "what this machine's free memory holds"
    return trained, f"what {path.name} was trained for"


def prompt_counter(model: str) -> Any:
    """Counts prompt tokens as `model` will, before it is loaded: `count_tokens(messages, think)`
    as the Backend protocol has it, and `close()`.

    A GGUF's vocabulary alone is read (engine/llama/vocab.py); a scripted backend counts as it
    generates.
    """
    if model.startswith(SCRIPTED):
        from agentworld_local.engine.scripted import ScriptedBackend

        return ScriptedBackend.from_file(model[len(SCRIPTED):])
    from agentworld_local.engine.llama.vocab import PromptCounter
    from agentworld_local.models.resolve import resolve_model

    return PromptCounter(resolve_model(model).path)


def model_limits(info: Any, think: str | None) -> list[str]:
    """What the model cannot do as asked, as notices to say once before the first turn.

    `info` is the backend's ModelInfo; `think` is the `--think` value given now (None when
    the thinking setting was not chosen now, e.g. on resume).
    """
    notices = []
    if info.chat_template_source == "fallback":
        notices.append(f"{info.name} carries no chat template; using a generic one, so answers may be poorer.")
    if think is not None and ThinkBudget.parse(think).mode != "off" and not info.template_thinks:
        notices.append(f"--think {think} has no effect: {info.name}'s chat template has no thinking.")
    return notices
