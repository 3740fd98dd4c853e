"""The rules of lending a llama model's session slots (engine/llama/sequences.SequencePool), one
owner against another, without a model: who waits, who takes which slot."""

from __future__ import annotations

import threading

import pytest

from agentworld_local.engine.llama.sequences import SequencePool
from agentworld_local.errors import BackendBusy


def test_a_turn_keeps_its_slot_between_its_prefetch_and_its_generate():
    """A's turn evaluated its start in slot 0 and generates next; meanwhile B's turn finds
    slot 1 held by C's idle prefetch: B waits for C to yield, it does not take A's slot."""
    for _ in range(20):  # a race: run it many times
        slots = SequencePool(2)
        a, b, c = object(), object(), object()
        first = slots.acquire(a)
        slots.release(first, keep=True)  # A's own prefetch ended; its generate comes next
        prefetch = slots.acquire(c, yields=True)
        stop, got = threading.Event(), {}
        waiting = threading.Thread(target=lambda: got.update(b=slots.acquire(b, wait=stop)))
        waiting.start()
        generate = slots.acquire(a)  # A's generate: its own slot, whatever B does
        assert generate is first
        slots.release(prefetch)  # C's prefetch yields
        waiting.join()
        assert got["b"] is prefetch and got["b"] is not first
        slots.release(generate)
        slots.release(got["b"])


def test_a_reserved_slot_is_lent_only_when_nothing_else_would_free():
    slots = SequencePool(2)
    a, b, c = object(), object(), object()
    slots.release(slots.acquire(a), keep=True)
    turn = slots.acquire(b)  # the other idle slot: never A's
    assert turn is not slots.held_by(a)
    # Every other slot runs a turn (not a prefetch that yields): C takes the reserved one
    # rather than fail, A's next turn then finds its history elsewhere.
    assert slots.acquire(c, wait=threading.Event()) is not None
    with pytest.raises(BackendBusy):
        slots.acquire(object())
