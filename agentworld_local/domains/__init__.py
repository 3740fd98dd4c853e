"""Domains registered by name. Each is one module; entries load lazily."""

from __future__ import annotations

import importlib
from typing import Any

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
# Domains whose state includes tool definitions that a session or scenario may replace.
TOOL_DOMAINS = ("mcp", "search", "swe")


def domain_names() -> list[str]:
    return sorted(_REGISTRY)


def _domain_class(name: str) -> type:
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
    cls = _domain_class(name)
    options: dict[str, Any] = {}
    if tools:
        if name not in TOOL_DOMAINS:
            raise InputError(
                f"The {name} domain takes no tool definitions.",
                f"Tool definitions belong to the {', '.join(TOOL_DOMAINS)} domains; remove them or change the domain.",
            )
        options["tools"] = tools
    if state_format is not None:
        formats = getattr(cls, "state_formats", ())
        if state_format not in formats:
            accepted = f"Use one of: {', '.join(formats)}." if formats else "It has a single state format."
            raise InputError(f"The {name} domain has no state format `{state_format}`.", accepted)
        options["state_format"] = state_format
    return cls(**options)


__all__ = ["Action", "Domain", "TOOL_DOMAINS", "domain_names", "get_domain"]
