"""Opening a session for the TUI from what the user chose: a new one or a saved file."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agentworld_local.domains import get_domain
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import ThinkBudget
from agentworld_local.engine.world import World
from agentworld_local.scenarios import load_scenario
from agentworld_local.session.core import Session
from agentworld_local.session.files import ensure_new_file

if TYPE_CHECKING:
    from agentworld_local.tui.app import SessionRequest


def open_session(backend: Any, request: SessionRequest) -> Session:
    """Resume `request.resume`, or a new session in the new file `request.out`."""
    if request.resume is not None:
        return Session.resume(request.resume, backend)
    assert request.out is not None
    try:
        from agentworld_local.session.spec import SessionSpec  # the session core's one set of merge rules
    except ImportError:
        SessionSpec = None
    scenario = load_scenario(request.scenario) if request.scenario else None
    ensure_new_file(request.out)
    if SessionSpec is not None and hasattr(SessionSpec, "resolve"):
        resolved = _resolve_spec(SessionSpec, request)
        if resolved is not None:
            domain, settings = resolved
            if request.max_tokens is not None:
                settings.sampling = replace(settings.sampling, max_tokens=request.max_tokens)
            world = World(backend, domain, settings)
            return Session.create(world, request.out, scenario=scenario.ref() if scenario else None)
    domain_name = request.domain or (scenario.domain if scenario else "terminal")
    settings = SessionSettings(think=ThinkBudget.parse(request.think), seed=request.seed)
    if request.max_tokens is not None:
        settings.sampling = replace(settings.sampling, max_tokens=request.max_tokens)
    if scenario is not None:
        settings = scenario.apply(settings)
    world = World(backend, get_domain(domain_name), settings)
    return Session.create(world, request.out, scenario=scenario.ref() if scenario else None)


def _resolve_spec(spec_type: Any, request: SessionRequest) -> tuple[Any, SessionSettings] | None:
    """Domain and settings from the session core's SessionSpec, when its shape is the one we know."""
    try:
        spec = spec_type(domain=request.domain, scenario=request.scenario, think=request.think, seed=request.seed)
    except TypeError:
        return None
    resolved = spec.resolve()
    domain = getattr(resolved, "domain", None)
    settings = getattr(resolved, "settings", None)
    if domain is None or settings is None:
        return None
    return domain, settings
