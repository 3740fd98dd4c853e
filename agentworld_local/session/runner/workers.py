"""The threads the runner's commands run on (runner.py: each command on a thread of its own).

A command starts at once on a thread nobody else uses while it runs: an idle one when there is
one, else a new one. A thread whose command ended waits a while for the next one before it
ends: starting a thread for every turn cost `awl serve` a tenth of a turn's CPU with hundreds
of turns a second. Nothing waits behind a busy thread, so a command never waits for another.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable

#: Seconds an idle thread waits for the next command before it ends.
IDLE_S = 10.0

Job = tuple[Callable[[], None], str]


class Workers:
    """Threads that each run one job at a time, kept for the next job while it comes soon."""

    def __init__(self, idle_s: float = IDLE_S) -> None:
        self._idle_s = idle_s
        self._forget_threads()

    def _forget_threads(self) -> None:
        """No thread yet. Also in a forked child (Gymnasium's AsyncVectorEnv forks a process that
        holds a runner): only the forking thread lives on there, so the idle threads counted
        here are gone, and a job promised to one would never run."""
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self._idle = 0  # threads waiting for a job that no job was promised to yet

    def start(self, job: Callable[[], None], name: str) -> None:
        """Run `job` now, on a thread named `name` for as long as it runs."""
        with self._lock:
            idle = self._idle > 0
            if idle:
                self._idle -= 1  # promised this job: it takes it from the queue
        if idle:
            self._jobs.put((job, name))
        else:
            threading.Thread(target=self._work, args=((job, name),), name=name, daemon=True).start()

    def _work(self, first: Job) -> None:
        job: Job | None = first
        while job is not None:
            run, name = job
            thread = threading.current_thread()
            thread.name = name
            try:
                run()
            finally:
                thread.name = "awl-idle"
            job = self._next()

    def _next(self) -> Job | None:
        """The next job, or None once none came for `idle_s` (and none was promised to this thread)."""
        with self._lock:
            self._idle += 1
        try:
            return self._jobs.get(timeout=self._idle_s)
        except queue.Empty:
            with self._lock:
                if self._idle > 0:  # more threads wait than jobs were promised: one may go
                    self._idle -= 1
                    return None
            return self._jobs.get()  # a job was promised to a waiting thread as this one gave up: take it


#: Every runner's (a thread idle after one runner's command serves the next runner's as well).
WORKERS = Workers()
if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=WORKERS._forget_threads)
