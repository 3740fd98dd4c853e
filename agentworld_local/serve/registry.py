"""The server's sessions: ids for the runner's sessions and their files in the server's folder.

A session's id is its file's name without `.jsonl`; every session is an ordinary trajectory
file in the folder, so a restarted server lists them all and resumes any. What a session is
and does stays in the runner and session/; here: which sessions are open, where each one is
(turns, head, its current observation, from the events), the limits, and the order of
commands (one session's commands run one after another; a failure names its own session only).
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

from agentworld_local.engine import events
from agentworld_local.errors import ActionError, AwlError, BackendBusy, GenerationError, InputError, TrajectoryError
from agentworld_local.serve.bridge import AsyncRunnerBridge, Send
from agentworld_local.session.sent import Outcome
from agentworld_local.serve.limits import HttpProblem, ServeLimits, busy
from agentworld_local.session.listing import session_paths, summarize
from agentworld_local.session.runner import NewSession
from agentworld_local.trajectory.reader import read_trajectory

#: Closed sessions whose reason the server remembers (a later command on one says why it is closed).
CLOSED_REMEMBERED = 256
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")


@dataclass
class OpenSession:
    """An open session as the server follows it from the runner's events."""

    id: str
    path: Path
    domain: str
    observations: list[str]  # the starting state, then each turn's observation on the branch
    turns: int
    head: int
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_used: float = field(default_factory=time.monotonic)
    #: A client asked to cancel the turn in flight (POST /sessions/ID/cancel, or its stream went
    #: away with `cancel_on_disconnect`): its TurnCancelled is that, not a server shutting down.
    cancel_asked: bool = False

    @property
    def key(self) -> str:
        """The runner's name for it."""
        return str(self.path)

    def watch(self, event: events.SessionEvent) -> None:
        if isinstance(event, events.TurnFinished):
            self.observations.append(event.record.observation)
        elif isinstance(event, (events.Undone, events.Regenerated)):
            if len(self.observations) > 1:
                self.observations.pop()
        if isinstance(event, (events.Ready, events.TurnFinished, events.Undone, events.Regenerated)) \
                and event.turns is not None:
            self.turns, self.head = event.turns, event.head or 0
        self.last_used = time.monotonic()

    def state(self) -> dict[str, Any]:
        return {"id": self.id, "file": str(self.path), "open": True, "domain": self.domain, "turns": self.turns,
                "head": self.head, "observation": self.observations[-1]}


class SessionRegistry:
    """Open, step, undo, regenerate, fork, close and list the server's sessions."""

    def __init__(self, bridge: AsyncRunnerBridge, folder: Path, limits: ServeLimits, reward: Any = None) -> None:
        self.bridge, self.folder, self.limits = bridge, folder, limits
        #: What sessions' turns earn (a RewardHook; None: no reward), resumed ones included.
        self.reward = reward
        self._open: dict[str, OpenSession] = {}
        #: Why a session this server had open was closed: the last CLOSED_REMEMBERED of them.
        self._closed: OrderedDict[str, str] = OrderedDict()
        self._opening = 0
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
            lambda runner: runner.fork(source.key, source.turns if turn is None else turn, out, switch=False),
            session=source.key, lock=source.lock, gate=lambda: self._still_open(source))

    async def close(self, sid: str, why: str = "it was closed by a client") -> dict[str, Any]:
        session = self._session(sid)

        def closed(event: events.SessionEvent) -> None:  # in the command's task: a client gone changes nothing
            if isinstance(event, (events.Saved, events.Discarded)):
                self._open.pop(sid, None)
                self._closed[sid] = why
                while len(self._closed) > CLOSED_REMEMBERED:
                    self._closed.popitem(last=False)

        outcome = check(await self.bridge.call(lambda runner: runner.close_session(session.key), session=session.key,
                                               lock=session.lock, gate=lambda: self._still_open(session), watch=closed))
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
            self._still_open(session)
            session.cancel_asked = False
            waiting, most = self.bridge.runner.load_now.waiting, self.limits.max_waiting
            if most is not None and waiting >= most:
                raise busy(f"{waiting} turns already wait for a place in the model (this server's --max-waiting).",
                           "Try again after the Retry-After seconds, or run fewer sessions at once.")
            if kind == "step" and session.turns >= self.limits.max_turns:
                raise HttpProblem(409, f"Session {sid} has reached this server's limit of {self.limits.max_turns} turns.",
                                  "Fork it at an earlier turn, or start a new session.")

        send: Send = (
            (lambda runner: runner.step(session.key, action or "", final=final)) if kind == "step"
            else (lambda runner: runner.regenerate(session.key)))
        return self.bridge.stream(send, session=session.key, lock=session.lock, gate=gate, watch=session.watch)

    def cancel(self, sid: str) -> dict[str, Any]:
        """Stop the session's turn in flight (a waiting one leaves the queue); nothing is saved
        for it. Other sessions' turns go on. `cancelled`: whether a command was running."""
        session = self._session(sid)
        running = session.lock.locked()
        if running:
            session.cancel_asked = True
            self.bridge.runner.cancel(session.key)
        return {"id": sid, "cancelled": running, "turns": session.turns, "head": session.head}

    def cancelled_by_client(self, sid: str) -> bool:
        session = self._open.get(sid)
        return session is not None and session.cancel_asked

    async def undo(self, sid: str) -> dict[str, Any]:
        session = self._session(sid)
        check(await self.bridge.call(lambda runner: runner.undo(session.key), session=session.key, lock=session.lock,
                                     gate=lambda: self._still_open(session), watch=session.watch))
        return session.state()

    # -- reading -----------------------------------------------------------------------------

    def state(self, sid: str) -> dict[str, Any]:
        if sid in self._open:
            return self._open[sid].state()
        summary = summarize(self._file(sid))
        if summary.problem is not None:
            raise unreadable(sid, summary.problem)
        return {"id": sid, "file": str(summary.path), "open": False, "domain": summary.domain, "turns": summary.turns,
                "closed": self._closed.get(sid), "problem": summary.problem}

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
        if session is None:
            return await asyncio.to_thread(path.read_bytes)
        async with session.lock:
            return await asyncio.to_thread(path.read_bytes)

    @property
    def open_count(self) -> int:
        return len(self._open)

    async def close_idle(self) -> list[str]:
        """Close the sessions nobody used for `idle_s` (every turn is saved); their ids."""
        now, closed = time.monotonic(), []
        for sid, session in list(self._open.items()):
            if now - session.last_used > self.limits.idle_s and not session.lock.locked():
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
        try:
            outcome = check(await self.bridge.call(send, watch=self._register, **options))
        finally:
            self._opening -= 1
        return self._open[Path(outcome.first(events.SessionOpened).path).stem].state()

    def _register(self, event: events.SessionEvent) -> None:
        """A session the runner opened is followed from then on (in the command's task, so a
        client that went away meanwhile leaves no session the server does not know)."""
        if isinstance(event, events.SessionOpened) and event.view is not None:
            view, sid = event.view, Path(event.path).stem
            self._open[sid] = OpenSession(sid, Path(event.path), event.domain,
                                          [view.initial_state, *(turn.observation for turn in view.branch)],
                                          event.turns, event.head)
            self._closed.pop(sid, None)

    def _session(self, sid: str) -> OpenSession:
        session = self._open.get(sid)
        if session is None:
            self._file(sid)  # 404 when there is no such file
            why = self._closed.get(sid, "this server has not opened it since it started")
            raise HttpProblem(409, f"Session {sid} is not open: {why}.", f"Resume it: POST /sessions/{sid}/resume.")
        return session

    def _still_open(self, session: OpenSession) -> None:
        """Under the session's lock: a command that waited may find it closed meanwhile."""
        if self._open.get(session.id) is not session:
            self._session(session.id)

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


def _readable(sid: str, path: Path) -> None:
    """A session file the server can resume: the reader's one-line reason (422) if not."""
    try:
        read_trajectory(path)
    except AwlError as error:
        raise unreadable(sid, error.message) from None


def unreadable(sid: str, reason: str) -> HttpProblem:
    """A file of the folder that is empty, damaged or another program's: the client's to know, not a 5xx."""
    return HttpProblem(422, f"Session {sid} cannot be read: {reason}", "It cannot be resumed; start a new "
                       "session (POST /sessions), or fork an earlier one (POST /sessions/ID/fork).")


def check(outcome: Outcome, *, cancelled_by_client: bool = False) -> Outcome:
    """A command's outcome, or the HTTP error its refusal or failure is."""
    if outcome.refused is not None:
        raise HttpProblem(409, outcome.refused.message, outcome.refused.hint)
    if outcome.error is not None:
        raise problem(outcome.error)
    if outcome.first(events.TurnCancelled) is not None:
        if cancelled_by_client:
            raise HttpProblem(409, "The turn was cancelled by a client (POST /sessions/ID/cancel); nothing was saved for it.",
                              "Send the action again to run it.")
        raise HttpProblem(503, "The turn was stopped: the server is shutting down.", "Resume the session on the next server.")
    return outcome


def problem(error: events.ErrorEvent) -> HttpProblem:
    """An error event as an HTTP error: the caller's mistake (4xx) or the server's (5xx)."""
    cause = error.error
    if isinstance(cause, ActionError):
        return HttpProblem(422, error.message, error.hint, invalid_action=True)
    if isinstance(cause, BackendBusy):  # the runner schedules turns so this should not come; if it does, retry
        return busy(error.message, error.hint)
    if isinstance(cause, GenerationError):
        return HttpProblem(502, error.message, error.hint)
    if isinstance(cause, InputError):
        return HttpProblem(400, error.message, error.hint)
    if isinstance(cause, AwlError) and not isinstance(cause, TrajectoryError):
        return HttpProblem(409, error.message, error.hint)  # not in the session's state now (e.g. its context is full)
    return HttpProblem(500, error.message, error.hint)  # the server's own failure (e.g. its disk)
