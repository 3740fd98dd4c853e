"""Checks that `awl run` and `awl demo` make before loading a model: a mistake costs seconds, not a load.

Loading the real model takes minutes, so every option that can be checked without it is
checked first: numbers out of range, an `--out` that cannot be written, a context the model
or the machine cannot hold.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from agentworld_local.defaults import DEFAULT_CTX, DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE, MIN_CTX
from agentworld_local.errors import InputError


def _notice(text: str) -> None:
    from agentworld_local.cli.consoles import stderr_console

    stderr_console().print(f"awl: {text}", markup=False)


def check_text_option(name: str, value: str | None) -> None:
    """Text from the command line may hold bytes that are not UTF-8 (Python keeps them as lone
    surrogates); they would fail much later, inside the tokenizer."""
    if value is None:
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as problem:
        raise InputError(
            f"{name} holds bytes that are not UTF-8 text (at character {problem.start + 1}).",
            "Set your terminal to UTF-8, or pass the text in a UTF-8 file.",
        ) from None


def check_sampling(*, max_tokens: int, temperature: float) -> None:
    if max_tokens < 1:
        raise InputError(
            f"--max-tokens {max_tokens} leaves no room for an observation.",
            f"Give a positive number, e.g. `--max-tokens {DEFAULT_MAX_TOKENS}` (the default).",
        )
    if not temperature >= 0:  # also refuses NaN
        raise InputError(
            f"--temperature {temperature} is not allowed: it must be 0 (greedy) or more.",
            f"Use e.g. `--temperature {DEFAULT_TEMPERATURE}` (the model card's value).",
        )


def check_threads(threads: int | None) -> int | None:
    """The thread count to use: refused below 1, capped to the CPUs this process may use."""
    if threads is None:
        return None
    if threads < 1:
        raise InputError(f"--threads {threads} is not a thread count.", "Give 1 or more, or leave it out.")
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if threads > available:
        _notice(f"--threads {threads} is more than the {available} CPUs here; using {available}.")
        return available
    return threads


def check_ctx_value(ctx: int | None) -> None:
    if ctx is not None and ctx < MIN_CTX:
        raise InputError(
            f"--ctx {ctx} is too small: the system prompt and one turn need at least {MIN_CTX:,} tokens.",
            f"Use `--ctx {MIN_CTX}` or more (the default is {DEFAULT_CTX:,}).",
        )


def check_ctx_for_model(model_path: Path, ctx: int | None, *, hardware: Any = None) -> int:
    """The context size to load: at most what the model was trained on, and what memory can hold.

    An explicit `--ctx` beyond either is refused; the default is lowered to fit, and that is said.
    `hardware` (a models.hardware.Hardware) is for tests; by default this machine's.
    """
    from agentworld_local.models.inspect import inspect_gguf
    from agentworld_local.models.memory import estimate_memory

    wanted = DEFAULT_CTX if ctx is None else ctx
    try:
        summary = inspect_gguf(model_path)
    except Exception:  # noqa: BLE001 - a damaged file gets its own clear message from the load
        return wanted
    trained = summary.context_length
    if trained and wanted > trained:
        if ctx is not None:
            raise InputError(
                f"--ctx {ctx:,} is more than {model_path.name} was trained for ({trained:,} tokens).",
                f"Use `--ctx {trained}` or less.",
            )
        _notice(f"{model_path.name} was trained for {trained:,} tokens of context; using {trained:,}.")
        wanted = trained
    estimate = estimate_memory(summary, wanted)
    per_token = estimate.kv_bytes_per_token + estimate.compute_per_token
    if hardware is None:
        from agentworld_local.engine.llama import machine_hardware

        hardware = machine_hardware()
    room = hardware.ram_available + sum(gpu.free_bytes or 0 for gpu in hardware.gpus if not gpu.unified)
    if per_token and per_token * wanted > room:
        from agentworld_local.models.units import format_bytes

        fits = max(room // per_token // 1024 * 1024, 0)
        advice = f"Use `--ctx {fits}` or less." if fits >= MIN_CTX else "Free memory, or use a machine with more."
        raise InputError(
            f"A {wanted:,}-token context needs about {format_bytes(per_token * wanted)} for its cache alone; "
            f"this machine has {format_bytes(room)} free.",
            advice,
        )
    return wanted


def check_writable(path: Path) -> None:
    """Refuse, before loading, a trajectory path whose file cannot be created."""
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InputError(
            f"Cannot write {path}: {ancestor} is a file, not a directory.",
            "Choose an `--out` path inside a directory.",
        )
    try:
        # Really try: permissions, a read-only mount, a full disk. Nothing is left behind.
        with tempfile.TemporaryFile(dir=ancestor):
            pass
    except OSError as problem:
        raise InputError(
            f"Cannot write {path}: {ancestor} is not writable ({problem.strerror or problem}).",
            "Choose an `--out` path in a directory you can write to.",
        ) from None
