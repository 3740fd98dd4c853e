"""A simulated environment for agents, in the shape Gymnasium made common.

`SimulatedEnv` drives one session at a time through a SessionRunner (the one owner of the
model): `reset()` opens a new session file, `step(action)` is one turn of it, `undo()` drops
the last turn, `close()` closes the runner (every turn is already saved). Nothing an agent
sends is executed: the world model predicts what the environment would answer.

- The observation is text: the starting state after a reset, the predicted observation after
  a step. The reward is what the env's reward hook gives each turn (`reward=`: a Python
  function, `package.module:function` or `judge:MODEL@URL`; session/rewards/), written to
  the trajectory beside the turn; without one it is 0.0 (a world model predicts what the
  environment shows, not how well the agent did).
- `terminated`: the action ended the task in the domain's own terms (domains/endings.py);
  `truncated`, as in Gymnasium, is a step limit's: this env has none, so it is False (the
  Gymnasium ids' TimeLimit sets it). An answer that hit its token limit, or looped and was
  stopped, is `info["cut_short"]` (the observation may be cut).
- The agent's view (defaults.REVEAL_SIMULATOR_HELP): `info` carries by default only what the
  environment would show (`turn`, `cut_short`, `invalid_action`; after a reset `domain`, `task`,
  `turn`, `seed`). `reveal_simulator=True` adds the simulator's side: `thinking`, `tokens`,
  `timings`, `finish`, `parse_method`, `action` (as parsed), `reward_source`, `verdict` and the
  `trajectory` path. The trajectory file keeps all of it either way.
- An action the domain cannot read is no turn: the observation is the one-line reason and
  `info["invalid_action"]` holds it, so an agent can correct itself.
- Shared worlds (worlds/): `make(..., shared_world=NAME)` or `reset(options={"shared_world": NAME})`
  joins a world by name; episodes of one world with the same seed meet the same observations for
  the same actions. Where an answer came from is `info["world"]` with reveal_simulator=True only.
"""

from __future__ import annotations

import copy
import random
import secrets
import weakref
from collections.abc import Callable
from dataclasses import fields, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from agentworld_local.defaults import DEFAULT_REWARD_TIMEOUT_S
from agentworld_local.domains.endings import ends_task
from agentworld_local.engine import events
from agentworld_local.engine.world import WORLD_KEY
from agentworld_local.errors import ActionError, InputError, a_or_an
from agentworld_local.files import os_error_text
from agentworld_local.paths import sessions_dir
from agentworld_local.scenarios import scenario_by_name
from agentworld_local.session.files import ensure_new_file
from agentworld_local.session.rewards import reward_hook
from agentworld_local.session.runner import NewSession, SessionRunner
from agentworld_local.session.runner.outcome import Outcome, Sent
from agentworld_local.session.runner.types import SessionState
from agentworld_local.session.spec import SessionSpec
from agentworld_local.worlds.names import check_world_name

#: What `reset(options=...)` may change for one episode (the world stays the env's).
EPISODE_OPTIONS = ("task", "initial_state", "controls", "world", "scenario", "shared_world")
#: How a turn ends when its answer was cut: the token limit, or the guard that stops a loop.
CUT_SHORT = ("length", "repetition")
#: Seeds the env draws for unseeded resets stay in the range every backend accepts.
_SEED_RANGE = 2**31


class SimulatedEnv:
    """One simulated world for an agent; see the module's doc. Build it with `make()`.
    Not for several threads at once (serve/mcp.py holds a lock around it)."""

    def __init__(self, spec: SessionSpec, *, model: str | None = None, backend: Any = None,
                 load_options: dict[str, Any] | None = None, out_dir: str | Path | None = None,
                 reward: Any = None, reward_timeout: float | None = DEFAULT_REWARD_TIMEOUT_S,
                 reveal_simulator: bool = False) -> None:
        """`model`: a registry name, a GGUF path, `scripted:FILE` or `openai:NAME@URL` (loaded
        now); `backend`: one loaded already (it then belongs to the env, which closes it);
        `load_options`: load_backend's (ctx, gpu_layers, threads, remote); `out_dir`: where the
        trajectory files go (default: awl's sessions folder); `reward`: what each turn earns
        (session/rewards.reward_hook's forms; default none: 0.0); `reward_timeout`: seconds
        it may take for one turn (None: no limit); `reveal_simulator`: `info` also carries the
        simulator's side (see the module's doc)."""
        if model is None and backend is None and not (load_options or {}).get("remote"):
            raise InputError("No model given.", "Pass `model=` (a registry name, a .gguf path or scripted:FILE).")
        self.spec = spec
        self.domain = spec.resolve().domain  # a bad option or scenario is refused before the model loads
        self.reward = reward_hook(reward)
        self.reveal_simulator = bool(reveal_simulator)
        self.out_dir = _ready_folder(Path(out_dir) if out_dir is not None else sessions_dir())
        self._runner = SessionRunner(backend=backend, reward_timeout=reward_timeout)
        # A program that ends without close() still closes the runner (an episode without a
        # turn leaves no file; the model is freed before the interpreter tears down).
        self._finalizer = weakref.finalize(self, self._runner.close)
        self._session: str | None = None
        self._path: Path | None = None  # the last session's file, kept after it closes
        #: Where the session is, as the runner said after the last command (never a copy of our own).
        self._view: SessionState | None = None
        self._rng = random.Random(spec.seed)  # unseeded resets are reproducible from make(seed=...)
        #: What the model loading said (a lowered context, the memory plan...).
        self.notices: list[str] = []
        if backend is None:
            try:
                self._call(lambda: self._runner.load(model, **dict(load_options or {})))
            except BaseException:
                self._finalizer()
                raise

    # -- the environment -----------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Close the current session (saved) and start a new one in a new file. `seed` sets
        the sampling seed (unseeded resets draw one from the last seed given); `options`
        change this episode's `task`, `initial_state`, `controls`, `world`, `scenario` (one of the same domain)
        or `shared_world` (the world to join by name; None: the env's own)."""
        changes = _episode_changes(options)
        if seed is not None:
            self._rng.seed(seed)
            episode_seed = seed
        else:
            episode_seed = self._rng.randrange(_SEED_RANGE)
        spec = replace(self.spec, seed=episode_seed, **changes)
        if changes.get("scenario"):
            spec = replace(spec, domain=None)  # the scenario's own; checked against the env's below
        resolved = spec.resolve()
        if resolved.domain.name != self.domain.name:  # an agent's action space stays what it was made for
            raise InputError(f"The scenario `{spec.scenario}` is {a_or_an(resolved.domain.name)} world; this environment "
                             f"is {a_or_an(self.domain.name)} one.", "Pick a scenario of the same domain (`awl scenarios`).")
        self.domain = resolved.domain  # a scenario may bring its own tools
        self.close_session()
        path = self._new_path()
        opened = self._call(lambda: self._runner.open(NewSession.from_spec(resolved, path, reward=self.reward)))
        view = next(event.view for event in opened.said if isinstance(event, events.SessionOpened))
        self._session, self._path, self._view = str(view.path), Path(view.path), opened.view
        info = {"domain": self.domain.name, "task": view.settings.task, "turn": 0, "seed": episode_seed}
        return view.initial_state, {**info, "trajectory": str(view.path)} if self.reveal_simulator else info

    def step(self, action: str, *, final: bool = False,
             on_event: Callable[[events.SessionEvent], None] | None = None) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """One turn: the action goes to the world model, its predicted observation comes back.
        `final`: the caller ends the episode after it (its step limit), which a reward may judge.
        `on_event`: sees each of the turn's events as it comes, on this thread (a face's progress;
        what it may pass on is its own to decide: thinking is the simulator's side)."""
        session = self._open_session()
        if not isinstance(action, str):
            raise InputError(f"An action is text, not {type(action).__name__}.", self.domain.action_help())
        try:
            said = self._call(lambda: self._runner.step(session, action, final=final), on_event=on_event).said
        except ActionError as error:
            reason = f"Invalid action: {error.message} {error.hint or ''}".strip()
            info = {"invalid_action": reason, "turn": self.turns}
            return reason, 0.0, False, False, {**info, "trajectory": session} if self.reveal_simulator else info
        finished = next(event for event in said if isinstance(event, events.TurnFinished))
        record = finished.record
        info: dict[str, Any] = {"turn": finished.turn, "cut_short": record.finish in CUT_SHORT}
        rewarded = next((event for event in said if isinstance(event, events.Rewarded)), None)
        if self.reveal_simulator:  # the simulator's side (the module's doc); the file keeps it either way
            info.update({
                # Copies: what a caller does with info never reaches the session's history.
                "trajectory": session, "action": copy.deepcopy(record.action_payload),
                "thinking": record.thinking, "tokens": dict(record.tokens), "timings": dict(record.timings),
                "finish": record.finish, "parse_method": record.parse_method})
            if WORLD_KEY in record.extra:  # {"name", "from": "store" | "read" | "model"}: where the answer came from
                info["world"] = dict(record.extra[WORLD_KEY])
        if rewarded is not None and self.reveal_simulator:
            info["reward_source"] = rewarded.source
            if rewarded.verdict is not None:
                info["verdict"] = copy.deepcopy(rewarded.verdict)
        return (record.observation, rewarded.value if rewarded is not None else 0.0,
                ends_task(self.domain.name, record.action_payload),
                False, info)

    def undo(self) -> str:
        """Drop the last turn (the file keeps it and records the undo); the observation that
        is current again comes back (the starting state when no turn is left)."""
        session = self._open_session()
        self._call(lambda: self._runner.undo(session))
        return self.observation

    @property
    def observation(self) -> str:
        """The current observation (the starting state before the first turn)."""
        self._open_session()
        assert self._view is not None  # an open session's view came with its opening
        return self._view.observation

    @property
    def trajectory(self) -> Path | None:
        """The current (or last) session's file; None before the first reset."""
        return self._path

    @property
    def turns(self) -> int:
        """Turns on the current branch (the file's, as the runner said after the last command)."""
        return self._view.turns if self._view is not None else 0

    @property
    def ended(self) -> bool:
        """The last action on the branch ended the task (domains/endings.py)."""
        return self._view is not None and self._view.ended

    def cancel(self) -> None:
        """Stop this env's command in flight (from another thread): a turn stops at its next
        token and is not saved, a reward stops at once. Its caller gets Cancelled."""
        if self._session is not None:
            self._runner.cancel(self._session)

    def close_session(self) -> None:
        """Close the current session: its turns are saved (a session without a turn leaves no file)."""
        if self._session is not None and not self._runner.closed:
            session, self._session = self._session, None
            self._call(lambda: self._runner.close_session(session))

    def close(self) -> None:
        """Close the session and free the model. A second close does nothing."""
        if not self._runner.closed:
            self._finalizer()
        self._session = None

    def __enter__(self) -> SimulatedEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- talking to the runner -------------------------------------------------------------

    def _open_session(self) -> str:
        if self._runner.closed:
            raise InputError("This environment was closed.", "Make a new one.")
        if self._session is None:
            raise InputError("No session is open.", "Call reset() first.")
        return self._session

    def _call(self, send: Callable[[], Sent], on_event: Callable[[events.SessionEvent], None] | None = None) -> Outcome:
        """Send one command and wait for its end; a refusal, an error or a cancel is raised as
        its AwlError (a defect as itself), after the env has taken the session's view from it
        (a turn whose reward failed is still a turn of the file). Ctrl+C cancels what runs (a
        turn stops at its next token; nothing half-done is saved)."""
        sent = send()
        try:
            outcome = sent.wait(on_event=on_event)
        except KeyboardInterrupt:
            self._runner.cancel()
            sent.wait()
            raise
        view = outcome.view
        # Only the current session's, and only a later one (calls from several threads, as MCP's, end in any order).
        if view is not None and view.id == self._session and (self._view is None or view.serial > self._view.serial
                                                              or self._view.id != view.id):
            self._view = view
        self.notices.extend(event.text for event in outcome.said if isinstance(event, events.Notice))
        outcome.raise_failure(defects=True)
        return outcome

    def _new_path(self) -> Path:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        # A random part too: envs of several processes (an AsyncVectorEnv's) may share one out_dir.
        path = _ready_folder(self.out_dir) / f"{stamp}-{self.domain.name}-{secrets.token_hex(3)}.jsonl"
        ensure_new_file(path)
        return path


def _ready_folder(folder: Path) -> Path:
    """The folder for session files, made if needed; refused in one line before a model loads."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"Cannot use {folder} for the session files ({os_error_text(error)}).",
                         "Give another `out_dir` (`--out-dir`).") from None
    return folder


def _episode_changes(options: dict[str, Any] | None) -> dict[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise InputError("reset(options=...) takes a dict.", f"Keys: {', '.join(EPISODE_OPTIONS)}.")
    unknown = sorted(set(options) - set(EPISODE_OPTIONS))
    if unknown:
        raise InputError(f"Unknown reset option `{unknown[0]}`.", f"reset(options=...) takes: {', '.join(EPISODE_OPTIONS)}.")
    changes = dict(options)
    if changes.get("scenario") is not None:  # by name only, as on every face (scenarios/by_name.py)
        changes["scenario"] = scenario_by_name(changes["scenario"]).name
    if "controls" in changes:
        changes["controls"] = control_list(changes["controls"])
    if changes.get("shared_world") is not None:  # by name only, never a path (worlds/names.py)
        changes["shared_world"] = check_world_name(changes["shared_world"])
    elif "shared_world" in changes:  # None: the env's own world (make(..., shared_world=...)), if any
        del changes["shared_world"]
    return changes


def control_list(value: Any) -> list[str]:
    """`controls` as a list: one instruction may be given as a string (never split into letters)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(text, str) for text in value):
        raise InputError("`controls` is a list of instructions.", 'E.g. controls=["the disk is full"].')
    return list(value)


#: make()'s options that build the session (SessionSpec's fields), and those of the env.
SPEC_OPTIONS = tuple(item.name for item in fields(SessionSpec) if item.name not in ("domain", "scenario"))
ENV_OPTIONS = ("backend", "load_options", "out_dir", "reward", "reward_timeout", "reveal_simulator")
