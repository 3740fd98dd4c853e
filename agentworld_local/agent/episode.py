"""The episode loop: the agent proposes, a reviewer (or nobody) decides, the world answers.

An episode ends at its step limit, when an action ends the task in the domain's own terms
(domains/endings.py, as the environment faces report `terminated`: the action is still a turn,
so the trajectory holds it), when the agent's answer cannot be read as an action even after a
second ask, or when the reviewer or the user stops it.

`Episode` is the loop's state, one step at a time, for faces that run the world turns
themselves (the CLI feeds its steps to the session loop; the TUI to its runner bridge);
`run_episode` is the whole loop over a `step_world` callable.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentworld_local.errors import a_or_an
from agentworld_local.defaults import DEFAULT_EPISODE_STEPS
from agentworld_local.agent.protocol import Agent, AgentHistory, OnText, Proposal
from agentworld_local.domains.base import Action
from agentworld_local.domains.endings import ends_task

#: How a proposal became the turn's action (TurnRecord.agent["decision"]).
AUTO, APPROVED, EDITED, REPLACED = "auto", "approved", "edited", "replaced"
STOP = "stop"
#: Why an episode ended (EpisodeEnd.reason).
STEPS, TASK, UNREADABLE, STOPPED = "steps", "task", "unreadable", "stopped"
#: The most turns an episode takes when no limit is given: enough to do something, few enough to watch.
DEFAULT_STEPS = DEFAULT_EPISODE_STEPS
#: A submitted action this similar to the proposal (difflib's ratio) was edited, not replaced.
_EDITED_RATIO = 0.5


@dataclass(frozen=True)
class Decision:
    """What the reviewer made of a proposal: `kind` (AUTO, APPROVED, EDITED, REPLACED or STOP)
    and the action to run (None for STOP)."""

    kind: str
    action: Action | None = None


def judged(proposal: Proposal, submitted: Action) -> Decision:
    """The decision a face records when the user submits `submitted` for `proposal`: the same
    action is approved; a close one (most of the text kept) edited; anything else replaced."""
    proposed = proposal.action.text if proposal.action is not None else proposal.text
    if submitted.text.strip() == proposed.strip():
        return Decision(APPROVED, submitted)
    ratio = difflib.SequenceMatcher(None, proposed.strip(), submitted.text.strip()).ratio()
    return Decision(EDITED if ratio >= _EDITED_RATIO else REPLACED, submitted)


#: A reviewer: the proposal in, a decision out (None: every proposal runs as it is).
Review = Callable[[Proposal], Decision]


@dataclass(frozen=True)
class AgentStep:
    """The next turn's action, and the agent side of it for the trajectory (TurnRecord.agent)."""

    action: Action
    record: dict[str, Any]


@dataclass(frozen=True)
class EpisodeEnd:
    reason: str  # STEPS, TASK, UNREADABLE or STOPPED
    turns: int
    message: str


class Episode:
    """One episode's state (see the module's doc). Call `next_step()`, run its action as a
    turn, tell the observation to `observed()` (or `abandoned()` when the turn did not happen),
    and again, until `next_step()` returns None: `end` then says why."""

    def __init__(self, agent: Agent, history: AgentHistory, *, steps: int, review: Review | None = None,
                 on_text: OnText | None = None) -> None:
        if steps < 1:
            raise ValueError("an episode takes at least one step")
        self.agent = agent
        self.history = history
        self.steps = steps
        self.review = review
        self.on_text = on_text
        self.turns = 0
        self.end: EpisodeEnd | None = None
        self.last_proposal: Proposal | None = None
        self._pending: Action | None = None
        self._ending: Action | None = None

    def next_step(self, cancel: threading.Event | None = None) -> AgentStep | None:
        """The agent's next action as the reviewer decided it; None when the episode is over."""
        if self._pending is not None:
            raise RuntimeError("the last step's observation was not told (observed or abandoned)")
        if self.end is not None:
            return None
        if self._ending is not None:
            return self._finish(TASK, f"The agent ended its task ({_short(self._ending.text)}).")
        if self.turns >= self.steps:
            return self._finish(STEPS, f"The agent took {self.turns} step{'s' * (self.turns != 1)}, the episode's limit.")
        proposal = self.agent.propose(self.history, on_text=self.on_text, cancel=cancel)
        self.last_proposal = proposal
        if proposal.cancelled:
            return self._finish(STOPPED, "The agent was stopped while it proposed an action.")
        if proposal.action is None:
            return self._finish(UNREADABLE, f"The agent model's answer was not {a_or_an(self.history.domain.name)} action, "
                                f"even when asked again ({proposal.error}); its answer: {_short(proposal.text)!r}.")
        decision = self.review(proposal) if self.review is not None else Decision(AUTO, proposal.action)
        if decision.kind == STOP or decision.action is None:
            return self._finish(STOPPED, "The agent was stopped.")
        self._pending = decision.action
        record: dict[str, Any] = {"proposal": proposal.text, "decision": decision.kind, "asks": proposal.asks}
        if proposal.thinking:
            record["thinking"] = proposal.thinking
        return AgentStep(decision.action, record)

    def observed(self, observation: str) -> None:
        """The world's answer to the last step's action: the agent reads it next."""
        action, self._pending = self._pending, None
        if action is None:
            raise RuntimeError("no step is waiting for its observation")
        self.history.turns.append((action.text, observation))
        self.turns += 1
        if ends_task(self.history.domain.name, action.payload):
            self._ending = action

    def abandoned(self) -> None:
        """The last step's turn did not happen (cancelled, refused): the agent never saw it."""
        self._pending = None

    def stop(self, message: str = "The agent was stopped.") -> EpisodeEnd:
        self._pending = None
        self._finish(STOPPED, message)
        assert self.end is not None
        return self.end

    def _finish(self, reason: str, message: str) -> None:
        self.end = EpisodeEnd(reason, self.turns, message)
        return None


def run_episode(episode: Episode, step_world: Callable[[AgentStep], str], *,
                cancel: threading.Event | None = None) -> EpisodeEnd:
    """The whole loop: each step's action goes to `step_world`, which runs it as a turn and
    returns the observation (an exception ends the loop: the turns before it are the caller's)."""
    while (step := episode.next_step(cancel)) is not None:
        try:
            observation = step_world(step)
        except BaseException:
            episode.abandoned()
            raise
        episode.observed(observation)
    assert episode.end is not None
    return episode.end


def _short(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
