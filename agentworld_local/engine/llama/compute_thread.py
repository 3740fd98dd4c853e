"""The one thread that runs a context's llama_decode calls.

llama.cpp's CPU backend computes a graph inside an OpenMP parallel region, and libgomp keeps a
pool of worker threads for each thread that starts one. Once the process has more pooled
workers than CPUs, libgomp throttles how long a thread spins at a barrier before it sleeps, and
a graph has a barrier after every node: each becomes a futex sleep and wake. A runner's turns
run on whichever worker thread is free, so every thread that led a round would add its own
pool, and on a 2-core machine a decode of two rows took twice its time from then on (2.6 ms to
5-6 ms on the attention-only fixture at 3,400 tokens; the thread that decodes changes nothing
while it is the only one). llama-server decodes on one thread; so does awl: the thread that
leads a round hands the llama_decode call to this thread and waits for it. A decode llama.cpp
runs on one thread starts no team and runs where it is asked (batching.py): a hand-over costs
about 0.1 ms, a tenth of a token on the small fixtures.
"""

from __future__ import annotations

import _thread
import os
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any

_STOP = object()
#: Every compute thread not yet closed: a forked child resets each (below).
_OPEN: weakref.WeakSet[ComputeThread] = weakref.WeakSet()


class ComputeThread:
    """Runs calls one at a time on a thread of its own (`call`), for as long as it is open."""

    def __init__(self, name: str = "awl-decode") -> None:
        self._name = name
        self._lock = threading.Lock()  # a call is queued before the stop or refused
        self._closed = False
        self._start()
        _OPEN.add(self)

    def _start(self) -> None:
        self._calls: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = threading.Thread(target=self._serve, name=self._name, daemon=True)
        self._thread.start()

    def call(self, work: Callable[[], Any]) -> Any:
        """`work()` on the compute thread; its result, or its exception raised here. Waits for
        it to finish even when interrupted (Ctrl+C): the caller's round must not end while the
        context still decodes, so the interrupt is raised once the call is over."""
        if threading.current_thread() is self._thread:
            return work()
        done = _thread.allocate_lock()
        done.acquire()
        box: list[Any] = []
        with self._lock:
            if self._closed:
                raise RuntimeError("the compute thread is closed")
            if self._thread is None:  # a forked child's first call (_after_fork_in_child)
                self._start()
            self._calls.put((work, done, box))
        interrupted: BaseException | None = None
        while True:
            try:
                done.acquire()
                break
            except BaseException as error:  # noqa: BLE001 - KeyboardInterrupt while the call runs
                interrupted = error
        if interrupted is not None:
            raise interrupted
        ok, value = box
        if not ok:
            raise value
        return value

    def close(self) -> None:
        """Stop the thread after the calls already queued (a later call raises); a second close
        does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            _OPEN.discard(self)
            thread = self._thread
            if thread is None:  # a forked child that never called: no thread of its own to stop
                return
            self._calls.put(_STOP)
        if threading.current_thread() is not thread:
            thread.join()

    def _serve(self) -> None:
        while True:
            item = self._calls.get()
            if item is _STOP:
                return
            work, done, box = item
            try:
                box[:] = [True, work()]
            except BaseException as error:  # noqa: BLE001 - handed to the caller
                box[:] = [False, error]
            finally:
                done.release()


def _after_fork_in_child() -> None:
    """The thread stayed in the parent (Gymnasium's AsyncVectorEnv forks a runner's process): a
    child starts its own at its first call. A thread of the parent may have held the lock at the
    fork, and nothing in the child would ever release it: a fresh one."""
    for compute in list(_OPEN):
        compute._lock, compute._thread = threading.Lock(), None


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)
