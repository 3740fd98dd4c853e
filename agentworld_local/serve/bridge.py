"""The server's way to the runner (session/runner.py): commands from the event loop, events back.

The runner refuses a command it cannot run now (one while another runs; with a backend that
runs sessions side by side, one beside a command it excludes). A server has many clients, so
here they wait their turn instead of being refused: only what the runner takes at once goes to
it at once (see AsyncRunnerBridge), and each command's events (up to its `Ready` or `Refused`) come
back to the request that sent it. The command runs in a task of its own, so a client that goes
away mid-stream never leaves a command half-read: it runs to its end and its turn is saved.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from agentworld_local.engine import events
from agentworld_local.session.runner import SessionRunner

#: A command as the server sends it: a call on the runner that says whether it was accepted.
Send = Callable[[SessionRunner], bool]
_END = object()
_NO_LOCK = contextlib.nullcontext()


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


class AsyncRunnerBridge:
    """Owns the runner; `stream()` and `call()` send one command and give back its events.

    A command of one session (`session=` its runner key) runs beside other sessions' (the
    runner schedules their turns against the model's `parallel`: beyond it they wait, they are
    never refused); any other command (a load, an open, a resume, a fork) runs alone. Events
    are routed by the session they name, to the command of that session, else to the one
    running alone."""

    def __init__(self, **runner_options: Any) -> None:
        self._blocking: Callable[[tuple[str | None, events.SessionEvent]], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._routes: dict[str | None, Callable[[events.SessionEvent], None]] = {}
        self.runner = SessionRunner(self._emit, **runner_options)
        self._gate: _Gate | None = None  # made on the server's loop
        self._tasks: set[asyncio.Task[None]] = set()

    def _emit(self, session: str | None, event: events.SessionEvent) -> None:
        if self._blocking is not None:
            self._blocking((session, event))
        elif self._loop is not None:
            if self._loop_thread == threading.get_ident():  # a refusal, said inside send()
                self._route(session, event)
            else:
                self._loop.call_soon_threadsafe(self._route, session, event)

    def _route(self, session: str | None, event: events.SessionEvent) -> None:
        target = self._routes.get(session) or self._routes.get(None)
        if target is not None:
            target(event)

    # -- from the event loop -----------------------------------------------------------------

    async def stream(self, send: Send, **options: Any) -> AsyncIterator[events.SessionEvent]:
        """The command's events as they come. Leaving early (a client gone) leaves the command
        running to its end in its own task. `options`: `_run`'s."""
        out: asyncio.Queue[Any] = asyncio.Queue()
        task = self._start(send, out.put_nowait, options)
        while (item := await out.get()) is not _END:
            yield item
        await task

    async def call(self, send: Send, **options: Any) -> Outcome:
        """The command's events, once it has ended (a request cancelled meanwhile leaves it running)."""
        outcome = Outcome()
        await asyncio.shield(self._start(send, outcome.said.append, options))
        outcome.said = [event for event in outcome.said if event is not _END]
        return outcome

    def _start(self, send: Send, deliver: Callable[[Any], None], options: dict[str, Any]) -> asyncio.Task[None]:
        task = asyncio.create_task(self._run(send, deliver, **options))
        self._tasks.add(task)  # held until done: nobody may be awaiting it any more
        task.add_done_callback(self._tasks.discard)
        return task

    async def _run(self, send: Send, deliver: Callable[[Any], None], *, session: str | None = None,
                   lock: asyncio.Lock | None = None, gate: Callable[[], None] | None = None,
                   watch: Callable[[events.SessionEvent], None] | None = None) -> None:
        """`session`: the runner's key of the session the command is for (None: a command of no
        one session, which runs alone); `lock`: one more lock held around the command (the
        session's); `gate` runs under it first and may raise to refuse the command (the error
        reaches whoever awaits it); `watch` sees every event, whether or not anybody still reads them."""
        try:
            async with lock or _NO_LOCK:
                if gate is not None:
                    gate()
                await self._send(send, session, deliver, watch)
        finally:
            deliver(_END)

    async def _send(self, send: Send, session: str | None, deliver: Callable[[Any], None],
                    watch: Callable[[events.SessionEvent], None] | None) -> None:
        if self._gate is None:
            self._gate = _Gate()
            self._loop, self._loop_thread = asyncio.get_running_loop(), threading.get_ident()
        beside = session is not None
        async with (self._gate.shared() if beside else self._gate.alone()):
            key = session if beside else None
            arrived: asyncio.Queue[events.SessionEvent] = asyncio.Queue()
            self._routes[key] = arrived.put_nowait
            try:
                accepted = send(self.runner)
                while accepted or not arrived.empty():
                    event = await arrived.get()
                    if watch is not None:
                        watch(event)
                    deliver(event)
                    if isinstance(event, (events.Ready, events.Refused)):
                        return
            finally:
                del self._routes[key]

    # -- from a plain thread (the CLI before the server starts) -------------------------------

    def call_blocking(self, send: Send, on_event: Callable[[events.SessionEvent], None] | None = None) -> Outcome:
        """The same, waiting on this thread: no event loop runs yet (the model's load)."""
        arrived: queue.SimpleQueue[tuple[str | None, events.SessionEvent]] = queue.SimpleQueue()
        self._blocking = arrived.put
        outcome = Outcome()
        try:
            accepted = send(self.runner)
            while True:
                try:
                    _, event = arrived.get(timeout=None if accepted else 0)
                except queue.Empty:
                    return outcome
                outcome.said.append(event)
                if on_event is not None:
                    on_event(event)
                if isinstance(event, (events.Ready, events.Refused)):
                    return outcome
        finally:
            self._blocking = None

    def close(self, timeout: float | None = None) -> None:
        """Cancel what runs, close every session (each turn saved) and free the model."""
        self.runner.close(timeout)


class _Gate:
    """Commands that may run beside each other (`shared`), and those that run alone (`alone`:
    it waits for the shared ones to end, and new shared ones wait for it)."""

    def __init__(self) -> None:
        self._changed = asyncio.Condition()
        self._shared = 0
        self._alone = False
        self._waiting_alone = 0

    @contextlib.asynccontextmanager
    async def shared(self) -> AsyncIterator[None]:
        async with self._changed:
            await self._changed.wait_for(lambda: not self._alone and not self._waiting_alone)
            self._shared += 1
        try:
            yield
        finally:
            async with self._changed:
                self._shared -= 1
                self._changed.notify_all()

    @contextlib.asynccontextmanager
    async def alone(self) -> AsyncIterator[None]:
        async with self._changed:
            self._waiting_alone += 1
            try:
                await self._changed.wait_for(lambda: not self._alone and self._shared == 0)
            finally:
                self._waiting_alone -= 1
            self._alone = True
        try:
            yield
        finally:
            async with self._changed:
                self._alone = False
                self._changed.notify_all()
