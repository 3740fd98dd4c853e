"""The gate in front of a server's places (engine/remote/server_kinds.py TurnGate): never more
turns inside than its slots, waiting turns let in first come first served, a cancelled waiter
leaves without a slot and without losing one, also when its cancel races the slot's hand-over."""

from __future__ import annotations

import threading

import pytest

from agentworld_local.engine.remote.server_kinds import TurnGate

pytestmark = pytest.mark.timeout(120)


def _waiting(gate: TurnGate, count: int) -> None:
    """Until `count` turns wait in line (they queue under the gate's lock: no fixed sleep)."""
    while True:
        with gate._lock:
            if len(gate._waiting) >= count:
                return
        threading.Event().wait(0.001)


def test_turns_beyond_the_slots_wait_and_enter_in_order():
    gate = TurnGate(2, poll_s=5.0)
    assert gate.enter(lambda: False) and gate.enter(lambda: False)
    entered: list[int] = []
    threads = []
    for number in range(5):
        thread = threading.Thread(target=lambda n=number: (gate.enter(lambda: False), entered.append(n)))
        thread.start()
        threads.append(thread)
        _waiting(gate, number + 1)  # each in line before the next one comes
    assert entered == []
    for expected in range(5):
        gate.leave()  # one slot free: exactly the first waiter goes in
        threads[expected].join(60)
        assert entered == list(range(expected + 1))
    gate.leave()
    gate.leave()
    assert gate._free == 2 and not gate._waiting


def _full_with_a_waiter(poll_s: float) -> tuple[TurnGate, threading.Event, threading.Thread, list[bool]]:
    """A gate of one slot, taken, and a turn waiting in line that `cancel` cancels."""
    gate = TurnGate(1, poll_s=poll_s)
    assert gate.enter(lambda: False)
    cancel = threading.Event()
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(gate.enter(cancel.is_set)))
    waiter.start()
    _waiting(gate, 1)
    return gate, cancel, waiter, result


def test_a_cancelled_waiter_leaves_the_line_without_a_slot():
    gate, cancel, waiter, result = _full_with_a_waiter(0.01)
    cancel.set()
    waiter.join(60)
    assert result == [False] and not gate._waiting
    gate.leave()
    assert gate.enter(lambda: False)  # the slot is back, not held by the cancelled turn


def test_a_cancel_racing_the_hand_over_never_loses_a_slot():
    """A waiter cancelled as a leave hands it the slot passes the slot on; run many times."""
    for _ in range(300):
        gate, cancel, waiter, results = _full_with_a_waiter(0.0005)
        releaser = threading.Thread(target=gate.leave)
        releaser.start()
        cancel.set()
        waiter.join(60)
        releaser.join(60)
        if results == [True]:
            gate.leave()  # it got in before its cancel was seen: it leaves as a turn does
        assert gate._free == 1 and not gate._waiting, results


def test_a_cancel_before_waiting_returns_at_once():
    gate = TurnGate(1, poll_s=3600)  # a poll this long would hang the test if the cancel waited for it
    assert gate.enter(lambda: True)  # a free slot is taken even so: the turn then sees its cancel itself
    assert gate.enter(lambda: True) is False
    assert not gate._waiting
