"""The server's way to the runner (session/runner/runner.py): commands from the event loop, events back.

Each command's events come back on its own `Sent` (session/runner/outcome.py), watched from the
event loop. Every command goes to the runner at once: a session's second command waits in its
mailbox there (counted by /health and --max-waiting, dropped by a cancel), turns of different
sessions are scheduled against the model's `parallel`. The server keeps no lock of its own.
The command runs in a task of its own, so a client that goes away mid-stream never leaves a
command half-read: it runs to its end and its turn is saved.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from agentworld_local.engine import events
from agentworld_local.session.runner import SessionRunner
from agentworld_local.session.runner.outcome import TERMINAL, Outcome, Sent

#: A command as the server sends it: a call on the runner, which gives back its Sent.
Send = Callable[[SessionRunner], Sent]
_END = object()


class AsyncRunnerBridge:
    """Owns the runner; `stream()` and `call()` send one command and give back its events."""

    def __init__(self, **runner_options: Any) -> None:
        self.runner = SessionRunner(**runner_options)
        self._tasks: set[asyncio.Task[None]] = set()

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

    async def _run(self, send: Send, deliver: Callable[[Any], None], *, gate: Callable[[], None] | None = None,
                   watch: Callable[[events.SessionEvent], None] | None = None) -> None:
        """`gate` runs first and may raise to refuse the command (the error reaches whoever
        awaits it); `watch` sees every event, whether or not anybody still reads them."""
        try:
            if gate is not None:
                gate()
            await self._send(send, deliver, watch)
        finally:
            deliver(_END)

    async def _send(self, send: Send, deliver: Callable[[Any], None],
                    watch: Callable[[events.SessionEvent], None] | None) -> None:
        arrived = _Arrivals(asyncio.get_running_loop())
        send(self.runner).watch(arrived.put)
        while True:
            for event in await arrived.take():
                if watch is not None:
                    watch(event)
                deliver(event)
                if isinstance(event, TERMINAL):
                    return

    # -- from a plain thread (the CLI before the server starts) -------------------------------

    def call_blocking(self, send: Send, on_event: Callable[[events.SessionEvent], None] | None = None) -> Outcome:
        """The same, waiting on this thread: no event loop runs yet (the model's load)."""
        return send(self.runner).wait(on_event=on_event)

    def close(self, timeout: float | None = None) -> None:
        """Cancel what runs, close every session (each turn saved) and free the model."""
        self.runner.close(timeout)


async def ended(sent: Sent) -> None:
    """Until `sent`'s last event has come, awaited on the running loop (woken once, by that event)."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def settle() -> None:
        if not done.done():
            done.set_result(None)

    def watch(_session: str | None, event: events.SessionEvent) -> None:
        if isinstance(event, TERMINAL):
            loop.call_soon_threadsafe(settle)

    sent.watch(watch)
    await asyncio.shield(done)  # a waiter cancelled meanwhile leaves the command running to its end


class _Arrivals:
    """A command's events, from the runner's thread to the event loop, in order. The loop is
    woken once per batch, not once per event: a turn streams an event per piece of its answer,
    and a wake-up per event (a write to the loop's socket, which lets go of the GIL and waits to
    take it back) made 16 sessions streaming at once wait on each other's wake-ups."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lock = threading.Lock()
        self._events: list[events.SessionEvent] = []
        self._woken = False
        self._ready = asyncio.Event()

    def put(self, _session: str | None, event: events.SessionEvent) -> None:
        """On the runner's thread: keep the event; wake the loop unless a wake-up is on its way."""
        with self._lock:
            self._events.append(event)
            if self._woken:
                return
            self._woken = True
        self._loop.call_soon_threadsafe(self._ready.set)

    async def take(self) -> list[events.SessionEvent]:
        """On the loop: every event that came since the last take (at least one), in order."""
        while True:
            await self._ready.wait()
            with self._lock:
                self._ready.clear()
                self._woken = False
                taken, self._events = self._events, []
            if taken:
                return taken
