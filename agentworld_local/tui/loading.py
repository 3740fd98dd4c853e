"""Loading a model for the TUI: progress and notices go to callbacks, never to stderr
(a line printed under a full-screen app garbles it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: `scripted:FILE`: raw answers written in advance instead of a model (see testing/scripted.py).
SCRIPTED = "scripted:"
DEFAULT_CTX = 16384


def load_model(
    model: str, *, ctx: int | None = None, gpu_layers: str = "auto", threads: int | None = None,
    progress: Callable[[float], None] | None = None, notice: Callable[[str], None] | None = None,
) -> Any:
    """The backend for `model` (a registry name, a GGUF path, or `scripted:FILE`)."""
    try:
        from agentworld_local.session.loading import load_backend  # the session core's loader
    except ImportError:
        load_backend = None
    if load_backend is not None:
        return load_backend(model, ctx=ctx, gpu_layers=gpu_layers, threads=threads, verbose=False,
                            progress=progress, notice=notice)
    if model.startswith(SCRIPTED):
        from agentworld_local.testing.scripted import ScriptedBackend

        return ScriptedBackend.from_file(model[len(SCRIPTED):], n_ctx=ctx or DEFAULT_CTX)
    from agentworld_local.models.resolve import resolve_model

    resolved = resolve_model(model)
    import importlib

    llama = importlib.import_module("agentworld_local.engine.llama")
    return llama.LlamaBackend(resolved.path, gpu_layers=gpu_layers, n_ctx=ctx or DEFAULT_CTX, threads=threads,
                              name=resolved.name, progress=progress, notice=notice or (lambda text: None))
