"""The world side of an episode over a SessionRunner: each step is one runner turn."""

from __future__ import annotations

from collections.abc import Callable

from agentworld_local.agent.episode import AgentStep
from agentworld_local.engine import events
from agentworld_local.errors import AwlError, Cancelled, InputError
from agentworld_local.session.runner import EventLog, SessionRunner


def runner_world(runner: SessionRunner, log: EventLog, session: str,
                 on_event: Callable[[events.SessionEvent], None] | None = None) -> Callable[[AgentStep], str]:
    """A `step_world` for run_episode: the step's action runs as a turn of `session` (with the
    agent side recorded in it), every event goes to `on_event`, the observation comes back.
    A refusal, an error or a cancelled turn is raised as its AwlError."""

    def step(agent_step: AgentStep) -> str:
        if not runner.step(session, agent_step.action, agent=agent_step.record):
            refused = [event for _, event in log.drain() if isinstance(event, events.Refused)]
            reason = refused[-1] if refused else None
            raise InputError(reason.message if reason else "The turn was refused.", reason.hint if reason else None)
        observation: str | None = None
        failure: AwlError | None = None
        for _, event in log.until_ready():
            if on_event is not None:
                on_event(event)
            if isinstance(event, events.TurnFinished):
                observation = event.record.observation
            elif isinstance(event, events.TurnCancelled):
                failure = Cancelled("The turn was cancelled.", "Nothing unfinished was saved.")
            elif isinstance(event, events.ErrorEvent):
                failure = event.error if isinstance(event.error, AwlError) else AwlError(event.message, event.hint)
        if failure is not None or observation is None:
            raise failure or AwlError("The turn ended without an observation.", "Run it again.")
        return observation

    return step
