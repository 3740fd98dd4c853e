"""What faces hand the runner and what it hands back (session/runner/runner.py): a new session's
needs (NewSession), the snapshot of an open one (SessionView), the events of a load and of a
failure as faces show them."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld_local.domains.base import Domain
from agentworld_local.domains.endings import ends_task
from agentworld_local.engine import events
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.errors import AwlError
from agentworld_local.trajectory.reader import Trajectory
from agentworld_local.trajectory.schema import Header, TurnRecord


@dataclass(frozen=True)
class NewSession:
    """What a new session needs: a resolved SessionSpec (session/spec.py) and its file."""

    domain: Domain
    settings: SessionSettings
    out: Path
    scenario: dict[str, Any] | None = None
    note: str = ""
    #: The agent model that will propose the actions (agent/), for the header.
    agent: dict[str, Any] | None = None
    #: What each turn earns (session/rewards/: a RewardHook); None: no reward.
    reward: Any = None

    @classmethod
    def from_spec(cls, resolved: Any, out: Path, *, note: str = "", agent: dict[str, Any] | None = None,
                  reward: Any = None) -> NewSession:
        """From a ResolvedSpec (SessionSpec(...).resolve())."""
        return cls(resolved.domain, resolved.settings, Path(out), resolved.scenario_ref, note, agent, reward)


@dataclass(frozen=True)
class SessionState:
    """Where a session is after a command (each Ready carries it): what every face renders,
    so none keeps its own copy of the branch."""

    id: str
    #: The current branch's length, and the id of its last turn (0 when it has none).
    turns: int
    head: int
    #: The current observation: the last turn's on the branch, or the starting state.
    observation: str
    #: The branch's last action ended the task in the domain's own terms (domains/endings.py).
    ended: bool = False
    #: What the last step earned (None: no reward hook, or no reward since the branch changed).
    reward: float | None = None
    reward_source: str | None = None
    #: The current branch's turns, oldest first (records shared with the session: read them only).
    branch: tuple[TurnRecord, ...] = ()
    #: Grows with every view the runner gives (of any session): of two views, the later one.
    serial: int = 0


_SERIALS = itertools.count(1)  # next() is atomic in CPython: views of one session come in order


def session_state(sid: str, session: Any) -> SessionState:
    """The view of an open `session` now (called on the thread that runs its commands)."""
    history, world = session.history, session.world
    last = history[-1] if history else None
    rewarded = session.last_reward
    return SessionState(sid, len(history), world.head, last.observation if last is not None else world.initial_state,
                        last is not None and ends_task(world.domain.name, last.action_payload),
                        rewarded.value if rewarded is not None else None,
                        rewarded.source if rewarded is not None else None, tuple(history), next(_SERIALS))


@dataclass(frozen=True)
class SessionView:
    """What a face shows of an open session, as the runner saw it when it opened: a snapshot,
    never the live Session. Later events (each with its `turns` and `head`) keep it current."""

    id: str
    path: Path
    domain: Domain
    header: Header
    #: The settings new turns use (a resume may change the sampling the header states).
    settings: SessionSettings
    initial_state: str
    #: The file's turns in file order (abandoned branches included) and the current branch's head.
    trajectory: Trajectory
    branch: tuple[TurnRecord, ...]
    model: Any  # the backend's ModelInfo



def loaded_event(model: str, backend: Any) -> events.ModelLoaded:
    info = backend.info
    return events.ModelLoaded(model, info.n_ctx, info.gpu_layers, info)


def error_event(error: BaseException) -> events.ErrorEvent:
    """A failure as faces show it: a user's mistake or a saved-file problem in its own
    words, anything unexpected named as such (the file keeps every finished turn)."""
    if isinstance(error, AwlError):
        return events.ErrorEvent(error.message, error.hint or "", error)
    return events.ErrorEvent(f"Unexpected error: {type(error).__name__}: {error}",
                             "The session file keeps every finished turn. Please report this error.", error)


def session_view(sid: str, session: Any) -> SessionView:
    """What a face gets of a session that opened: the file as the session read it (the face
    never reads it itself; a new session's file holds its header alone)."""
    trajectory, session.loaded = session.loaded, None
    if trajectory is None:
        trajectory = Trajectory(header=session.header, turns=[], path=session.path, head=0)
    return SessionView(
        id=sid, path=session.path, domain=session.world.domain, header=session.header,
        settings=session.world.settings, initial_state=session.world.initial_state, trajectory=trajectory,
        branch=tuple(session.history), model=session.world.backend.info,
    )
