"""Loading a model for the TUI: progress and notices go to callbacks, never to stderr
(a line printed under a full-screen app garbles it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentworld_local.session.loading import load_backend


def load_model(
    model: str, *, ctx: int | None = None, gpu_layers: str = "auto", threads: int | None = None,
    progress: Callable[[float], None] | None = None, notice: Callable[[str], None] | None = None,
) -> Any:
    """The backend for `model` (a registry name, a GGUF path, or `scripted:FILE`), loaded by
    the session core; called from a thread worker."""
    return load_backend(model, ctx=ctx, gpu_layers=gpu_layers, threads=threads, verbose=False,
                        progress=progress, notice=notice or (lambda text: None))
