"""`awl serve --openenv`: awl's simulated worlds as an OpenEnv environment server.

The protocol is openenv-core's own (the `openenv` extra): its `create_fastapi_app` serves
`POST /reset`, `POST /step`, `GET /state`, `/schema`, `/metadata`, `/health`, `/mcp` and a
WebSocket `/ws` per session over `AwlWorld`, an OpenEnv `Environment` subclass. What a session
is stays in session/: one `SessionRunner` owns the model for every OpenEnv session, and each
`AwlWorld` (one per WebSocket) holds its own awl session on it, an ordinary trajectory file in
the server's folder (its id: the file's name without `.jsonl`). Turns of different sessions run
side by side up to the model's `parallel`; beyond it they wait in order, never refused.

- Action: `{"action": TEXT}` in the domain's raw or friendly form (`final: true` tells a reward
  that judges whole episodes that this is the episode's last step).
- Observation: `observation` (the predicted screen or tool result; after a reset the starting
  state), `done` (the action ended the task in the domain's terms, domains/endings.py),
  `reward` (the server's reward hook, else 0.0) and the turn's facts as fields: OpenEnv's
  serializer drops `metadata` from the wire, so `metadata` holds the same facts in-process only.
- The agent's view (defaults.REVEAL_SIMULATOR_HELP): an observation carries by default only what
  the environment would show (`observation`, `turn`, `done`, `reward`, `domain`, `task`,
  `cut_short`, `invalid_action`; verifiers shows the policy the whole object); `session_id`,
  `trajectory`, `thinking`, `finish` and `reward_source` are null, and `state` names no
  trajectory and no episode id but one the client chose. `awl serve --openenv
  --reveal-simulator` fills them. The trajectory file keeps all of it either way.
- An action the domain cannot read is no turn: the observation is the reason
  (`invalid_action`), as SimulatedEnv does. Nothing an agent sends is ever executed.
- OpenEnv's HTTP `/reset` and `/step` build a fresh environment for each request and close it
  after (the protocol's own stateless mode): an episode lives on the WebSocket.
- Shared worlds (worlds/): a reset's `shared_world` names the world the episode joins (else the
  server's `--shared-world`); episodes of one world with the same seed meet the same
  observations for the same actions. Where an answer came from stays in the trajectory.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import json
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, ConcurrencyConfig, EnvironmentMetadata, Observation, State
from pydantic import Field, field_validator
from starlette.exceptions import HTTPException

from agentworld_local import __version__
from agentworld_local.domains.endings import ends_task
from agentworld_local.engine import events
from agentworld_local.env.simulated import CUT_SHORT, control_list
from agentworld_local.errors import ActionError, AwlError, Cancelled, InputError
from agentworld_local.scenarios import scenario_by_name
from agentworld_local.serve.bridge import ended
from agentworld_local.serve.openenv_routes import add_awl_routes
from agentworld_local.serve.openenv_wire import WebSocketGuard, quiet_protocol_errors
from agentworld_local.serve.security import BodyLimit, HostOriginGuard
from agentworld_local.serve.limits import ServeLimits
from agentworld_local.serve.statuses import SHUTTING_DOWN, status_of
from agentworld_local.session.rewards import reward_hook
from agentworld_local.session.runner import NewSession, SessionRunner
from agentworld_local.session.runner.outcome import Outcome, Sent
from agentworld_local.session.spec import SessionSpec
from agentworld_local.terminal_text import shorten
from agentworld_local.worlds.names import check_world_name

#: What a reset may choose for its episode (besides OpenEnv's `seed` and `episode_id`).
RESET_OPTIONS = ("domain", "scenario", "task", "initial_state", "controls", "world", "think", "temperature",
                 "max_tokens", "reward", "shared_world")
#: The type each reset option must have (controls: control_list's check; shared_world: check_world_name's,
#: the one line every face says for any value that is no world name).
_OPTION_TYPES: dict[str, Any] = {"domain": str, "scenario": str, "task": str, "initial_state": str, "world": str,
                                 "think": (str, int), "temperature": (int, float), "max_tokens": int, "reward": bool}
#: An episode id a client chooses is its file's name in the folder.
_EPISODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")
_SEED_RANGE = 2**31
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: An observation's fields that are the simulator's side, sent only with --reveal-simulator.
_SIMULATOR_FACTS = ("session_id", "trajectory", "thinking", "finish", "reward_source")


class AwlAction(Action):
    """One agent action for the world model."""

    action: str = Field(description="The agent's action in the domain's raw or friendly form, e.g. `ls -la` in the "
                                    "terminal, `[]` to end the task there (JSON given as JSON is read as its text)")
    final: bool = Field(False, strict=True, description="This is the episode's last step (a reward that judges whole episodes "
                                           "judges it now)")

    @field_validator("action", mode="before")
    @classmethod
    def _json_as_text(cls, value: Any) -> Any:
        # A client that decodes the policy's reply as JSON (verifiers' OpenEnv taskset) sends the
        # terminal's `[]` or a tool call as a list or an object: the domain reads their text.
        return json.dumps(value, ensure_ascii=False) if isinstance(value, (list, dict)) else value


class AwlObservation(Observation):
    """What the world model predicted the environment answers (or, after a reset, the starting state)."""

    observation: str = Field("", description="The predicted screen or tool result; the reason when the action "
                                             "could not be read")
    turn: int = Field(0, description="Turns of the episode so far (0 after a reset)")
    session_id: str | None = Field(None, description="The awl session (its file's name without .jsonl; only with "
                                                     "--reveal-simulator)")
    trajectory: str | None = Field(None, description="The session's trajectory file on the server (only with "
                                                     "--reveal-simulator)")
    domain: str = Field("", description="terminal, swe, mcp, search, web, os or android")
    task: str | None = Field(None, description="The episode's task (after a reset)")
    thinking: str | None = Field(None, description="The world model's reasoning for this turn (only with "
                                                   "--reveal-simulator)")
    finish: str | None = Field(None, description="How the answer ended: stop, length or repetition (only with "
                                                 "--reveal-simulator)")
    cut_short: bool = Field(False, description="The answer was cut (its token limit, or a loop stopped)")
    invalid_action: str | None = Field(None, description="Why the action was not read (no turn was run)")
    reward_source: str | None = Field(None, description="What gave the reward (python:..., judge:...; only with "
                                                        "--reveal-simulator)")


@dataclass
class OpenEnvHub:
    """What every OpenEnv session shares: the runner (the model's one owner, which orders every
    session's commands and opens), the folder, the default world, the reward, the limits."""

    runner: SessionRunner
    folder: Path
    world: SessionSpec = field(default_factory=SessionSpec)
    reward: Any = None  # a RewardHook or None
    limits: ServeLimits = field(default_factory=ServeLimits)
    #: The default world's domain.
    domain: str = "terminal"
    #: Observations and state carry the simulator's side too (the module's doc).
    reveal_simulator: bool = False

    def send(self, send: Callable[[SessionRunner], Sent]) -> Outcome:
        """One command, waited for."""
        return send(self.runner).wait()

    async def send_async(self, send: Callable[[SessionRunner], Sent]) -> Outcome:
        """One command, awaited on the event loop (woken once, by its last event)."""
        sent = send(self.runner)
        await ended(sent)  # a client gone meanwhile leaves the command running to its end
        return sent.wait()

    def call(self, send: Callable[[SessionRunner], Sent]) -> list[events.SessionEvent]:
        """One command, waited for; a refusal, an error or a cancel raised as its AwlError."""
        outcome = self.send(send)
        outcome.raise_failure()
        return outcome.said

    def open(self, new: NewSession) -> events.SessionOpened:
        said = self.call(lambda runner: runner.open(new))
        return next(event for event in said if isinstance(event, events.SessionOpened))

    @property
    def model(self) -> str:
        return self.runner.model or self.runner.served_model or "a world model"


class AwlWorld(Environment[AwlAction, AwlObservation, State]):
    """One OpenEnv session: its own awl session on the hub's runner (see the module's doc).
    OpenEnv runs each instance's reset and step on a thread of its own, one at a time."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, hub: OpenEnvHub) -> None:
        super().__init__()
        self.hub = hub  # built for every request (HTTP /state, /metadata): nothing opens here
        self._key: str | None = None  # the runner's name of the open session
        self._path: Path | None = None
        self._chosen_id: str | None = None  # the episode_id the client gave its reset, if any
        self._domain = hub.domain
        self._task: str | None = None
        self._seed: int | None = None
        self._turns = 0
        self._closed = False  # OpenEnv closed it (its idle reaper, a WebSocket gone): no new episode here

    def reset(self, /, seed: int | None = None, episode_id: str | None = None, **options: Any) -> AwlObservation:
        """Close the current episode (saved) and open a new one in a new file. `options`:
        RESET_OPTIONS; a domain or scenario named here replaces the server's default world."""
        try:
            if self._closed:  # OpenEnv no longer follows this session: an episode here would never be closed
                raise InputError("This session was closed (nobody used it for a while, the server's --idle).",
                                 "Connect again to start a new episode.")
            spec, reward = self._episode(seed, options)
            resolved = spec.resolve()
            path = self._new_path(resolved.domain.name, episode_id)
            self._close_episode()
            opened = self.hub.open(NewSession.from_spec(resolved, path, reward=reward))
        except AwlError as error:
            raise _refusal(error) from None
        view = opened.view
        self._key, self._path, self._domain = str(view.path), Path(view.path), resolved.domain.name
        self._task, self._seed, self._turns = view.settings.task, spec.seed, 0
        self._chosen_id = episode_id
        return self._observation(view.initial_state, task=self._task)

    def step(self, action: AwlAction, timeout_s: float | None = None, **kwargs: Any) -> AwlObservation:
        """One turn: the action goes to the world model, its predicted observation comes back."""
        refused = self._not_stepped(action)
        if refused is not None:
            return refused
        key = self._key
        assert key is not None
        return self._stepped(self.hub.send(lambda runner: runner.step(key, action.action, final=action.final)))

    async def step_async(self, action: AwlAction, timeout_s: float | None = None, **kwargs: Any) -> AwlObservation:
        """`step` on the event loop (OpenEnv's WebSocket awaits it): the turn runs on the runner
        as ever, and nothing waits for it on a thread of its own (OpenEnv runs a sync step on the
        session's own thread, a hop there and back for every turn of thousands of episodes)."""
        refused = self._not_stepped(action)
        if refused is not None:
            return refused
        key = self._key
        assert key is not None
        return self._stepped(await self.hub.send_async(lambda runner: runner.step(key, action.action, final=action.final)))

    def _not_stepped(self, action: AwlAction) -> AwlObservation | None:
        """The observation that says why no turn runs for `action`, or None: it runs."""
        if self._closed:
            return self._unread(f"This session was closed: nobody used it for {self.hub.limits.idle_s:g} s (the "
                                "server's --idle); its turns are saved. Connect again to start a new episode.",
                                done=True)
        if self._key is None:
            return self._unread("No episode is open here: OpenEnv's HTTP /step runs each request on a fresh "
                                "environment. Use the WebSocket /ws (e.g. GenericEnvClient): reset, then step.",
                                done=True)
        if len(action.action) > self.hub.limits.max_action_chars:
            return self._unread(f"The action has {len(action.action)} characters; this server takes "
                                f"{self.hub.limits.max_action_chars} (--max-action-chars).")
        if self._turns >= self.hub.limits.max_turns:
            return self._unread(f"The episode has reached this server's limit of {self.hub.limits.max_turns} turns "
                                "(--max-turns). Reset to start a new one.", done=True)
        return None

    def _stepped(self, outcome: Outcome) -> AwlObservation:
        """The observation of a step the runner ran (its outcome)."""
        finished, rewarded = outcome.first(events.TurnFinished), outcome.first(events.Rewarded)
        if outcome.view is not None:  # the runner's view: a turn whose reward failed is saved and counted
            self._turns = outcome.view.turns
        try:
            outcome.raise_failure()
        except ActionError as error:
            return self._unread(f"Invalid action: {error.one_line()}")
        except AwlError as error:
            raise _refusal(error) from None
        record = finished.record
        return self._observation(
            record.observation, done=ends_task(self._domain, record.action_payload),
            reward=rewarded.value if rewarded is not None else 0.0, thinking=record.thinking, finish=record.finish,
            cut_short=record.finish in CUT_SHORT, reward_source=rewarded.source if rewarded is not None else None)

    @property
    def state(self) -> State:
        reveal = self.hub.reveal_simulator and self._path is not None  # the module's doc: the agent's view
        return State(episode_id=self._path.stem if reveal and self._path else self._chosen_id, step_count=self._turns,
                     domain=self._domain, task=self._task, seed=self._seed,
                     trajectory=str(self._path) if reveal else None, model=self.hub.model)

    def get_metadata(self) -> EnvironmentMetadata:
        world = self.hub.world.scenario or self.hub.domain
        return EnvironmentMetadata(
            name="agentworld-local",
            description=f"A simulated environment ({world} by default) predicted by the language world model "
                        f"{self.hub.model}: an action is never executed; each session is a trajectory file.",
            version=__version__)

    def close(self) -> None:
        """OpenEnv is done with this session: its episode closes, its turns saved."""
        self._closed = True
        self._close_episode()

    # -- helpers -------------------------------------------------------------------------

    def _close_episode(self) -> None:
        """Close the episode: its turns are saved (one without a turn leaves no file)."""
        key, self._key = self._key, None
        if key is not None and not self.hub.runner.closed:
            try:
                self.hub.call(lambda runner: runner.close_session(key))
            except AwlError:
                pass  # closed meanwhile (the server stopping): the runner saved it

    def _episode(self, seed: int | None, options: dict[str, Any]) -> tuple[SessionSpec, Any]:
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise InputError(f"Unknown reset option `{unknown[0]}`.", f"reset() takes seed, episode_id, "
                                                                      f"{', '.join(RESET_OPTIONS)}.")
        for name, value in options.items():
            kind = _OPTION_TYPES.get(name)
            if kind is not None and value is not None and (not isinstance(value, kind)
                                                            or (isinstance(value, bool) and kind is not bool)):
                raise InputError(f"The reset option `{name}` cannot be {shorten(repr(value), 80)}.",
                                 "GET /schema, docs/openenv.md.")
            texts = (value if name == "controls" and isinstance(value, list)
                     else [] if name in ("scenario", "shared_world") else [value])
            if any(isinstance(text, str) and _LONE_SURROGATE.search(text) for text in texts):
                raise InputError(f"The reset option `{name}` holds a lone surrogate (\\ud800 to \\udfff alone), "
                                 "which is not Unicode text.", "Send UTF-8 text.")
        changes = {name: value for name, value in options.items() if name != "reward"}
        if changes.get("shared_world") is not None:  # by name only, never a path (worlds/names.py)
            changes["shared_world"] = check_world_name(changes["shared_world"])
        elif "shared_world" in changes:  # null: the server's own (`awl serve --shared-world`), if any
            del changes["shared_world"]
        if changes.get("scenario") is not None:  # by name only, as on every face (scenarios/by_name.py)
            changes["scenario"] = scenario_by_name(changes["scenario"]).name
        if "domain" in changes or "scenario" in changes:  # another world: the default one's other half goes
            changes.setdefault("domain", None)
            changes.setdefault("scenario", None)
        if "controls" in changes:
            changes["controls"] = control_list(changes["controls"])
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise InputError(f"A seed is a whole number of 0 or more, not {shorten(repr(seed), 80)}.",
                             "E.g. seed=42.")
        spec = replace(self.hub.world, seed=secrets.randbelow(_SEED_RANGE) if seed is None else seed, **changes)
        wanted = options.get("reward")  # None: the server's reward, if it has one
        if wanted and self.hub.reward is None:
            raise InputError("This server gives no reward.", "Leave `reward` out, or start it with `--reward`.")
        return spec, None if wanted is False else self.hub.reward

    def _new_path(self, domain: str, episode_id: str | None) -> Path:
        if episode_id is None:
            stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
            return self.hub.folder / f"{stamp}-{domain}-{secrets.token_hex(4)}.jsonl"
        if not isinstance(episode_id, str) or not _EPISODE_ID.fullmatch(episode_id):
            raise InputError(f"`{episode_id}` cannot name a session file.",
                             "Use letters, digits, `.`, `_` and `-` (at most 200), or leave episode_id out.")
        path = self.hub.folder / f"{episode_id}.jsonl"
        if path.exists():
            raise InputError(f"The episode `{episode_id}` exists already in this server's folder.",
                             "Choose another episode_id, or leave it out.")
        return path

    def _observation(self, text: str, **facts: Any) -> AwlObservation:
        done, reward = facts.pop("done", False), facts.pop("reward", None)
        facts = {"turn": self._turns, "session_id": self._path.stem if self._path else None,
                 "trajectory": str(self._path) if self._path else None, "domain": self._domain, **facts}
        if not self.hub.reveal_simulator:  # the agent's view (the module's doc); the file keeps them
            facts = {name: value for name, value in facts.items() if name not in _SIMULATOR_FACTS}
        return AwlObservation(observation=text, done=done, reward=reward, metadata=dict(facts), **facts)

    def _unread(self, reason: str, *, done: bool = False) -> AwlObservation:
        """No turn ran: the reason is the observation, so an agent can correct itself."""
        return self._observation(reason, done=done, reward=0.0, invalid_action=reason)


class Refusal(HTTPException):
    """A reset or step awl refuses, in one line: an HTTP status (serve/statuses.py), or the WebSocket's error message."""

    def __str__(self) -> str:
        return str(self.detail)


def _refusal(error: AwlError) -> Refusal:
    """The status is the REST API's for the same failure (serve/statuses.py)."""
    status = status_of(error)
    if status == SHUTTING_DOWN and isinstance(error, Cancelled):
        return Refusal(status, f"The server is shutting down: {error.one_line()}")
    return Refusal(status, error.one_line())


def make_openenv_app(*, folder: Path, runner: SessionRunner | None = None, backend: Any = None,
                     world: SessionSpec | None = None, limits: ServeLimits = ServeLimits(), token: str | None = None,
                     reward: Any = None, reveal_simulator: bool = False) -> Any:
    """OpenEnv's app over `runner` (its model loaded) or a `backend` loaded already (tests);
    session files go to `folder`; `world`: the default world of a reset that names none. With
    `token`, every request and WebSocket needs `Authorization: Bearer TOKEN`. The server's
    shutdown closes the runner (every session saved). `reveal_simulator`: observations and state
    carry the simulator's side too (the module's doc)."""
    runner = runner if runner is not None else SessionRunner(backend=backend)
    folder.mkdir(parents=True, exist_ok=True)
    world = world or SessionSpec()
    domain = world.resolve().domain.name  # a bad default world is said before anything listens
    hub = OpenEnvHub(runner, folder, world, reward_hook(reward), limits, domain, reveal_simulator)
    app = create_fastapi_app(functools.partial(AwlWorld, hub), AwlAction, AwlObservation,
                             concurrency_config=ConcurrencyConfig(max_concurrent_envs=limits.max_sessions,
                                                                  session_timeout=limits.idle_s))
    add_awl_routes(app, functools.partial(AwlWorld, hub), AwlAction)  # HTTP /reset and /step: serve/openenv_routes.py
    # As awl serve's REST app: a foreign Host or Origin refused, every body bounded as it streams in
    # (413 before OpenEnv reads it); each WebSocket message checked before OpenEnv's loop reads it.
    app = WebSocketGuard(BodyLimit(app, limits.max_body_bytes), limits.max_body_bytes,
                         reset_keys=("seed", "episode_id", *RESET_OPTIONS))
    quiet_protocol_errors()  # a frame that is not UTF-8: one log line, no traceback
    return HostOriginGuard(_Guard(app, token, hub), allowed_hosts=limits.allowed_hosts)


class _Guard:
    """Around OpenEnv's app: awl's bearer token on every request and WebSocket (OpenEnv's app
    takes no auth dependency of its own), and the runner closed when the server shuts down."""

    def __init__(self, app: Any, token: str | None, hub: OpenEnvHub) -> None:
        self.app, self.hub = app, hub
        self._token = token.encode("utf-8") if token else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, self._closing(send))
        elif self._token is not None and scope["type"] in ("http", "websocket") and not self._authorized(scope):
            await self._refuse(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _closing(self, send: Any) -> Any:
        async def closing(message: dict[str, Any]) -> None:
            if message["type"] in ("lifespan.shutdown.complete", "lifespan.shutdown.failed"):
                await asyncio.to_thread(self.hub.runner.close)  # every session closed, each turn saved
            await send(message)
        return closing

    def _authorized(self, scope: dict[str, Any]) -> bool:
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, credentials = given.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._token or b"")

    async def _refuse(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            await receive()  # websocket.connect; closing before accepting answers 403
            await send({"type": "websocket.close", "code": 1008})
            return
        body = json.dumps({"error": "This server needs its token.",
                           "hint": "Send the header `Authorization: Bearer TOKEN`."}).encode("utf-8")
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"www-authenticate", b"Bearer")]})
        await send({"type": "http.response.body", "body": body})
