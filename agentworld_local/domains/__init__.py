"""Domains registered by name. Each is one module; entries load lazily."""

from __future__ import annotations

import difflib
import importlib

from agentworld_local.domains.base import Action, Domain
from agentworld_local.errors import InputError

# name -> "module:Class"; lazy so that importing the registry stays cheap.
_REGISTRY: dict[str, str] = {
    "terminal": "agentworld_local.domains.terminal:TerminalDomain",
}


def domain_names() -> list[str]:
    return sorted(_REGISTRY)


def get_domain(name: str) -> Domain:
    entry = _REGISTRY.get(name)
    if entry is None:
        close = difflib.get_close_matches(name, _REGISTRY, n=1)
        suggestion = f"Did you mean `{close[0]}`? " if close else ""
        raise InputError(
            f"Unknown domain `{name}`.",
            f"{suggestion}Available: {', '.join(domain_names())}.",
        )
    module_name, _, class_name = entry.partition(":")
    return getattr(importlib.import_module(module_name), class_name)()


__all__ = ["Action", "Domain", "domain_names", "get_domain"]
