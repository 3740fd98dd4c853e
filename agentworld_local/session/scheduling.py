"""Turns of different sessions against what the model runs at once (its `capacity`).

The runner's one admission rule for token loops (a step, a regenerate, a file probe): at most
`capacity` run at once; the rest wait in the order they came (FIFO), as llama.cpp's server
defers a task while every slot is busy. A turn is never refused because other sessions are
busy. A waiting turn whose cancel is set leaves the queue at once, without running. The idle
prefetch between turns is not scheduled here: it is the lowest priority, takes a slot only
when one is free (engine/llama/sequences.py) and yields it at its next chunk.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Load:
    """What /health shows: turns that may run at once, that run, and that wait."""

    capacity: int
    running: int
    waiting: int


class _Stop:
    """Something with `is_set()`: a threading.Event or engine.guard.EitherEvent."""

    def is_set(self) -> bool: ...


class TurnScheduler:
    """A FIFO gate of `capacity` places (see the module's doc)."""

    def __init__(self, capacity: int = 1) -> None:
        self._changed = threading.Condition()
        self._capacity = max(1, capacity)
        self._running = 0
        self._waiting: deque[object] = deque()

    def set_capacity(self, capacity: int) -> None:
        """A new model: its own number (turns already running keep their places)."""
        with self._changed:
            self._capacity = max(1, capacity)
            self._changed.notify_all()

    @property
    def load(self) -> Load:
        with self._changed:
            return Load(self._capacity, self._running, len(self._waiting))

    @contextlib.contextmanager
    def place(self, cancel: threading.Event | _Stop) -> Iterator[bool]:
        """Hold a place for one turn: True once it has one, False if `cancel` was set while it
        waited (it then holds none and should end as cancelled)."""
        if not self._admit(cancel):
            yield False
            return
        try:
            yield True
        finally:
            with self._changed:
                self._running -= 1
                self._changed.notify_all()

    def _admit(self, cancel: threading.Event | _Stop) -> bool:
        ticket = object()
        with self._changed:
            self._waiting.append(ticket)
            try:
                while not (self._waiting[0] is ticket and self._running < self._capacity):
                    if cancel.is_set():
                        return False
                    # Woken by every release; the timeout only rechecks `cancel`, which no one notifies.
                    self._changed.wait(0.05)
                self._running += 1
                return True
            finally:
                self._waiting.remove(ticket)
                self._changed.notify_all()
