"""Test support shipped with the package: the scripted backend and realistic raw answers.

Used by the tests of every face (CLI, TUI, server); nothing here loads a model.
"""

import queue
from collections.abc import Iterator
from typing import Any

from agentworld_local.engine import events
from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend

__all__ = ["EventLog", "LentBackend", "ScriptedAnswer", "ScriptedBackend"]


class LentBackend:
    """A loaded model lent to one runner after another: everything is the model's but
    `close`, so the runner that closes what it was given leaves the model loaded."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def close(self) -> None:
        pass


class EventLog:
    """A runner's `emit` that keeps everything it says, for tests that watch the whole runner
    (faces wait on each command's own `Sent`): `until_ready()` yields what comes, up to the
    next Ready or Refused of any command."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[str | None, events.SessionEvent]] = queue.SimpleQueue()

    def __call__(self, session: str | None, event: events.SessionEvent) -> None:
        self._queue.put((session, event))

    def drain(self) -> list[tuple[str | None, events.SessionEvent]]:
        """What has come and was not read yet (e.g. what the runner said while it closed)."""
        items = []
        while True:
            try:
                items.append(self._queue.get_nowait())
            except queue.Empty:
                return items

    def until_ready(self) -> Iterator[tuple[str | None, events.SessionEvent]]:
        while True:
            item = self._queue.get()
            yield item
            if isinstance(item[1], (events.Ready, events.Refused)):
                return
