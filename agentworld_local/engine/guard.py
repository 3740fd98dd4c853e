"""One generation at a time per backend.

Two Worlds (a probe, a fork, another thread) that share a backend would interleave
decodes in one llama.cpp context and corrupt both turns. A second generation while one
is in flight is refused at once instead (a server can queue on top of this).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from agentworld_local.errors import BackendBusy


class GenerationGuard:
    def __init__(self) -> None:
        self._lock = threading.Lock()

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no generation is in flight (False if one still is after `timeout`, e.g. a
        generator its consumer holds half-read)."""
        if not self._lock.acquire(timeout=timeout):
            return False
        self._lock.release()
        return True

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Held for one whole generation; raises BackendBusy if another one holds it.

        A generator that holds it keeps it until it finishes or is closed (a dropped
        generator is closed when it is garbage-collected).
        """
        if not self._lock.acquire(blocking=False):
            raise BackendBusy(
                "The model is already generating another turn (a probe, a fork or another session on the same model).",
                "Wait until that turn finishes or cancel it, then try again.",
            )
        try:
            yield
        finally:
            self._lock.release()


class EitherEvent:
    """Set when any of its events is set: a turn's cancel, its view closing, the backend closing
    (None entries are left out)."""

    def __init__(self, *events: threading.Event | None) -> None:
        self._events = tuple(event for event in events if event is not None)

    def is_set(self) -> bool:
        return any(event.is_set() for event in self._events)
