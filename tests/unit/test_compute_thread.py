"""ComputeThread: calls run one at a time on its own thread, results and errors come back,
and a caller interrupted by Ctrl+C still waits for its call to end."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Callable

import pytest

from agentworld_local.engine.llama.compute_thread import ComputeThread


@pytest.fixture
def compute():
    thread = ComputeThread()
    yield thread
    thread.close()


def test_calls_from_many_threads_run_on_one_thread_and_return_their_results(compute):
    ran_on: list[int] = []
    results: dict[int, int] = {}

    def caller(number: int) -> None:
        for step in range(50):
            results[number * 100 + step] = compute.call(lambda: (ran_on.append(threading.get_ident()), step * 2)[1])

    threads = [threading.Thread(target=caller, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(ran_on) == 200 and len(set(ran_on)) == 1
    assert ran_on[0] not in {thread.ident for thread in threads} | {threading.get_ident()}
    assert all(value == (key % 100) * 2 for key, value in results.items())


def test_an_error_is_raised_in_the_caller_and_the_thread_goes_on(compute):
    def fails():
        raise ValueError("no room")

    with pytest.raises(ValueError, match="no room"):
        compute.call(fails)
    assert compute.call(lambda: 7) == 7


def test_a_call_from_the_compute_thread_itself_runs_there_at_once(compute):
    assert compute.call(lambda: compute.call(lambda: "inner")) == "inner"


def test_after_close_a_call_is_refused_and_a_second_close_does_nothing(compute):
    compute.close()
    with pytest.raises(RuntimeError, match="closed"):
        compute.call(lambda: 1)
    compute.close()


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs pthread_kill (POSIX)")
def test_ctrl_c_while_a_call_runs_is_raised_only_once_the_call_is_over(compute):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("SIGINT reaches the main thread only")
    started, delivered, release = threading.Event(), threading.Event(), threading.Event()
    finished: list[bool] = []

    def work():
        started.set()
        release.wait()
        finished.append(True)
        return "done"

    def on_sigint(signum, frame):
        if delivered.is_set():  # a signal sent again that crossed the first: nothing more to say
            return
        delivered.set()
        raise KeyboardInterrupt

    def interrupt() -> None:
        started.wait()
        # A signal that lands before the caller blocks on its lock is handled only once the lock
        # is released (the wait does not check for it first), so it is sent again until handled:
        # the caller was interrupted while its call runs, and only then may the call end.
        while True:
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            if delivered.wait(0.05):  # how often to send, not a deadline
                break
        release.set()

    previous = signal.signal(signal.SIGINT, on_sigint)
    helper = threading.Thread(target=interrupt)
    try:
        helper.start()
        with pytest.raises(KeyboardInterrupt):
            compute.call(work)
        assert finished == [True], "the caller returned before its call ended"
    finally:
        release.set()
        helper.join()
        signal.signal(signal.SIGINT, previous)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork (POSIX)")
def test_a_forked_child_gets_a_compute_thread_of_its_own(compute):
    """Gymnasium's AsyncVectorEnv forks a runner's process: the thread stays in the parent."""
    assert compute.call(lambda: 1) == 1
    _a_forked_child_calls(compute)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork (POSIX)")
def test_a_child_forked_while_another_thread_queues_a_call_is_not_stuck(compute):
    """The fork copies the lock a parent thread held while queueing: the child must not inherit it."""
    holding, fork_done = threading.Event(), threading.Event()

    def queue_a_call() -> None:
        with compute._lock:  # the moment inside `call` where a caller queues its work
            holding.set()
            fork_done.wait()

    queuer = threading.Thread(target=queue_a_call)
    queuer.start()
    holding.wait()
    _a_forked_child_calls(compute, forked=fork_done.set)
    queuer.join()


def _a_forked_child_calls(compute: ComputeThread, forked: Callable[[], None] = lambda: None) -> None:
    """A forked child's call runs in the child (its pid comes back) and the parent's calls go on;
    `forked` runs in the parent once the child is started."""
    context = multiprocessing.get_context("fork")
    result = context.Queue()
    child = context.Process(target=lambda: result.put(compute.call(lambda: os.getpid())))
    child.start()
    forked()
    try:
        got = result.get(timeout=120)  # a bound for a hang, not a pace: the child answers at once
    except BaseException:
        child.kill()  # stuck: do not leave it behind
        raise
    finally:
        child.join()
    assert got == child.pid and child.exitcode == 0
    assert compute.call(lambda: 2) == 2
