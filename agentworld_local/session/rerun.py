"""A saved session played again live on a model (`awl demo --model`): the same setup and the
same actions, with the model predicting the observations anew.

The setup comes from the file's header (domain, tools, state format, task, starting state,
controls, world); sampling, thinking and seed are chosen now. Control instructions added
before a turn are given again before that turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld_local.defaults import DEFAULT_MAX_TOKENS, DEFAULT_SEED, DEFAULT_TEMPERATURE
from agentworld_local.session.core import domain_from_header
from agentworld_local.session.script import CONTROL, ScriptLine
from agentworld_local.session.spec import SessionSpec
from agentworld_local.trajectory.reader import read_trajectory


@dataclass
class LivePlan:
    """What a face needs to run a saved session again: a spec, its script, the scenario ref."""

    spec: SessionSpec
    lines: list[ScriptLine]
    scenario: dict[str, Any] | None
    domain: str


def live_plan(
    path: str | Path, *, think: str | None = None, seed: int = DEFAULT_SEED,
    max_tokens: int = DEFAULT_MAX_TOKENS, temperature: float = DEFAULT_TEMPERATURE,
) -> LivePlan:
    """The setup and actions of the saved session in `path` (its current branch)."""
    traj = read_trajectory(path)
    header = traj.header
    domain = domain_from_header(header)  # parses the actions as the session did
    spec = SessionSpec(
        domain=header.domain, task=header.task, initial_state=header.initial_state or None,
        controls=list(header.controls), tools=header.tools, world=header.world, state_format=header.state_format,
        temperature=temperature, max_tokens=max_tokens, think=think, seed=seed,
    )
    lines: list[ScriptLine] = []
    for record in traj.current_branch():
        lines += [ScriptLine(record.turn, None, CONTROL, text) for text in record.controls_added]
        lines.append(ScriptLine(record.turn, domain.parse_action(record.action)))
    return LivePlan(spec=spec, lines=lines, scenario=header.scenario, domain=header.domain)
