"""What the user chose for a new session, as the session core's spec (the runner opens it)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from agentworld_local.session.spec import SessionSpec

if TYPE_CHECKING:
    from agentworld_local.tui.app import SessionRequest


def session_spec(request: SessionRequest) -> SessionSpec:
    """The session core's spec for a request (its rules merge the scenario and the options)."""
    spec = SessionSpec(domain=request.domain, scenario=request.scenario, task=request.task,
                       controls=list(request.controls), prompts=request.prompts, think=request.think, seed=request.seed,
                       shared_world=request.shared_world)
    chosen = {name: value for name, value in (("max_tokens", request.max_tokens), ("temperature", request.temperature))
              if value is not None}
    return replace(spec, **chosen)  # None: the spec's default
