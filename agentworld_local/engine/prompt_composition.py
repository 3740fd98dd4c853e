"""What a session adds to its domain's prompts: control instructions, tools, a fictional world.

Where each goes follows the official prompt structure: control instructions are task-level
guidance, so they join the turn's `**Task Instruction:**`; tool definitions and a world
description are standing facts of the environment, so they join the system prompt (the
official templates fill tool definitions into the system prompt, which is why every
AgentWorldBench row carries its own `system_str`; the tool-call domains do this themselves).
"""

from __future__ import annotations

from typing import Any

from agentworld_local.domains import get_domain
from agentworld_local.domains.base import Domain

CONTROL_HEADING = "Control instructions:"
WORLD_HEADING = "## World description"


def task_with_controls(task: str, controls: list[str]) -> str:
    """The Task Instruction section's text: the task, then the control instructions as a list.

    Controls are task-level guidance for the simulator (what should go wrong, what is
    different), so they go where the contract puts the task, not into the state.
    """
    if not controls:
        return task
    items = "\n".join("- " + control.strip().replace("\n", "\n  ") for control in controls)
    block = f"{CONTROL_HEADING}\n{items}"
    return f"{task.strip()}\n\n{block}" if task.strip() else block


def with_session_tools(domain: Domain, tools: list[dict[str, Any]] | None) -> Domain:
    """The domain, rebuilt with the session's tools when they differ from its own, so that
    the model is shown them and actions are checked against them. A domain that takes no
    tools raises InputError (from the registry) saying which domains do.

    Whole definitions are compared, in their normalized form: a scenario that keeps a
    default tool's name but changes its description or arguments must win.
    """
    if not tools:
        return domain
    rebuilt = get_domain(domain.name, tools=tools)
    return domain if rebuilt.tools() == domain.tools() else rebuilt


def compose_system_prompt(base: str, *, world: str = "") -> str:
    """The domain's system prompt plus the session's fictional-world description.

    A world description is a standing fact of the environment, like the tool definitions
    that tool-call domains already list in their system prompt, so it goes there too.
    """
    if not world.strip():
        return base
    return (
        f"{base.rstrip(chr(10))}\n\n{WORLD_HEADING}\nThe environment belongs to this fictional world; keep "
        f"every observation consistent with it, even where it differs from the real world.\n{world.strip()}\n"
    )
