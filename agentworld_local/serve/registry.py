"""The server's sessions: ids for the runner's sessions and their files in the server's folder.

A session's id is its file's name without `.jsonl`; every session is an ordinary trajectory
file in the folder, so a restarted server lists them all and resumes any. What a session is
and does stays in the runner and session/; here: which sessions are open, where each one is
(the runner's view of it after each command), and the limits. The order of a session's
commands is the runner's (its mailbox): a request waits there, never in a lock of the server's.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from agentworld_local.domains import get_domain
from agentworld_local.engine import events
from agentworld_local.errors import AwlError, BackendBusy
from agentworld_local.serve.bridge import AsyncRunnerBridge, Send
from agentworld_local.session.runner.mailbox import BY_CLOSING
from agentworld_local.session.runner.outcome import Outcome
from agentworld_local.session.runner.types import SessionState
from agentworld_local.serve.limits import HttpProblem, ServeLimits, busy
from agentworld_local.serve.statuses import status_of
from agentworld_local.session.listing import session_paths, summarize
from agentworld_local.session.resume_rules import ResumeOptions, resumed_settings
from agentworld_local.session.runner import NewSession
from agentworld_local.trajectory.reader import Trajectory, read_trajectory
from agentworld_local.trajectory.schema import SCHEMA_VERSION

#: Closed sessions whose reason the server remembers (a later command on one says why it is closed).
CLOSED_REMEMBERED = 256
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")


@dataclass
class OpenSession:
    """An open session as the runner last said it is (each command's Ready carries its view)."""

    id: str
    path: Path
    domain: str
    view: SessionState
    last_used: float = field(default_factory=time.monotonic)
    #: The shared world the session plays in (worlds/), or None: its own imagined world.
    shared_world: str | None = None

    @property
    def key(self) -> str:
        """The runner's name for it."""
        return str(self.path)

    @property
    def turns(self) -> int:
        return self.view.turns

    def watch(self, event: events.SessionEvent) -> None:
        if isinstance(event, events.Ready) and isinstance(event.view, SessionState) and event.view.id == self.key:
            self.view = event.view
        self.last_used = time.monotonic()

    def state(self) -> dict[str, Any]:
        return {"id": self.id, "file": str(self.path), "open": True, "domain": self.domain, "turns": self.view.turns,
                "head": self.view.head, "observation": self.view.observation, "shared_world": self.shared_world}


class SessionRegistry:
    """Open, step, undo, regenerate, fork, close and list the server's sessions."""

    def __init__(self, bridge: AsyncRunnerBridge, folder: Path, limits: ServeLimits, reward: Any = None) -> None:
        self.bridge, self.folder, self.limits = bridge, folder, limits
        #: What sessions' turns earn (a RewardHook; None: no reward), resumed ones included.
        self.reward = reward
        self._open: dict[str, OpenSession] = {}
        #: Why a session this server had open was closed: the last CLOSED_REMEMBERED of them.
        self._closed: OrderedDict[str, str] = OrderedDict()
        self._opening = 0  # sessions being opened now: they count against --max-sessions
        self._resuming: dict[str, _Resuming] = {}  # while a session is being resumed: one opens it

    # -- sessions ----------------------------------------------------------------------------

    async def create(self, new: Callable[[Path], NewSession], domain: str) -> dict[str, Any]:
        """A new session in a new file of the folder (`new` builds it for that path)."""
        path = self._new_path(domain)
        return await self._opened(lambda runner: runner.open(new(path)))

    async def resume(self, sid: str) -> dict[str, Any]:
        """Open a saved session of the folder again (a no-op for one that is open)."""
        path = self._file(sid)
        resuming = self._resuming.setdefault(sid, _Resuming())
        resuming.waiting += 1
        try:
            async with resuming.lock:  # two clients resuming it: one opens it
                if sid in self._open:
                    return self._open[sid].state()
                await asyncio.to_thread(_readable, sid, path)
                return await self._opened(lambda runner: runner.resume(path, reward=self.reward))
        finally:
            resuming.waiting -= 1
            if not resuming.waiting:
                del self._resuming[sid]

    async def fork(self, sid: str, turn: int | None) -> dict[str, Any]:
        """A new session with the first `turn` turns (default: all); both stay open."""
        source = self._session(sid)
        out = self._new_path(source.domain)
        return await self._opened(
            lambda runner: runner.fork(source.key, turn, out, switch=False))  # None: all, as it runs

    async def close(self, sid: str, why: str = "it was closed by a client") -> dict[str, Any]:
        session = self._session(sid)

        def closed(event: events.SessionEvent) -> None:  # in the command's task: a client gone changes nothing
            if isinstance(event, (events.Saved, events.Discarded)):
                self._open.pop(sid, None)
                self._closed[sid] = why
                while len(self._closed) > CLOSED_REMEMBERED:
                    self._closed.popitem(last=False)

        outcome = check(await self.bridge.call(lambda runner: runner.close_session(session.key), watch=closed))
        return {"id": sid, "file": str(session.path), "saved": outcome.first(events.Saved) is not None,
                "turns": session.turns}

    # -- turns -------------------------------------------------------------------------------

    def turn(self, sid: str, kind: str, action: str | None = None, *, final: bool = False) -> AsyncIterator[events.SessionEvent]:
        """A step (`action`) or a regenerate: the events as they come (refusals raise before the first)."""
        session = self._session(sid)
        if action is not None and len(action) > self.limits.max_action_chars:
            raise HttpProblem(413, f"The action has {len(action)} characters; this server takes {self.limits.max_action_chars}.",
                              "Send a shorter action (the server's --max-action-chars).")

        def gate() -> None:
            runner, most = self.bridge.runner, self.limits.max_waiting
            load = runner.load_now
            # It would wait: every place is taken (or wanted), or its own session's command runs.
            would_wait = load.running + load.waiting >= load.parallel or runner.pending(session.key) > 0
            if most is not None and would_wait and load.waiting >= most:
                raise busy(f"{load.waiting} commands already wait (for a place in the model, or behind their "
                           "session's own) (this server's --max-waiting).",
                           "Try again after the Retry-After seconds, or run fewer sessions at once.")
            if kind == "step" and session.turns >= self.limits.max_turns:
                raise HttpProblem(409, f"Session {sid} has reached this server's limit of {self.limits.max_turns} turns.",
                                  "Fork it at an earlier turn, or start a new session.")

        send: Send = (
            (lambda runner: runner.step(session.key, action or "", final=final)) if kind == "step"
            else (lambda runner: runner.regenerate(session.key)))
        return self.bridge.stream(send, gate=gate, watch=session.watch)

    def cancel(self, sid: str) -> dict[str, Any]:
        """Stop the session's command in flight and drop those that wait behind it; nothing is
        saved for a turn cut short. Each ends "cancelled by a client". Other sessions' turns go
        on. `cancelled`: whether a command was running or waiting."""
        session = self._session(sid)
        touched = self.bridge.runner.cancel(session.key)
        return {"id": sid, "cancelled": touched > 0, "turns": session.view.turns, "head": session.view.head}

    async def undo(self, sid: str) -> dict[str, Any]:
        session = self._session(sid)
        check(await self.bridge.call(lambda runner: runner.undo(session.key), watch=session.watch))
        return session.state()

    # -- reading -----------------------------------------------------------------------------

    def state(self, sid: str) -> dict[str, Any]:
        if sid in self._open:
            return self._open[sid].state()
        path = self._file(sid)
        traj = _readable(sid, path)  # damaged: 422 with the reader's reason, as a resume answers
        return {"id": sid, "file": str(path), "open": False, "domain": traj.header.domain,
                "turns": len(traj.current_branch()), "closed": self._closed.get(sid), "problem": None}

    def listing(self) -> list[dict[str, Any]]:
        """Every session file in the folder, last changed first (open ones as the server follows them)."""
        listed = []
        for path in session_paths(self.folder):
            sid = path.stem
            if sid in self._open:
                listed.append(self._open[sid].state())
            else:
                summary = summarize(path)
                listed.append({"id": sid, "file": str(path), "open": False, "domain": summary.domain,
                               "turns": summary.turns, "model": summary.model, "problem": summary.problem})
        return listed

    async def trajectory(self, sid: str) -> bytes:
        """The session's file as it is now (between turns, for an open session)."""
        path = self._file(sid)
        session = self._open.get(sid)
        data = await asyncio.to_thread(path.read_bytes)
        if session is None:
            return data
        return data[:data.rfind(b"\n") + 1]  # an open session's line being written now is not whole yet

    @property
    def open_count(self) -> int:
        return len(self._open)

    async def close_idle(self) -> list[str]:
        """Close the sessions nobody used for `idle_s` (every turn is saved); their ids."""
        now, closed = time.monotonic(), []
        for sid, session in list(self._open.items()):
            if now - session.last_used > self.limits.idle_s and not self.bridge.runner.pending(session.key):
                try:
                    await self.close(sid, f"nobody used it for {self.limits.idle_s:g} s")
                except HttpProblem:
                    continue  # closed or used meanwhile
                closed.append(sid)
        return closed

    # -- helpers -----------------------------------------------------------------------------

    async def _opened(self, send: Send, **options: Any) -> dict[str, Any]:
        if len(self._open) + self._opening >= self.limits.max_sessions:
            raise HttpProblem(429, f"This server has {self.limits.max_sessions} sessions open, its limit.",
                              "Close one (DELETE /sessions/ID) and try again.")
        self._opening += 1
        counted = [True]  # the session counts as opening until it counts as open (never as both)
        try:
            outcome = check(await self.bridge.call(send, watch=self._registering(counted), **options))
        finally:
            if counted[0]:
                self._opening -= 1
        return self._open[Path(outcome.first(events.SessionOpened).path).stem].state()

    def _registering(self, counted: list[bool]) -> Callable[[events.SessionEvent], None]:
        """What follows one opening command's events: the session it opened is followed from its
        Ready on, which carries its view (in the command's task, so a client that went away
        meanwhile leaves no session the server does not know). `counted`: whether the opening
        session still counts in `_opening`; once open it counts there no more."""
        opened: list[events.SessionOpened] = []

        def register(event: events.SessionEvent) -> None:
            if isinstance(event, events.SessionOpened):
                opened.append(event)
            elif isinstance(event, events.Ready) and isinstance(event.view, SessionState) and opened:
                path = Path(event.view.id)
                settings = getattr(opened[-1].view, "settings", None)  # a resume or fork rejoins its world too
                self._open[path.stem] = OpenSession(path.stem, path, opened[-1].domain, event.view,
                                                    shared_world=getattr(settings, "shared_world", None))
                self._closed.pop(path.stem, None)
                if counted[0]:
                    counted[0] = False
                    self._opening -= 1

        return register

    def _session(self, sid: str) -> OpenSession:
        session = self._open.get(sid)
        if session is None:
            self._file(sid)  # 404 when there is no such file
            why = self._closed.get(sid, "this server has not opened it since it started")
            raise HttpProblem(409, f"Session {sid} is not open: {why}.", f"Resume it: POST /sessions/{sid}/resume.")
        return session

    def _file(self, sid: str) -> Path:
        path = self.folder / f"{sid}.jsonl"
        if not _ID.fullmatch(sid) or not path.is_file():
            raise HttpProblem(404, f"No session {sid} in this server's folder.", "GET /sessions lists them.")
        return path

    def _new_path(self, domain: str) -> Path:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        return self.folder / f"{stamp}-{domain}-{secrets.token_hex(4)}.jsonl"


@dataclass
class _Resuming:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    waiting: int = 0


def _readable(sid: str, path: Path) -> Trajectory:
    """A session file the server can resume, read: the reader's one-line reason (422) if not,
    for a file that cannot be read at all and for one damaged part-way (no turn is added after
    the damage) or of another schema version alike, so GET and resume say the same."""
    try:
        traj = read_trajectory(path)
    except AwlError as error:
        raise unreadable(sid, error.message) from None
    if traj.damaged_line is not None:
        said = next((warning for warning in traj.warnings if warning.startswith(f"line {traj.damaged_line} ")), "")
        reason = said.partition(" To keep going")[0].rstrip(".") or f"line {traj.damaged_line} is damaged"
        raise unreadable(sid, f"{reason}; no turn is added after the damage (`awl fork` on the server's machine "
                              f"copies the intact turns to a new file).")
    if traj.file_version != SCHEMA_VERSION:
        raise unreadable(sid, f"it uses schema v{traj.file_version}; awl adds turns to v{SCHEMA_VERSION} files only "
                              "(`awl fork` on the server's machine writes an up-to-date copy).")
    try:  # what a resume takes from the header: its settings and its domain (tools, state format)
        resumed_settings(traj, ResumeOptions())
        get_domain(traj.header.domain, tools=traj.header.tools, state_format=traj.header.state_format)
    except AwlError as error:
        reason = error.message if "header" in error.message else f"its header cannot be used: {error.message}"
        raise unreadable(sid, reason) from None
    return traj


def unreadable(sid: str, reason: str) -> HttpProblem:
    """A file of the folder that is empty, damaged or another program's: the client's to know, not a 5xx."""
    return HttpProblem(422, f"Session {sid} cannot be read: {reason}", "It cannot be resumed; start a new "
                       "session (POST /sessions), or fork an earlier one (POST /sessions/ID/fork).")


def check(outcome: Outcome) -> Outcome:
    """A command's outcome, or the HTTP error its refusal or failure is."""
    if outcome.refused is not None:
        if outcome.refused.by == BY_CLOSING:
            raise HttpProblem(503, "The server is shutting down.", "Resume the session on the next server.")
        raise HttpProblem(409, outcome.refused.message, outcome.refused.hint)
    by = outcome.cancelled_by
    if by == BY_CLOSING:
        raise HttpProblem(503, "The turn was stopped: the server is shutting down.", "Resume the session on the next server.")
    if outcome.error is not None:
        raise problem(outcome.error)
    if by:
        raise HttpProblem(409, "The command was cancelled by a client (POST /sessions/ID/cancel); nothing was saved "
                               "for it.", "Send it again to run it.")
    return outcome


def problem(error: events.ErrorEvent) -> HttpProblem:
    """An error event as an HTTP error (serve/statuses.py: the same status on both apps)."""
    cause = error.error if isinstance(error.error, BaseException) else AwlError(error.message, error.hint)
    status = status_of(cause)
    if status == 503 and isinstance(cause, BackendBusy):  # the runner schedules turns so this should not come
        return busy(error.message, error.hint)
    return HttpProblem(status, error.message, error.hint, **({"invalid_action": True} if status == 422 else {}))
