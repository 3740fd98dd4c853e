"""The model's places, given to waiting turns in order.

A backend runs `parallel` token loops at once (llama.cpp sequences, a server's slots). A turn
(a step, a regenerate, a file probe) at the front of its session's mailbox takes a place when
one is free, else waits here, in the order it came (FIFO), as llama.cpp's server defers a task
while every slot is busy; nothing refuses a turn because other sessions are busy. A waiting
turn is an entry in one queue, not a thread: no CPU is spent while turns only wait, and giving
a freed place to the next turn costs the same with 50 or 2,000 waiting. A turn gives its place
back once its record is saved (its reward runs after, off the model). The idle prefetch between
turns is not scheduled here: it takes a sequence only when one is free and yields it at its
next chunk (engine/llama/sequences.py).

Not thread-safe: the runner holds its lock around every call.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Load:
    """What /health shows: turns that may run at once, that run, and commands that wait (for a
    place, or behind their session's earlier command)."""

    parallel: int
    running: int
    waiting: int


class Places:
    """`parallel` places and the FIFO of turns waiting for one (see the module's doc)."""

    def __init__(self, parallel: int = 1) -> None:
        self.parallel = max(1, parallel)
        self.running = 0
        self._waiting: deque[Any] = deque()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def want(self, turn: Any) -> None:
        """`turn` waits for a place (it is given one by `free_for`)."""
        self._waiting.append(turn)

    def drop(self, turn: Any) -> None:
        """A waiting turn that was cancelled leaves the queue."""
        try:
            self._waiting.remove(turn)
        except ValueError:
            pass

    def free_for(self) -> list[Any]:
        """The turns that take the free places now, in the order they came."""
        given = []
        while self._waiting and self.running < self.parallel:
            given.append(self._waiting.popleft())
            self.running += 1
        return given

    def release(self) -> None:
        self.running -= 1

    def resize(self, parallel: int) -> None:
        """A new model: its own number (turns already running go on)."""
        self.parallel = max(1, parallel)
