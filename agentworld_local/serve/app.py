"""`awl serve`'s HTTP face: FastAPI routes over the session registry (serve/registry.py).

The server parses requests and renders the runner's events; what a session does lives in
session/. Every refusal is `{"error": ..., "hint": ...}` with a 4xx status (a 5xx is the
server's own failure); `/docs` has the OpenAPI description.

The agent's view (defaults.REVEAL_SIMULATOR_HELP): a step's or regenerate's answer and stream are
the agent's, so by default they carry only what the environment would show (`turn`, `turns`,
`observation`, `reward`, `terminated`, `truncated`, `cut_short`; a stream: `action`,
`observation` and `observation_replaced` deltas, `reward` as its value, `turn_done` as the
answer's fields, `cancelled`, `ready`, `error`); with `reveal_simulator` (`awl serve
--reveal-simulator`) they add `session`, `head`, `reward_source` and `record` (the trajectory's
line: thinking, raw answer, tokens), and a stream sends every session event as it is. The
session routes (create, list, state, resume, fork, undo, close, trajectory) are the operator's:
they keep ids and file paths.

Shared worlds (worlds/): a session joins the world its `shared_world` names, else the server's
`--shared-world`; a turn the world answered before is served from its store. Where an answer
came from (the `from_world` event, the record's `extra.world`) is the simulator's side: shown
with `reveal_simulator` only.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import importlib.util
import inspect
import os
from collections.abc import AsyncIterator
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette.sse import EventSourceResponse

from agentworld_local.defaults import DEFAULT_MAX_TOKENS
from agentworld_local.domains import domain_names
from agentworld_local.domains.endings import ends_task
from agentworld_local.engine import events
from agentworld_local.engine.types import ThinkBudget
from agentworld_local.env.simulated import CUT_SHORT, control_list
from agentworld_local.errors import InputError
from agentworld_local.scenarios import list_scenarios, scenario_by_name
from agentworld_local.serve import errors
from agentworld_local.serve.bridge import AsyncRunnerBridge
from agentworld_local.serve.errors import responses
from agentworld_local.serve.security import BodyLimit, HostOriginGuard
from agentworld_local.serve.step_shortcut import StepShortcut
from agentworld_local.session.rewards import reward_hook
from agentworld_local.session.runner.outcome import Outcome
from agentworld_local.serve.limits import HttpProblem, ServeLimits
from agentworld_local.serve.registry import SessionRegistry, check
from agentworld_local.session.runner import NewSession
from agentworld_local.session.spec import SessionSpec
from agentworld_local.worlds.names import check_world_name

#: How often idle sessions are looked for (at most; a short idle limit looks more often).
_REAP_EVERY_S = 30.0


#: A text with something in it (not blank).
_Text = Annotated[str, Field(pattern=r"\S")]


class CreateSession(BaseModel):
    """A new session: a domain or a bundled scenario, and the session's options (None: the default)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    domain: str | None = Field(None, description="terminal, web, os, android, mcp, swe or search",
                               json_schema_extra=lambda schema: _one_of(schema, domain_names()))
    scenario: str | None = Field(None, description="A scenario's name (GET /scenarios lists them)",
                                 json_schema_extra=lambda schema: _one_of(
                                     schema, [item.name for item in list_scenarios(problems=[])]))
    task: str | None = None
    initial_state: str | None = None
    controls: list[_Text] | _Text | None = Field(None, description="Control instructions for the first turn")
    # One type on every face (OpenEnv, Gymnasium, TRL take it too): off, full, or tokens as an integer or
    # its digits; the one parser (ThinkBudget.parse) refuses anything else with the same line (400).
    think: str | int | None = Field(None, description="Thinking budget: off, full, or a number of tokens (16 or \"16\")",
                                    json_schema_extra=lambda schema: schema.update(anyOf=[
                                        {"type": "string", "pattern": r"^\s*(off|none|no|full|unlimited|on|[0-9]{1,9})\s*$"},
                                        {"type": "integer", "minimum": 0, "maximum": 999_999_999}, {"type": "null"}]))
    seed: int | None = None
    temperature: float | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=1)
    reward: bool | None = Field(None, description="Whether this session's turns earn the server's reward "
                                "(`awl serve --reward`); default: yes when the server has one")
    # Any JSON value reaches the one check every face makes (worlds/names.py): a number, a path or a
    # lone surrogate is refused with its line (422), never a type error of pydantic's or a path opened.
    shared_world: Any = Field(None, description="The shared world to join, by name (1-64 letters, digits, `-`, `_` "
                              "or `.`; never a path): the same actions meet the same stored observations in every "
                              "session of the world. Default: the server's `--shared-world`, else none",
                              json_schema_extra=lambda schema: schema.update(anyOf=[
                                  {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"}, {"type": "null"}]))


def _one_of(schema: dict[str, Any], names: list[str]) -> None:
    """The OpenAPI document names the values a field takes (the server checks them itself, 400)."""
    schema["enum"] = [*names, None]


class StepRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    action: str = Field(description="The agent's action in the domain's raw form, e.g. `ls -la` in the terminal")
    cancel_on_disconnect: bool = Field(
        False, description="Cancel the turn when this request's client goes away (nothing is saved for it). "
                           "Default: the turn runs to its end and is saved, so a client that reconnects finds it.")
    final: bool = Field(False, description="This is the episode's last step (the client's step limit): a reward that "
                                           "judges whole episodes (`awl serve --reward judge:...`) judges it now.")


class TurnRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    cancel_on_disconnect: bool = Field(False, description="As for a step.")


class ForkRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    turn: int | None = Field(None, description="Keep the first `turn` turns (default: all of them)")


def make_app(*, folder: Path, limits: ServeLimits = ServeLimits(), token: str | None = None,
             bridge: AsyncRunnerBridge | None = None, backend: Any = None, reward: Any = None,
             reveal_simulator: bool = False, shared_world: str | None = None) -> FastAPI:
    """The app over `bridge` (a runner with its model loaded) or a `backend` loaded already
    (tests); session files go to `folder`. With `token`, every request but /docs needs it.
    `reward`: what each session's turns earn (session/rewards.reward_hook's forms). Requests
    whose Host is not the server's (limits.allowed_hosts adds names) are refused (security.py).
    `reveal_simulator`: step answers and streams carry the simulator's side too (the module's doc).
    `shared_world`: the world of every session whose client names none (worlds/)."""
    if token is not None and not token.strip():
        raise InputError("The server's token is empty.", "Give a long random secret, or no token.")
    default_world = check_world_name(shared_world) if shared_world is not None else None
    bridge = bridge or AsyncRunnerBridge(backend=backend)
    folder.mkdir(parents=True, exist_ok=True)
    registry = SessionRegistry(bridge, folder, limits, reward_hook(reward))

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        reaper = asyncio.create_task(_reap(registry))
        try:
            yield
        finally:
            reaper.cancel()
            await asyncio.to_thread(bridge.close)  # every session closed, each turn saved

    app = FastAPI(title="awl serve", summary="Simulated environments from a language world model, over HTTP.",
                  lifespan=lifespan, dependencies=[Depends(bearer(token))] if token else [],
                  docs_url=None, redoc_url=None, default_response_class=errors.JsonAnswer, **_telemetry())
    app.state.registry = registry

    async def step_once(sid: str, body: StepRequest, request: Request | None = None) -> dict[str, Any]:
        turn = registry.turn(sid, "step", body.action, final=body.final)
        return _turn_result(registry, sid, await _collect(turn, request, registry, sid, body.cancel_on_disconnect),
                            reveal_simulator)

    # Innermost of the layers in front (added first): a plain step skips FastAPI's machinery.
    app.add_middleware(StepShortcut, step=step_once, body_model=StepRequest, token=token)
    app.add_middleware(BodyLimit, limit=limits.max_body_bytes)
    app.add_middleware(HostOriginGuard, allowed_hosts=limits.allowed_hosts)
    errors.install(app, RequestValidationError)
    _offline_docs(app)
    # Every route can answer these (a foreign Host or Origin, the token, the server's own failure).
    every = (403, 421, 500, *((401,) if token else ()))
    body = (400, 413, 422)  # a route that takes a body: one it cannot parse, too large, not the schema
    one = (*every, 404, 422)  # a route of one session: not in the folder; 422 also for a path FastAPI refuses
    turn = (*one, *body, 409, 502, 503)

    @app.get("/health", responses=responses(*every))
    async def health() -> dict[str, Any]:
        """The model served, the sessions open, the limits, and the model's `parallel`: turns that
        run at once, turns running and turns waiting; `servers`: each server the turns go to (one,
        or a fleet's several; none for a model in this process), its sessions, turns running,
        places, whether it is up, its failures and when a down one is asked again."""
        runner = bridge.runner
        return {"model": runner.model or runner.served_model, "sessions_open": registry.open_count,
                "limits": asdict(limits), **asdict(runner.load_now),
                "servers": [asdict(server) for server in runner.servers()]}

    @app.get("/sessions", responses=responses(*every))
    async def list_sessions() -> list[dict[str, Any]]:
        """Every session file in the server's folder, last changed first, open or not."""
        return await asyncio.to_thread(registry.listing)

    @app.post("/sessions", status_code=201, responses=responses(*every, *body, 409, 429, 503))
    async def create(body: CreateSession) -> dict[str, Any]:
        """Open a new session; its file is created in the server's folder."""
        spec = _spec(body, limits)
        spec.shared_world = _world_name(body.shared_world, default_world)
        resolved = spec.resolve()
        if body.reward and registry.reward is None:
            raise HttpProblem(400, "This server gives no reward.",
                              "Leave `reward` out (or send `reward: false`): the server was started without one.")
        reward = None if body.reward is False else registry.reward
        return await registry.create(lambda path: NewSession.from_spec(resolved, path, reward=reward),
                                     resolved.domain.name)

    @app.get("/sessions/{sid}", responses=responses(*one))
    async def state(sid: str) -> dict[str, Any]:
        """Where a session is: open or not, turns, head, the current observation (open ones)."""
        return await asyncio.to_thread(registry.state, sid)

    @app.post("/sessions/{sid}/resume", responses=responses(*one, 409, 422, 429, 503))
    async def resume(sid: str) -> dict[str, Any]:
        """Open a saved session of the folder again (one a restarted server lists, or one closed as idle)."""
        return await registry.resume(sid)

    @app.post("/sessions/{sid}/step", responses=responses(*turn))
    async def step(sid: str, body: StepRequest, request: Request) -> dict[str, Any]:
        """One turn: the action goes to the world model; the saved turn comes back. Beyond the
        model's `parallel` it waits its turn (in order); it is never refused for other sessions."""
        return await step_once(sid, body, request)

    @app.post("/sessions/{sid}/step/stream", response_class=EventSourceResponse,
              responses={**_STREAMED, **responses(*turn, json_route=False)})
    async def step_stream(sid: str, body: StepRequest) -> EventSourceResponse:
        """One turn as server-sent events: the session's events as they come, `turn_done` and `ready` last."""
        return await _sse(registry.turn(sid, "step", body.action, final=body.final), registry, sid,
                          body.cancel_on_disconnect, reveal_simulator)

    @app.post("/sessions/{sid}/regenerate", responses=responses(*turn))
    async def regenerate(sid: str, request: Request, body: TurnRequest | None = None) -> dict[str, Any]:
        """Run the last turn's action again with a new sample (the file keeps the old one)."""
        turn = registry.turn(sid, "regenerate")
        return _turn_result(registry, sid, await _collect(turn, request, registry, sid,
                                                          bool(body and body.cancel_on_disconnect)), reveal_simulator)

    @app.post("/sessions/{sid}/regenerate/stream", response_class=EventSourceResponse,
              responses={**_STREAMED, **responses(*turn, json_route=False)})
    async def regenerate_stream(sid: str, body: TurnRequest | None = None) -> EventSourceResponse:
        return await _sse(registry.turn(sid, "regenerate"), registry, sid, bool(body and body.cancel_on_disconnect),
                          reveal_simulator)

    @app.post("/sessions/{sid}/cancel", responses=responses(*one, 409))
    async def cancel(sid: str) -> dict[str, Any]:
        """Stop this session's turn in flight, or take it out of the queue (nothing is saved for
        it; its request answers 409, its stream ends with `turn_cancelled`). Other sessions go on."""
        return registry.cancel(sid)

    @app.post("/sessions/{sid}/undo", responses=responses(*one, 409, 503))
    async def undo(sid: str) -> dict[str, Any]:
        """Drop the last turn (the file keeps it and records the undo)."""
        return await registry.undo(sid)

    @app.post("/sessions/{sid}/fork", status_code=201, responses=responses(*one, *body, 409, 429, 503))
    async def fork(sid: str, body: ForkRequest | None = None) -> dict[str, Any]:
        """A new session with the first `turn` turns of this one; both stay open."""
        return await registry.fork(sid, body.turn if body else None)

    @app.get("/sessions/{sid}/trajectory", response_class=_Ndjson, responses=responses(*one, json_route=False))
    async def trajectory(sid: str) -> _Ndjson:
        """The session's trajectory file (JSON lines), between turns."""
        return _Ndjson(await registry.trajectory(sid))

    @app.delete("/sessions/{sid}", responses=responses(*one, 409, 503))
    async def close(sid: str) -> dict[str, Any]:
        """Close a session: its file keeps every turn (one that never had a turn leaves none)."""
        return await registry.close(sid)

    @app.get("/scenarios", responses=responses(*every))
    async def scenarios() -> list[dict[str, Any]]:
        """The scenarios a session may name (`scenario` in POST /sessions): the bundled ones and the user's."""
        found = await asyncio.to_thread(list_scenarios, problems=[])
        return [{"name": item.name, "domain": item.domain, "title": item.title} for item in found]

    return app


#: A stream's 200 in the OpenAPI document (EventSourceResponse names no media type of its own).
_STREAMED: dict[int | str, dict[str, Any]] = {200: {
    "description": "The turn's events as server-sent events (`event:` the event's name, `data:` its JSON)",
    "content": {"text/event-stream": {"schema": {"type": "string"}}}}}


class _Ndjson(Response):
    media_type = "application/x-ndjson"


def _offline_docs(app: FastAPI) -> None:
    """/docs (Swagger UI) and /redoc from assets the server serves itself (the fastapi-offline
    package's): no page loads anything from another site. Without the package: FastAPI's own
    pages (their assets come from a CDN)."""
    found = importlib.util.find_spec("fastapi_offline")
    if found is None or found.origin is None:
        app.add_route("/docs", lambda request: get_swagger_ui_html(openapi_url="/openapi.json", title="awl serve"),
                      include_in_schema=False)
        return
    from starlette.staticfiles import StaticFiles

    app.mount(_ASSETS, StaticFiles(directory=Path(found.origin).parent / "static"), name="docs-assets")

    async def swagger(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(openapi_url=f"{root}/openapi.json", title="awl serve",
                                   swagger_js_url=f"{root}{_ASSETS}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{root}{_ASSETS}/swagger-ui.css",
                                   swagger_favicon_url=f"{root}{_ASSETS}/favicon.png")

    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(openapi_url=f"{root}/openapi.json", title="awl serve",
                              redoc_js_url=f"{root}{_ASSETS}/redoc.standalone.js",
                              redoc_favicon_url=f"{root}{_ASSETS}/favicon.png", with_google_fonts=False)

    app.add_route("/docs", swagger, include_in_schema=False)
    app.add_route("/redoc", redoc, include_in_schema=False)


#: Where the docs pages' scripts and styles are served.
_ASSETS = "/docs-assets"


def _spec(body: CreateSession, limits: ServeLimits) -> SessionSpec:
    given = {name: value for name, value in (("temperature", body.temperature), ("max_tokens", body.max_tokens),
                                              ("seed", body.seed)) if value is not None}
    return SessionSpec(domain=body.domain, scenario=_scenario_name(body.scenario), task=body.task,
                       initial_state=body.initial_state, controls=control_list(body.controls),
                       think=_think_within(body, limits.max_tokens_per_turn),
                       **given, **_answer_within(body, limits.max_tokens_per_turn))


def _world_name(value: Any, default: str | None) -> str | None:
    """The shared world a new session joins: the one it names (checked as on every face, a bad
    name a 422 with that one line, as another field the body gets wrong), else the server's."""
    if value is None:
        return default
    try:
        return check_world_name(value)
    except InputError as error:
        raise HttpProblem(422, error.message, errors.for_http(error.hint or "")) from None


def _scenario_name(value: str | None) -> str | None:
    """A scenario among the bundled and the user's, by name: never a path, never a file of the
    server's working directory (a name that is one answers as any unknown name does)."""
    if not value:
        return None
    try:
        return scenario_by_name(value).name
    except InputError as error:  # the one line every face answers (scenarios/by_name.py)
        raise HttpProblem(400, error.message, error.hint or "") from None


def _answer_within(body: CreateSession, ceiling: int | None) -> dict[str, int]:
    """A session that asks no max_tokens under a ceiling below the default gets the ceiling."""
    if ceiling is not None and body.max_tokens is None and ceiling < DEFAULT_MAX_TOKENS:
        return {"max_tokens": ceiling}
    return {}


def _think_within(body: CreateSession, ceiling: int | None) -> str | None:
    """The session's thinking budget under the server's tokens-per-turn ceiling: the answer's
    `max_tokens` must fit it (400 if not); thinking gets what is left (`full` or a larger
    budget becomes that). No ceiling: what the client asked."""
    if ceiling is None:
        return None if body.think is None else str(body.think)
    answer = body.max_tokens if body.max_tokens is not None else min(DEFAULT_MAX_TOKENS, ceiling)
    if answer > ceiling:
        raise HttpProblem(400, f"max_tokens {answer} is more than this server's {ceiling} tokens per turn.",
                          f"Ask for at most {ceiling} (the server's --max-tokens-per-turn).")
    budget = ThinkBudget.parse(body.think)  # a bad value is a 400 (InputError) here
    room = ceiling - answer
    if budget.mode == "off":
        return "off"
    if budget.mode == "full" or (budget.tokens or 0) > room:
        return str(room) if room > 0 else "off"
    return budget.label()  # given, never None: a scenario's own budget must not pass the ceiling


#: How often a waiting request looks whether its client went away (cancel_on_disconnect).
_DISCONNECT_POLL_S = 0.1


async def _collect(turn: AsyncIterator[events.SessionEvent], request: Request | None, registry: SessionRegistry, sid: str,
                   cancel_on_disconnect: bool) -> Outcome:
    outcome = Outcome()
    if not cancel_on_disconnect:  # read here: the command runs in a task of its own either way (bridge.py)
        async for event in turn:
            outcome.said.append(event)
        return outcome

    async def read() -> None:
        async for event in turn:
            outcome.said.append(event)

    reading = asyncio.ensure_future(read())
    while cancel_on_disconnect and not reading.done():
        await asyncio.wait({reading}, timeout=_DISCONNECT_POLL_S)
        if not reading.done() and await request.is_disconnected():
            _cancel_for_client(registry, sid)
            break
    await reading
    return outcome


def _cancel_for_client(registry: SessionRegistry, sid: str) -> None:
    with contextlib.suppress(HttpProblem):  # closed meanwhile: nothing runs to cancel
        registry.cancel(sid)


def _turn_result(registry: SessionRegistry, sid: str, outcome: Outcome, reveal_simulator: bool) -> dict[str, Any]:
    finished = check(outcome).first(events.TurnFinished)
    record = finished.record
    domain = registry.state(sid)["domain"]
    rewarded = outcome.first(events.Rewarded)
    answer = {"turn": finished.turn, "observation": record.observation,
              "reward": rewarded.value if rewarded is not None else 0.0,
              "terminated": ends_task(domain, record.action_payload),
              # As in Gymnasium: the episode was cut by a limit (this server's --max-turns); a cut answer is cut_short.
              "truncated": finished.turns >= registry.limits.max_turns, "cut_short": record.finish in CUT_SHORT,
              "turns": finished.turns}
    if reveal_simulator:  # the simulator's side (the module's doc); the trajectory keeps it either way
        answer.update(session=sid, reward_source=rewarded.source if rewarded is not None else None,
                      head=finished.head, record=record.to_dict())
    return answer


async def _sse(turn: AsyncIterator[events.SessionEvent], registry: SessionRegistry, sid: str,
               cancel_on_disconnect: bool, reveal_simulator: bool) -> EventSourceResponse:
    """Server-sent events, one per session event (`event:` its name, `data:` its JSON). A
    refusal before the turn starts is an ordinary HTTP error, not a stream. A client that goes
    away leaves the turn running to its end (saved), or cancels it with `cancel_on_disconnect`."""
    try:
        first = await anext(turn)
    except StopAsyncIteration:
        first = None

    async def body() -> AsyncIterator[dict[str, str]]:
        ended = first is None
        try:
            for event in ([first] if first is not None else []):
                if (sent := _sse_event(event, reveal_simulator)) is not None:
                    yield sent
            async for event in turn:
                if (sent := _sse_event(event, reveal_simulator)) is not None:
                    yield sent
            ended = True
        finally:
            if not ended and cancel_on_disconnect:
                _cancel_for_client(registry, sid)

    return EventSourceResponse(body())


#: The events an agent's stream carries as they are (the module's doc); `turn_done` and `reward`
#: are cut to the agent's fields, every other event (thinking, the raw answer...) stays the simulator's.
_AGENT_EVENTS = (events.TurnStarted, events.ObservationDelta, events.ObservationReplaced, events.TurnCancelled,
                 events.Undone, events.Regenerated, events.Refused, events.Ready, events.ErrorEvent)


def _sse_event(event: events.SessionEvent, reveal_simulator: bool) -> dict[str, str] | None:
    if reveal_simulator or isinstance(event, _AGENT_EVENTS):
        data = event.to_dict()
    elif isinstance(event, events.TurnFinished):
        data = {"event": event.name, "turn": event.turn, "observation": event.record.observation,
                "cut_short": event.record.finish in CUT_SHORT, "turns": event.turns}
    elif isinstance(event, events.Rewarded):
        data = {"event": event.name, "turn": event.turn, "value": event.value}
    else:
        return None
    return {"event": event.name, "data": errors.safe_json(data)}


async def _reap(registry: SessionRegistry) -> None:
    while True:
        await asyncio.sleep(min(_REAP_EVERY_S, max(registry.limits.idle_s / 4, 0.05)))
        try:
            await registry.close_idle()
        except Exception:  # noqa: BLE001 - the next round tries again; requests are not affected
            continue


def _telemetry() -> dict[str, Any]:
    """FastAPI's OpenTelemetry instrumentation (newer FastAPI) asks three OpenTelemetry providers
    whether they are configured on every request: a tenth of a turn's CPU at thousands of turns
    a second (bench/fleet_scale.py). Off unless the environment configures OpenTelemetry."""
    if "telemetry" not in inspect.signature(FastAPI).parameters:
        return {}
    if any(name.startswith("OTEL_") for name in os.environ) or os.environ.get("FASTAPI_OTEL_AUTO_CONFIGURE"):
        return {}
    return {"telemetry": {"tracing": False, "metrics": False, "logs": False}}


def bearer(token: str) -> Any:
    """The dependency every route but /docs has when the server has a token."""
    expected = token.encode("utf-8")
    scheme = HTTPBearer(auto_error=False, description="`Authorization: Bearer TOKEN` (the server's --token-env)")

    async def authorized(credentials: HTTPAuthorizationCredentials | None = Depends(scheme)) -> None:
        given = credentials.credentials.encode("utf-8") if credentials is not None else b""
        if not hmac.compare_digest(given, expected):  # constant time: the token is not guessed byte by byte
            raise HttpProblem(401, "This server needs its token.", "Send the header `Authorization: Bearer TOKEN`.")

    return authorized
