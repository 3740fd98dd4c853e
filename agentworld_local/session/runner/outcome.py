"""One command sent to the runner, as every face waits on it.

Each of the runner's commands (session/runner/runner.py) returns a `Sent`: true when the runner
accepted it, and the command's own events in order, the last one its `Ready` (or, refused at
once, its `Refused`). A face waits on it in the way it lives: a thread iterates `events()`
(the CLI, the Python env, an agent loop), an event loop or a UI thread `watch()`es it (the
server, the TUI), and `wait()` gives the whole `Outcome`. Events of other sessions never
reach it, whatever runs beside it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agentworld_local.engine import events
from agentworld_local.errors import AwlError, Cancelled, InputError

#: The last event of every command: it ran (Ready) or it was refused at once (Refused).
TERMINAL = (events.Ready, events.Refused)
#: (the runner's key of the session an event is for, or None; the event)
Said = tuple["str | None", events.SessionEvent]


class Sent:
    """A command the runner took (truthy) or refused, and its events as they come."""

    def __init__(self, name: str, session: str | None) -> None:
        self.name = name
        self.session = session
        self.accepted = False
        self._changed = threading.Condition()
        self._said: list[Said] = []
        self._watchers: list[Callable[[str | None, events.SessionEvent], None]] = []
        self._following = 0  # threads waiting for each event (`events()`); `wait()` waits for the last alone

    def __bool__(self) -> bool:
        return self.accepted

    def __repr__(self) -> str:
        state = "accepted" if self.accepted else "refused"
        return f"Sent({self.name!r}, {self.session!r}, {state}, {len(self._said)} events{', done' if self.done else ''})"

    # -- the runner's side -----------------------------------------------------------------

    def put(self, session: str | None, event: events.SessionEvent) -> None:
        """One more event of the command (the runner calls it, from the thread the command runs on)."""
        with self._changed:
            self._said.append((session, event))
            for watcher in self._watchers:  # under the lock: a watcher sees every event once, in order
                try:
                    watcher(session, event)
                except Exception:  # noqa: BLE001 - a face that cannot take an event must not stop the model's owner
                    pass
            if self._following or isinstance(event, TERMINAL):
                self._changed.notify_all()

    # -- the face's side -------------------------------------------------------------------

    @property
    def done(self) -> bool:
        with self._changed:
            return self._ended()

    def _ended(self) -> bool:
        """Whether the last event came (the caller holds `_changed`)."""
        return bool(self._said) and isinstance(self._said[-1][1], TERMINAL)

    def watch(self, callback: Callable[[str | None, events.SessionEvent], None]) -> None:
        """`callback(session, event)` for every event: those that came already at once, the
        rest as they come, on the runner's thread (keep it short: post the event on)."""
        with self._changed:
            for session, event in self._said:
                callback(session, event)
            self._watchers.append(callback)

    def events(self, *, poll: float = 0.1, on_wait: Callable[[], None] | None = None) -> Iterator[Said]:
        """(session, event) pairs as they come, up to the last. `on_wait` runs every `poll`
        seconds while nothing comes (the CLI checks its signals there: the main thread must
        stay free to receive Ctrl+C); without it another thread sleeps until an event comes (a
        server's thousands of waiting episodes must not each wake ten times a second)."""
        seen = 0
        timeout = _poll(poll, on_wait)
        while True:
            with self._changed:
                self._following += 1
                try:
                    arrived = self._changed.wait_for(lambda: len(self._said) > seen, timeout)
                finally:
                    self._following -= 1
                items = self._said[seen:]
            if not arrived:
                if on_wait is not None:
                    on_wait()
                continue
            for item in items:
                seen += 1
                yield item
                if isinstance(item[1], TERMINAL):
                    return

    def wait(self, *, on_event: Callable[[events.SessionEvent], None] | None = None,
             on_wait: Callable[[], None] | None = None) -> Outcome:
        """Every event, once the command has ended; `on_event` sees each as it comes, on this thread."""
        if on_event is None and on_wait is None:  # woken once, by the last event
            timeout = _poll(0.1, None)
            with self._changed:
                while not self._changed.wait_for(self._ended, timeout):
                    pass
                return Outcome([event for _, event in self._said])
        said = []
        for _, event in self.events(on_wait=on_wait):
            if on_event is not None:
                on_event(event)
            said.append(event)
        return Outcome(said)


def _poll(poll: float, on_wait: Callable[[], None] | None) -> float | None:
    """How long a wait for the next event may block: `poll` on the main thread or with `on_wait`,
    else without end. A main thread blocked on a lock without a timeout takes a KeyboardInterrupt
    only once the lock is free (on Windows, and from `_thread.interrupt_main`), so Ctrl+C would
    land after the turn, which is then saved instead of cancelled."""
    return poll if on_wait is not None or threading.current_thread() is threading.main_thread() else None


@dataclass
class Outcome:
    """One command's events in order, the last a `Ready` or a `Refused`."""

    said: list[events.SessionEvent] = field(default_factory=list)

    def first(self, kind: type) -> Any:
        return next((event for event in self.said if isinstance(event, kind)), None)

    @property
    def refused(self) -> events.Refused | None:
        return self.first(events.Refused)

    @property
    def error(self) -> events.ErrorEvent | None:
        return self.first(events.ErrorEvent)

    @property
    def cancelled(self) -> bool:
        return bool(self.cancelled_by)

    @property
    def cancelled_by(self) -> str:
        """Who cancelled the command ("client" or "closing"), "" when it was not: a turn or a
        reward that was stopped, a load cut short, or a command dropped before it ran."""
        for event in self.said:
            if isinstance(event, events.TurnCancelled):
                return event.by or "client"
            if isinstance(event, events.LoadCancelled):
                return "client"
            if isinstance(event, events.ErrorEvent) and isinstance(event.error, Cancelled):
                return event.error.by or "client"
            if isinstance(event, events.Ready) and event.cancelled_by:
                return event.cancelled_by
        return ""

    @property
    def view(self) -> Any:
        """Where the command's session is after it (its Ready's SessionState), None for a
        command of no session or one that was refused."""
        ready = self.first(events.Ready)
        return ready.view if ready is not None else None

    def raise_failure(self, *, defects: bool = False) -> None:
        """A refusal, an error or a cancel raised as the AwlError it stands for. `defects`: an
        unexpected error is raised as itself (a Python caller wants its traceback), else as an
        AwlError that names it (a face's one line)."""
        for event in self.said:
            raise_failure(event, defects=defects)
        by = self.cancelled_by
        if by:
            if by == "closing":
                raise Cancelled("Stopped: the runner is closing (a server shutting down).",
                                "Nothing unfinished was saved; resume the session on the next server.", by=by)
            raise Cancelled("Cancelled.", "Nothing unfinished was saved; try again.", by=by)


def raise_failure(event: events.SessionEvent, *, defects: bool = False) -> None:
    """`event` raised when it is an error or a refusal (see Outcome.raise_failure)."""
    if isinstance(event, events.ErrorEvent):
        error = event.error
        if isinstance(error, AwlError) or (defects and isinstance(error, BaseException)):
            raise error
        raise AwlError(event.message, event.hint)
    if isinstance(event, events.Refused):
        if event.by == "closing":  # a server shutting down: not the client's mistake
            raise Cancelled(event.message, event.hint, by="closing")
        raise InputError(event.message, event.hint)
