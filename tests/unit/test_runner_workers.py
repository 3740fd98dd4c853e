"""The runner's threads (session/runner/workers.py): a command starts at once, never behind a
busy thread; an idle thread runs the next command; an idle thread ends after a while; a job
handed over just as a thread gives up still runs."""

from __future__ import annotations

import os
import threading

import pytest

from agentworld_local.session.runner.workers import Workers

HUNG = 30.0


def test_a_job_starts_while_another_runs_and_an_idle_thread_takes_the_next():
    workers = Workers(idle_s=HUNG)
    gate, started, seen = threading.Event(), threading.Event(), []

    def blocked() -> None:
        seen.append(threading.current_thread())
        started.set()
        assert gate.wait(HUNG)

    workers.start(blocked, "awl-first")
    assert started.wait(HUNG)
    second = threading.Event()
    workers.start(lambda: (seen.append(threading.current_thread()), second.set()), "awl-second")
    assert second.wait(HUNG)  # it did not wait for the first, still blocked
    assert seen[0] is not seen[1] and seen[0].name == "awl-first"
    gate.set()
    for _ in range(20):  # an idle thread serves each next job: no new thread per job
        done = threading.Event()
        workers.start(lambda: (seen.append(threading.current_thread()), done.set()), "awl-next")
        assert done.wait(HUNG)
    assert {thread.ident for thread in seen[2:]} <= {seen[0].ident, seen[1].ident}


def test_an_idle_thread_ends_after_its_wait():
    workers = Workers(idle_s=0.05)
    ran, threads = threading.Event(), []
    workers.start(lambda: (threads.append(threading.current_thread()), ran.set()), "awl-once")
    assert ran.wait(HUNG)
    threads[0].join(HUNG)
    assert not threads[0].is_alive()


def test_every_job_runs_when_threads_give_up_as_jobs_come():
    workers = Workers(idle_s=0.001)  # threads give up all the time, as jobs are handed to them
    count, lock, all_done = [0], threading.Lock(), threading.Event()
    total = 2000

    def job() -> None:
        with lock:
            count[0] += 1
            if count[0] == total:
                all_done.set()

    for _ in range(total):
        workers.start(job, "awl-many")
    assert all_done.wait(HUNG) and count[0] == total


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_forked_child_runs_its_jobs_though_the_parents_idle_threads_did_not_come_with_it():
    """Gymnasium's AsyncVectorEnv forks the process that holds a runner: the parent's idle
    threads do not exist in the child, and a job handed to one of them would never run."""
    from agentworld_local.session.runner.workers import WORKERS

    ran = threading.Event()
    WORKERS.start(ran.set, "awl-before-fork")
    assert ran.wait(HUNG)  # its thread is idle now, waiting for the next job
    child = os.fork()
    if child == 0:  # the child: a job must run within HUNG seconds
        done = threading.Event()
        WORKERS.start(done.set, "awl-in-child")
        os._exit(0 if done.wait(HUNG) else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
