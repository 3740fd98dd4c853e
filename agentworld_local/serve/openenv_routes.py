"""`awl serve --openenv`'s HTTP `/reset` and `/step`, in place of openenv-core's own.

OpenEnv's routes read a body into models that allow any extra field and coerce types
(`"seed": false` became seed 0), then pass every field as a keyword argument through its own
helpers, where a field named `self` or `func` collided with their parameters (a 500 and a
traceback). Its OpenAPI document also left out the 400 a reset answers for an option awl does
not take, and its `/step` examples (`{"action": {"value": 1}}`) are no action of awl's.

Here the same protocol (the same paths, bodies and answers; the WebSocket is OpenEnv's) with:
- `/reset`: the body's fields reach `AwlWorld.reset` as they came, never coerced, so every rule
  of a reset (the seed's type, the options awl takes: RESET_OPTIONS) is the one reset's
  own, and a refusal is its one-line 400 (documented, with the other statuses a reset answers);
  the document lists each option with its type and says no other field is taken;
- `/step`: the action is checked as `AwlAction` (422 otherwise, as OpenEnv answers) and the
  document shows it, with examples that are actions.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

from fastapi import Body
from fastapi.routing import APIRoute
from openenv.core.env_server.serialization import serialize_observation
from openenv.core.env_server.types import ResetResponse, StepResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator

#: The JSON schema of each reset option awl takes (serve/openenv.py checks each the same way).
_TEXT = {"type": "string"}
RESET_FIELDS: dict[str, dict[str, Any]] = {
    "seed": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}],
             "description": "The episode's sampling seed (a whole number of 0 or more; default: a random one)"},
    "episode_id": {"anyOf": [{"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$"}, {"type": "null"}],
                   "description": "The session file's name in the server's folder (default: a new one)"},
    "domain": {**_TEXT, "description": "Another domain: terminal, swe, mcp, search, web, os or android"},
    "scenario": {**_TEXT, "description": "A scenario by name (GET /scenarios of `awl serve`, `awl scenarios list`)"},
    "task": {**_TEXT, "description": "The episode's task"},
    "initial_state": {**_TEXT, "description": "The starting screen or state"},
    "controls": {"anyOf": [_TEXT, {"type": "array", "items": _TEXT}],
                 "description": "Instructions to the world model (one, or a list)"},
    "world": {**_TEXT, "description": "A description of a fictional world"},
    "think": {"anyOf": [_TEXT, {"type": "integer"}], "description": "full, off, or a thinking budget in tokens"},
    "temperature": {"type": "number", "description": "The sampling temperature"},
    "max_tokens": {"type": "integer", "description": "The most tokens of one answer"},
    "reward": {"type": "boolean", "description": "Whether the server's reward judges this episode (default: yes when it has one)"},
    "shared_world": {"anyOf": [{"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"}, {"type": "null"}],
                     "description": "The shared world the episode joins, by name (never a path): the same seed and "
                                    "actions meet the same observations (default: the server's --shared-world)"},
}
_REFUSED = {"type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"]}
#: What a reset may answer besides 200 and 422 (serve/statuses.py maps awl's errors to these).
RESET_STATUSES = {
    400: "Refused in one line: a body that is not JSON, an option awl does not take, a value of the wrong type, an unknown domain or "
         "scenario, a shared_world that is no world name, a seed that is no whole number of 0 or more, an episode_id that names no file or exists",
    409: "The reset was cancelled, or its session cannot open now",
    413: "The body is larger than the server's --max-body-bytes",
    503: "The server is shutting down, or its model cannot take the session now",
}

STEP_STATUSES = {400: "The body is not JSON", 413: RESET_STATUSES[413]}


def _reset_schema(schema: dict[str, Any]) -> None:
    schema.update(properties=RESET_FIELDS, additionalProperties=False,
                  examples=[{"seed": 42}, {"scenario": "disk-full-server", "seed": 7}, {}])


def _not_empty(schema: dict[str, Any]) -> None:
    text = schema["properties"]["action"]
    # Text, or JSON given as JSON (a list or an object: its text is read, AwlAction's validator).
    schema["properties"]["action"] = {"anyOf": [{"type": "string", "minLength": 1}, {"type": "array"}, {"type": "object"}],
                                      "title": text.get("title", "Action"), "description": text.get("description", "")}


class AwlResetRequest(BaseModel):
    """A reset's body: read as it came (the reset checks each field), documented as RESET_FIELDS."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_reset_schema)


def add_awl_routes(app: Any, factory: Callable[[], Any], action_cls: type[BaseModel]) -> None:
    """Put awl's `/reset` and `/step` in place of OpenEnv's in `app` (same paths, same answers)."""

    class StepAction(action_cls):  # type: ignore[valid-type, misc]
        """The action of an HTTP step: not empty (an empty one is no keystroke, call or click of any domain)."""

        model_config = ConfigDict(title="AwlStepAction", json_schema_extra=_not_empty)

        @field_validator("action")
        @classmethod
        def _not_empty(cls, value: str) -> str:
            if not value:
                raise ValueError("an action is not empty")
            return value

    class AwlStepRequest(BaseModel):
        """A step's body, as OpenEnv's (`timeout_s` and `request_id` are taken and not used)."""

        model_config = ConfigDict(extra="allow", json_schema_extra={"examples": [
            {"action": {"action": "ls -la"}}, {"action": {"action": "[]", "final": True}, "timeout_s": 30.0}]})

        action: StepAction = Field(description="The action, as /schema's action shows it")
        timeout_s: float | None = Field(None, gt=0, description="Taken for OpenEnv's clients; a turn is never cut by it")
        request_id: str | None = Field(None, max_length=255, description="Taken for OpenEnv's clients")

    async def reset(request: AwlResetRequest = Body(default_factory=AwlResetRequest)) -> ResetResponse:
        fields = dict(request.model_extra or {})
        observation = await _in_a_world(factory, lambda world: world.reset(**fields))
        return ResetResponse(**serialize_observation(observation))

    async def step(request: AwlStepRequest) -> StepResponse:
        observation = await _in_a_world(factory, lambda world: world.step(request.action))
        return StepResponse(**serialize_observation(observation))

    # FastAPI reads the annotations, strings here (a class of this call's), in the module's globals.
    step.__annotations__ = {"request": AwlStepRequest, "return": StepResponse}

    for path, endpoint, response, statuses in (("/reset", reset, ResetResponse, RESET_STATUSES),
                                               ("/step", step, StepResponse, STEP_STATUSES)):
        old = next(route for route in app.router.routes
                   if isinstance(route, APIRoute) and route.path == path and "POST" in route.methods)
        app.router.routes.remove(old)
        responses = {**old.responses, **{status: {"description": text, "content": {"application/json": {"schema": _REFUSED}}}
                                         for status, text in statuses.items()}}
        app.add_api_route(path, endpoint, methods=["POST"], response_model=response, tags=old.tags,
                          summary=old.summary, description=old.description, responses=responses)
    app.openapi_schema = None  # made again from these routes


async def _in_a_world(factory: Callable[[], Any], call: Callable[[Any], Any]) -> Any:
    """`call` on a fresh world in a thread (OpenEnv's stateless HTTP mode); the world closed after."""
    world = factory()
    try:
        return await asyncio.to_thread(functools.partial(call, world))
    finally:
        world.close()
