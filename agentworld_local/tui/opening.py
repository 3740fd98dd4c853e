"""Opening a session for the TUI from what the user chose: a new one or a saved file."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agentworld_local.engine.world import World
from agentworld_local.session.core import Session
from agentworld_local.session.files import ensure_new_file
from agentworld_local.session.resume_rules import ResumeOptions
from agentworld_local.session.spec import SessionSpec

if TYPE_CHECKING:
    from agentworld_local.tui.app import SessionRequest


def session_spec(request: SessionRequest) -> SessionSpec:
    """The session core's spec for a request (its rules merge the scenario and the options)."""
    spec = SessionSpec(domain=request.domain, scenario=request.scenario, task=request.task,
                       controls=list(request.controls), prompts=request.prompts, think=request.think, seed=request.seed)
    chosen = {name: value for name, value in (("max_tokens", request.max_tokens), ("temperature", request.temperature))
              if value is not None}
    return replace(spec, **chosen)  # None: the spec's default


def open_session(backend: Any, request: SessionRequest) -> Session:
    """Resume `request.resume`, or a new session in the new file `request.out`."""
    if request.resume is not None:  # sampling given now applies to the new turns, which record it
        going_on = ResumeOptions(think=request.think, max_tokens=request.max_tokens, temperature=request.temperature)
        return Session.resume(request.resume, backend, options=going_on)
    assert request.out is not None
    resolved = session_spec(request).resolve()
    ensure_new_file(request.out)
    world = World(backend, resolved.domain, resolved.settings)
    return Session.create(world, request.out, scenario=resolved.scenario_ref)
