"""What an agent is to the episode loop, and what it reads and answers."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentworld_local.domains.base import Action, Domain

#: Called with each piece of the agent model's answer as it streams, and which ask it is (1, or
#: 2 after an answer the domain could not read: a face starts its text again), on the agent's thread.
OnText = Callable[[str, int], None]


@dataclass
class AgentHistory:
    """What the agent has seen: the task, the starting state, then each action it took and the
    observation the world model answered."""

    domain: Domain
    task: str = ""
    initial_state: str = ""
    turns: list[tuple[str, str]] = field(default_factory=list)  # (action text, observation)

    @property
    def observation(self) -> str:
        """The observation the next action answers (the starting state before the first turn)."""
        return self.turns[-1][1] if self.turns else self.initial_state


@dataclass(frozen=True)
class Proposal:
    """An agent model's next action: what it wrote and, when the domain could read it, the action.

    `action` is None when even the second ask did not parse (`error` says why) or the proposal
    was cancelled (`cancelled`)."""

    text: str
    action: Action | None
    thinking: str = ""
    asks: int = 1
    error: str = ""
    cancelled: bool = False


class Agent(Protocol):
    #: The agent model's identity for the trajectory header ({"name", "backend", ...}; no key).
    identity: dict[str, Any]

    def propose(self, history: AgentHistory, *, on_text: OnText | None = None,
                cancel: threading.Event | None = None) -> Proposal:
        """The next action for `history`, streaming the model's text to `on_text`; `cancel`
        stops the model at its next token (a cancelled Proposal comes back)."""
        ...

    def close(self) -> None: ...
