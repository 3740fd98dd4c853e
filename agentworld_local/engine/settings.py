"""What a session asks of the World: sampling, thinking, seed and the starting world.

Its own module so that scenarios (Scenario.apply) and the World both import it without
importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentworld_local.engine.types import SamplingConfig, ThinkBudget


@dataclass
class SessionSettings:
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    think: ThinkBudget = field(default_factory=lambda: ThinkBudget.parse(None))
    seed: int = 0
    task: str = ""
    initial_state: str | None = None  # None: the domain's default
    #: Control instructions (perturbations) from the start: they enter turn 1's Task Instruction.
    controls: list[str] = field(default_factory=list)
    #: A fictional-world description: it enters the system prompt.
    world_description: str = ""
    #: Tool definitions (swe, mcp, search): the domain is rebuilt with them (they enter its prompt).
    tools: list[dict[str, Any]] | None = None
    #: Replaces the whole system prompt (an imported benchmark row carries its own).
    system_prompt: str | None = None
    #: Where system_prompt came from when a prompt pack gave it (recorded in the header).
    prompt_pack: dict[str, Any] | None = None
    #: The shared world the session plays in (worlds/): the same actions meet the same answers.
    shared_world: str | None = None
