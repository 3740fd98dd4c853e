"""A trajectory's header from a World: everything needed to understand, replay or resume it."""

from __future__ import annotations

from typing import Any

from agentworld_local import __version__
from agentworld_local.engine.world import World
from agentworld_local.session.resume_rules import model_ref
from agentworld_local.trajectory.schema import Header

#: Header.extra key: the shared world the session plays in (a resume or a fork rejoins it).
SHARED_WORLD = "shared_world"


def header_for(world: World, *, scenario: dict[str, Any] | None = None, note: str = "") -> Header:
    info = world.backend.info
    settings = world.settings
    header = Header(
        awl_version=__version__,
        model=model_ref(info),
        sampling=settings.sampling.to_dict(),
        seed=settings.seed,
        think=settings.think.label(),
        domain=world.domain.name,
        scenario=scenario,
        initial_state=world.initial_state,
        task=settings.task,
        system_prompt=world.system_prompt(),
        prompt_pack=settings.prompt_pack,
        note=note,
        controls=list(settings.controls),
        tools=world.domain.tools() or None,  # the tools in effect (a domain's defaults included)
        world=settings.world_description,
        state_format=getattr(world.domain, "state_format", None),
    )
    if settings.shared_world:  # written only when there is one, so other headers are unchanged
        header.extra[SHARED_WORLD] = settings.shared_world
    return header
