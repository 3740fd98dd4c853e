"""agentworld-local: a local sandbox for language world models."""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"


def make(id_or_domain: str, model: str | None = None, **options: Any) -> Any:
    """A simulated environment for an agent (env/factory.py): `agentworld_local.make("agentworld/Terminal-v0", model=...)`.

    env/ is imported on first use by name, not by an import statement: every layer reads
    `__version__` from this package, and must not be seen to depend on env/ (the layers
    contract), nor pay for importing it."""
    return importlib.import_module("agentworld_local.env").make(id_or_domain, model, **options)
