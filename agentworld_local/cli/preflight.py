"""Checks that `awl run` and `awl demo` make before loading a model: a mistake costs seconds, not a load.

Loading the real model takes minutes, so every option that can be checked without it is
checked first: numbers out of range, an `--out` that cannot be written, a context the model
or the machine cannot hold.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from agentworld_local.errors import InputError
# The checks the session core makes (session/spec.py, engine/loading.py), for the commands
# that make them early.
from agentworld_local.engine.loading import check_ctx_value  # noqa: F401
from agentworld_local.session.spec import check_sampling, check_text as check_text_option  # noqa: F401


def _notice(text: str) -> None:
    from agentworld_local.cli.consoles import stderr_console

    stderr_console().print(f"awl: {text}", markup=False)


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
