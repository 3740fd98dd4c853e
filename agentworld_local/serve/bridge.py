"""The server's way to the runner (session/runner.py): commands from the event loop, events back.

Each command's events come back on its own `Sent` (session/sent.py), watched from the event
loop. The runner refuses what it cannot run beside what runs (a session's second command, a
second open while one opens); a server has many clients, so here they wait their turn
instead: a session's commands through its lock (the registry's), commands of no session (an
open, a resume) one at a time. Turns of different sessions go to the runner at once: it
schedules them against the model's `parallel` (beyond it they wait there, in order). The
command runs in a task of its own, so a client that goes away mid-stream never leaves a
command half-read: it runs to its end and its turn is saved.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from agentworld_local.engine import events
from agentworld_local.session.runner import SessionRunner
from agentworld_local.session.sent import TERMINAL, Outcome, Sent

#: A command as the server sends it: a call on the runner, which gives back its Sent.
Send = Callable[[SessionRunner], Sent]
_END = object()
_NO_LOCK = contextlib.nullcontext()


class AsyncRunnerBridge:
    """Owns the runner; `stream()` and `call()` send one command and give back its events."""

    def __init__(self, **runner_options: Any) -> None:
        self.runner = SessionRunner(**runner_options)
        self._opening: asyncio.Lock | None = None  # made on the server's loop
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

    async def _run(self, send: Send, deliver: Callable[[Any], None], *, session: str | None = None,
                   lock: asyncio.Lock | None = None, gate: Callable[[], None] | None = None,
                   watch: Callable[[events.SessionEvent], None] | None = None) -> None:
        """`session`: the runner's key of the session the command is for (None: a command of no
        one session: they run one at a time); `lock`: one more lock held around the command
        (the session's); `gate` runs under it first and may raise to refuse the command (the
        error reaches whoever awaits it); `watch` sees every event, whether or not anybody
        still reads them."""
        if self._opening is None:
            self._opening = asyncio.Lock()
        try:
            async with lock or _NO_LOCK, (self._opening if session is None else _NO_LOCK):
                if gate is not None:
                    gate()
                await self._send(send, deliver, watch)
        finally:
            deliver(_END)

    async def _send(self, send: Send, deliver: Callable[[Any], None],
                    watch: Callable[[events.SessionEvent], None] | None) -> None:
        loop = asyncio.get_running_loop()
        arrived: asyncio.Queue[events.SessionEvent] = asyncio.Queue()
        send(self.runner).watch(lambda _, event: loop.call_soon_threadsafe(arrived.put_nowait, event))
        while True:
            event = await arrived.get()
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
