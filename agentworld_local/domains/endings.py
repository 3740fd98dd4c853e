"""When an agent's action ends its task, in each domain's own terms.

The environment faces (env/, the Gymnasium adapter) report it as `terminated`. The words
come from the action spaces the domains' prompts describe: `[]` in the terminal, OSWorld's
DONE / FAIL, AndroidWorld's status action, BrowserGym's message to the user or report of an
infeasible task. The tool domains (mcp, swe, search) have no such action: an agent ends by
answering its user, which never reaches the environment.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _terminal(payload: Any) -> bool:
    return payload == []


def _web(payload: Any) -> bool:
    return isinstance(payload, dict) and payload.get("action") in ("send_msg_to_user", "report_infeasible")


def _os(payload: Any) -> bool:
    return isinstance(payload, dict) and payload.get("code") in ("DONE", "FAIL")


def _android(payload: Any) -> bool:
    return isinstance(payload, dict) and payload.get("action_type") == "status"


_ENDINGS: dict[str, Callable[[Any], bool]] = {"terminal": _terminal, "web": _web, "os": _os, "android": _android}


def ends_task(domain: str, payload: Any) -> bool:
    """Whether the parsed action `payload` (Action.payload) declares the task over."""
    ending = _ENDINGS.get(domain)
    return ending is not None and ending(payload)
