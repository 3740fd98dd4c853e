"""Which actions only read a world: declared per domain, here and nowhere else.

In a world created with shared reads (`awl worlds create NAME --shared-reads`), such an action
is answered the way the world first answered it, in any episode and after any history:

- web: `goto URL` (the page at a URL the world has already shown);
- search: `web_search` with the same queries, `web_extractor` of the same URL;
- mcp and swe: a tool call whose tool is annotated `readOnlyHint: true` (the MCP annotation),
  with the same arguments;
- terminal, os and android: none (a command or a tap may change what it reads).

What this guarantees: the same read meets byte-identical text across episodes, processes and
restarts. What it cannot: the consistency of what the model writes afterwards, or of a page
with a state that an earlier action in one episode changed (a form submitted, a file written);
a world whose reads depend on its history should leave shared reads off.
"""

from __future__ import annotations

import json
from typing import Any

from agentworld_local.domains.base import Action, Domain

#: Search tools that only read (domains/search.py).
SEARCH_READS = frozenset({"web_search", "web_extractor"})
#: Web actions that only read (domains/web.py): going to a URL.
WEB_READS = frozenset({"goto"})


def read_of(domain: Domain, action: Action) -> str | None:
    """The canonical text of `action` when it only reads the world, else None."""
    payload = action.payload
    if not isinstance(payload, dict):
        return None
    if domain.name == "web":
        return action.prompt_text if payload.get("action") in WEB_READS else None
    name = payload.get("name")
    if domain.name == "search" and name in SEARCH_READS:
        return _call_text(payload)
    if domain.name in ("mcp", "swe") and _read_only_tool(domain, name):
        return _call_text(payload)
    return None


def _read_only_tool(domain: Domain, name: Any) -> bool:
    for tool in domain.tools() or []:
        if isinstance(tool, dict) and tool.get("name") == name:
            annotations = tool.get("annotations")
            return isinstance(annotations, dict) and annotations.get("readOnlyHint") is True
    return False


def _call_text(payload: dict[str, Any]) -> str:
    return json.dumps({"name": payload.get("name"), "arguments": payload.get("arguments")},
                      sort_keys=True, ensure_ascii=True)
