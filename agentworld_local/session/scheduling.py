"""Turns of different sessions against what the model runs at once (its `parallel`).

The runner's one admission rule for token loops (a step, a regenerate, a file probe): at most
`parallel` run at once; the rest wait in the order they came (FIFO), as llama.cpp's server
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

    parallel: int
    running: int
    waiting: int


class _Stop:
    """Something with `is_set()`: a threading.Event or engine.guard.EitherEvent."""

    def is_set(self) -> bool: ...


class TurnScheduler:
    """A FIFO gate that lets `parallel` turns run at once (see the module's doc)."""

    def __init__(self, parallel: int = 1) -> None:
        self._changed = threading.Condition()
        self._parallel = max(1, parallel)
        self._running = 0
        self._waiting: deque[object] = deque()

    def set_parallel(self, parallel: int) -> None:
        """A new model: its own number (turns already running go on)."""
        with self._changed:
            self._parallel = max(1, parallel)
            self._changed.notify_all()

    @property
    def load(self) -> Load:
        with self._changed:
            return Load(self._parallel, self._running, len(self._waiting))

    @contextlib.contextmanager
    def hold(self, cancel: threading.Event | _Stop) -> Iterator[bool]:
        """Hold one of the `parallel` turns: True once it runs, False if `cancel` was set while it
        waited (it then holds nothing and should end as cancelled)."""
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
                while not (self._waiting[0] is ticket and self._running < self._parallel):
                    if cancel.is_set():
                        return False
                    # Woken by every release; the timeout only rechecks `cancel`, which no one notifies.
                    self._changed.wait(0.05)
                self._running += 1
                return True
            finally:
                self._waiting.remove(ticket)
                self._changed.notify_all()
