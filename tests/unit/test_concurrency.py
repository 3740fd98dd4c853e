"""The bounded concurrent map (agentworld_local/concurrency.py) that bench predict, bench
judge and the vector env share, with real threads held on Events: never more than
`at_once` in flight, each result as it finishes, an early close that starts nothing more and
waits for the calls in flight (whose results it hands back), errors per item, every value of
a work that yields several. No sleeps and no timing: a wait's timeout only ends a hung test."""

from __future__ import annotations

import threading

import pytest

from agentworld_local.concurrency import Done, map_at_once, map_ordered, stream_at_once

HUNG = 1800.0  # far beyond pytest-timeout's limit: a hang fails there (never a slow machine here); threads still end


class Gates:
    """Work that blocks each item on its own Event and counts the calls in flight."""

    def __init__(self, count: int) -> None:
        self.gates = [threading.Event() for _ in range(count)]
        self.started: list[int] = []
        self.entered = threading.Semaphore(0)
        self.in_flight = 0
        self.most = 0
        self._lock = threading.Lock()

    def __call__(self, item: int) -> int:
        with self._lock:
            self.started.append(item)
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        self.entered.release()
        try:
            assert self.gates[item].wait(HUNG)
            return item * 10
        finally:
            with self._lock:
                self.in_flight -= 1

    def wait_started(self, count: int) -> None:
        for _ in range(count):
            assert self.entered.acquire(timeout=HUNG)


def closing_in_thread(running) -> tuple[threading.Thread, list]:
    """close() on another thread (it waits for the calls in flight); its late results land in the list."""
    late: list = []
    closer = threading.Thread(target=lambda: late.extend(running.close()))
    closer.start()
    assert running.stop.wait(HUNG)  # the stop is set before close waits
    return closer, late


def test_never_more_than_at_once_in_flight_and_each_result_as_it_finishes():
    work = Gates(7)
    with map_at_once(work, range(7), at_once=3) as running:
        work.wait_started(3)
        assert sorted(work.started) == [0, 1, 2]
        work.gates[2].set()  # the last one started finishes first: it comes first
        first = next(running)
        assert (first.index, first.item, first.value, first.error) == (2, 2, 20, None)
        order = [2]
        for item in (6, 5, 4, 3, 1, 0):  # each release frees one slot; the map fills it from the items in order
            work.gates[item].set()
        for done in running:
            order.append(done.index)
            assert done.value == done.item * 10
    assert work.most == 3 and sorted(order) == list(range(7))
    assert sorted(work.started) == list(range(7))


def test_an_early_close_starts_nothing_more_and_waits_for_the_calls_in_flight():
    work = Gates(6)
    running = map_at_once(work, range(6), at_once=2)
    work.wait_started(2)
    closer, late = closing_in_thread(running)
    assert closer.is_alive()  # both calls in flight still hold their gates: close waits for them
    work.gates[1].set()
    work.gates[0].set()
    closer.join(HUNG)
    assert not closer.is_alive()
    assert sorted(done.index for done in late) == [0, 1]  # what finished while stopping comes back
    assert sorted(work.started) == [0, 1]  # items 2 to 5 never began
    assert list(running) == [] and running.close() == []  # closed: nothing more, and late is handed once


def test_a_break_then_close_hands_back_the_results_not_yet_taken():
    work = Gates(5)
    running = map_at_once(work, range(5), at_once=2)
    work.wait_started(2)
    work.gates[0].set()
    for done in running:
        assert done.index == 0
        break
    closer, late = closing_in_thread(running)
    work.gates[1].set()
    closer.join(HUNG)
    assert [done.value for done in late] == [10] and sorted(work.started) == [0, 1]


def test_a_stop_set_by_the_caller_ends_the_map_after_the_calls_in_flight():
    work = Gates(5)
    stop = threading.Event()
    running = map_at_once(work, range(5), at_once=2, stop=stop)
    work.wait_started(2)
    stop.set()
    work.gates[0].set()
    work.gates[1].set()
    assert sorted(done.index for done in running) == [0, 1]
    assert sorted(work.started) == [0, 1]


def test_errors_come_back_per_item_and_the_others_go_on():
    def work(item: int) -> int:
        if item % 2:
            raise ValueError(f"odd {item}")
        return item

    with map_at_once(work, range(6), at_once=2) as running:
        finished = sorted(running, key=lambda done: done.index)
    assert [done.value for done in finished if done.error is None] == [0, 2, 4]
    errors = [done for done in finished if done.error is not None]
    assert [str(done.error) for done in errors] == ["odd 1", "odd 3", "odd 5"]
    with pytest.raises(ValueError, match="odd 1"):
        errors[0].result()
    assert Done(0, "x", value=5).result() == 5


def test_even_a_keyboard_interrupt_in_a_worker_is_its_items_error_not_a_dead_thread():
    def work(item: int) -> int:
        raise KeyboardInterrupt

    with map_at_once(work, [1], at_once=1) as running:
        (done,) = list(running)
    assert isinstance(done.error, KeyboardInterrupt)


def test_every_value_of_a_multi_value_work_arrives_each_item_in_its_order():
    def work(item: str):
        for step in range(3):
            yield f"{item}{step}"

    with stream_at_once(work, ["a", "b", "c", "d"], at_once=2) as running:
        finished = list(running)
    assert len(finished) == 12
    for item in "abcd":
        assert [done.value for done in finished if done.item == item] == [f"{item}{step}" for step in range(3)]


def test_a_multi_value_work_takes_no_further_step_once_the_map_stops():
    gate, steps = threading.Event(), []

    def work(item: int):
        try:
            yield "a"
            assert gate.wait(HUNG)
            yield "b"
            steps.append("after b")
        finally:
            steps.append(f"closed on {threading.current_thread().name.split('_')[0]}")

    running = stream_at_once(work, [0], at_once=1, name="awl-test")
    assert next(running).value == "a"
    closer, late = closing_in_thread(running)
    gate.set()
    closer.join(HUNG)
    assert [done.value for done in late] == ["b"]
    assert steps == ["closed on awl-test"]  # its cleanup ran on its worker, and no step after "b"


def test_map_ordered_gives_the_items_order_and_raises_the_first_error_after_every_turn():
    work = Gates(4)
    for gate in work.gates:
        gate.set()
    assert map_ordered(work, [3, 1, 2, 0], at_once=4) == [30, 10, 20, 0]
    ran = []

    def failing(item: int) -> int:
        ran.append(item)
        if item in (1, 3):
            raise ValueError(f"sub-env {item}")
        return item

    with pytest.raises(ValueError, match="sub-env 1"):
        map_ordered(failing, range(5), at_once=5)
    assert sorted(ran) == [0, 1, 2, 3, 4]  # every item took its turn before the error came out


def test_at_once_below_one_is_refused():
    with pytest.raises(ValueError, match="at_once"):
        map_at_once(lambda item: item, [1], at_once=0)


def test_many_rounds_of_an_early_close_lose_nothing_and_leave_no_thread():
    """Races: close right after the k-th result, while other calls may be finishing, in
    every round; each call that began is either taken or handed back by close, exactly once,
    and close leaves no worker behind."""
    for round_ in range(300):
        began: list[int] = []
        lock = threading.Lock()

        def work(item: int) -> int:
            with lock:
                began.append(item)
            return item

        running = map_at_once(work, range(12), at_once=1 + round_ % 4, name="awl-race")
        taken = []
        for done in running:
            taken.append(done.index)
            if len(taken) > round_ % 7:
                break
        late = running.close()
        handed = taken + [done.index for done in late]
        assert sorted(handed) == sorted(began) and len(set(handed)) == len(handed)
        assert not [thread for thread in threading.enumerate() if thread.name.startswith("awl-race")]
