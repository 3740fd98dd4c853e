"""Domains registered by name. Each is one module; entries load lazily."""

from __future__ import annotations

import importlib
from typing import Any, Literal

from agentworld_local.domains.base import Action, Domain
from agentworld_local.errors import InputError, did_you_mean

# name -> "module:Class"; lazy so that importing the registry stays cheap.
_REGISTRY: dict[str, str] = {
    "terminal": "agentworld_local.domains.terminal:TerminalDomain",
    "swe": "agentworld_local.domains.swe:SweDomain",
    "mcp": "agentworld_local.domains.mcp:MCPDomain",
    "search": "agentworld_local.domains.search:SearchDomain",
    "web": "agentworld_local.domains.web:WebDomain",
    "os": "agentworld_local.domains.os:OSDomain",
    "android": "agentworld_local.domains.android:AndroidDomain",
}
#: What a domain can do: class attributes of every domain (see `Domain` in base.py).
Capability = Literal["takes_tools", "shows_file_system", "reads_keystrokes"]


def domain_names() -> list[str]:
    return sorted(_REGISTRY)


def domains_with(capability: Capability) -> list[str]:
    """The names of the domains that have `capability`, sorted (for messages and choices)."""
    return [name for name in domain_names() if getattr(domain_class(name), capability)]


def domain_class(name: str) -> type:
    """The class of the domain `name` (its capabilities are class attributes)."""
    entry = _REGISTRY.get(name)
    if entry is None:
        raise InputError(
            f"Unknown domain `{name}`.",
            f"{did_you_mean(name, _REGISTRY)} Available: {', '.join(domain_names())}.".lstrip(),
        )
    module_name, _, class_name = entry.partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def get_domain(
    name: str, *, tools: list[dict[str, Any]] | None = None, state_format: str | None = None
) -> Domain:
    """The domain `name`, optionally with the session's tool definitions or state format.

    `tools` (mcp, search, swe): the tools the agent may call; the domain's system prompt
    lists them and its parser accepts exactly them. `state_format` (web): `axtree` or `html`.
    """
    cls = domain_class(name)
    options: dict[str, Any] = {}
    if tools:
        if not cls.takes_tools:
            raise InputError(
                f"The {name} domain takes no tool definitions.",
                f"Tool definitions belong to the {', '.join(domains_with('takes_tools'))} domains; "
                "remove them or change the domain.",
            )
        options["tools"] = tools
    if state_format is not None:
        formats = getattr(cls, "state_formats", ())
        if state_format not in formats:
            accepted = f"Use one of: {', '.join(formats)}." if formats else "It has a single state format."
            raise InputError(f"The {name} domain has no state format `{state_format}`.", accepted)
        options["state_format"] = state_format
    return cls(**options)


__all__ = ["Action", "Capability", "Domain", "domain_class", "domain_names", "domains_with", "get_domain"]
