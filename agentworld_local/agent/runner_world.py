"""The world side of an episode over a SessionRunner: each step is one runner turn."""

from __future__ import annotations

from collections.abc import Callable

from agentworld_local.agent.episode import AgentStep
from agentworld_local.engine import events
from agentworld_local.errors import AwlError
from agentworld_local.session.runner import SessionRunner


def runner_world(runner: SessionRunner, session: str,
                 on_event: Callable[[events.SessionEvent], None] | None = None) -> Callable[[AgentStep], str]:
    """A `step_world` for run_episode: the step's action runs as a turn of `session` (with the
    agent side recorded in it), every event goes to `on_event`, the observation comes back.
    A refusal, an error or a cancelled turn is raised as its AwlError."""

    def step(agent_step: AgentStep) -> str:
        outcome = runner.step(session, agent_step.action, agent=agent_step.record).wait(on_event=on_event)
        outcome.raise_failure()
        finished = outcome.first(events.TurnFinished)
        if finished is None:
            raise AwlError("The turn ended without an observation.", "Run it again.")
        return finished.record.observation

    return step
