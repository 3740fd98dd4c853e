"""A bounded concurrent map: work on several items at once, at most `at_once` in flight.

One mechanism for every caller that runs calls side by side (bench predict's trajectories,
bench judge's rows, the vector env's sub-envs):

    with map_at_once(work, items, at_once=4) as running:
        for done in running:          # a Done as each call finishes, in finishing order
            keep(done.result())       # the value, or the call's own error raised here

A worker's failure never escapes on its own: it comes back as its item's `Done.error`, and
the caller decides what ends the run. Closing the map early (a `break`, an error, Ctrl+C
in the caller) sets its stop event, starts no new call and waits for the calls in flight;
`close()` returns what they finished meanwhile, so the caller can still keep it.
`stream_at_once` is the base: its work yields several values for one item (each its own
Done), and stops between two values once the map stops. Iterate from one thread only.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_ENDED = object()  # a worker's last message: its slot is free
_NO_ITEM = object()


@dataclass(frozen=True)
class Done(Generic[T, R]):
    """One finished value of item number `index` (in the order given), or its error."""

    index: int
    item: T
    value: R | None = None
    error: BaseException | None = None

    def result(self) -> R:
        """The value; the call's error raised in the caller's thread."""
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


class AtOnce(Generic[T, R]):
    """The running map: an iterator of Done, ended by `close()` or a with-block."""

    def __init__(self, work: Callable[[T], Iterable[R]], items: Iterable[T], *, at_once: int,
                 stop: threading.Event | None = None, name: str = "awl-at-once") -> None:
        if at_once < 1:
            raise ValueError(f"at_once is {at_once}; give 1 or more")
        self.stop = stop if stop is not None else threading.Event()
        self._work = work
        self._items = enumerate(items)
        self._at_once = at_once
        self._results: queue.Queue[Any] = queue.Queue()
        self._in_flight = 0
        self._closed = False
        self._pool = ThreadPoolExecutor(max_workers=at_once, thread_name_prefix=name)
        self._submit()

    def __iter__(self) -> Iterator[Done[T, R]]:
        return self

    def __next__(self) -> Done[T, R]:
        while self._in_flight:
            message = self._results.get()
            if message is _ENDED:
                self._in_flight -= 1
                self._submit()
                continue
            return message
        self._closed = True  # every call ended: the pool's threads end too, nothing is late
        self._pool.shutdown(wait=True)
        raise StopIteration

    def close(self) -> list[Done[T, R]]:
        """Stop: no new call, wait for the calls in flight; the Done not yet taken (once)."""
        if self._closed:
            return []
        self._closed = True
        self.stop.set()
        self._pool.shutdown(wait=True, cancel_futures=True)
        late = []
        while not self._results.empty():
            message = self._results.get_nowait()
            if message is not _ENDED:
                late.append(message)
        self._in_flight = 0
        return late

    def __enter__(self) -> AtOnce[T, R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _submit(self) -> None:
        # Only here, on the consumer's thread, and only into a free slot: never more in flight.
        while not self._closed and not self.stop.is_set() and self._in_flight < self._at_once:
            index, item = next(self._items, (0, _NO_ITEM))
            if item is _NO_ITEM:
                return
            self._pool.submit(self._run, index, item)
            self._in_flight += 1

    def _run(self, index: int, item: T) -> None:
        try:
            if self.stop.is_set():
                return  # stopped before this call began: it never starts
            values = iter(self._work(item))
            try:
                for value in values:
                    self._results.put(Done(index, item, value))
                    if self.stop.is_set():
                        break  # a multi-value work takes no further step once the map stops
            finally:
                getattr(values, "close", lambda: None)()  # a generator's own cleanup runs now, here
        except BaseException as error:  # every failure goes back as its item's Done, none kills the thread
            self._results.put(Done(index, item, error=error))
        finally:
            self._results.put(_ENDED)


def stream_at_once(work: Callable[[T], Iterable[R]], items: Iterable[T], *, at_once: int,
                   stop: threading.Event | None = None, name: str = "awl-at-once") -> AtOnce[T, R]:
    """work(item) yields values, each a Done as it comes; see the module's doc."""
    return AtOnce(work, items, at_once=at_once, stop=stop, name=name)


def map_at_once(work: Callable[[T], R], items: Iterable[T], *, at_once: int,
                stop: threading.Event | None = None, name: str = "awl-at-once") -> AtOnce[T, R]:
    """work(item) returns one value: one Done per item, as each call finishes."""
    def one(item: T) -> Iterator[R]:
        yield work(item)

    return AtOnce(one, items, at_once=at_once, stop=stop, name=name)


def map_ordered(work: Callable[[T], R], items: Iterable[T], *, at_once: int, name: str = "awl-at-once") -> list[R]:
    """Every work(item), at_once at a time, each taking its turn; the values in the items'
    order, or, once every call has ended, the error of the first item (by order) that failed."""
    with map_at_once(work, items, at_once=at_once, name=name) as running:
        finished = sorted(running, key=lambda done: done.index)
    return [done.result() for done in finished]


__all__ = ["AtOnce", "Done", "map_at_once", "map_ordered", "stream_at_once"]
