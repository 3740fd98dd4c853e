"""A failed save leaves the World as it was: the turn or the undo never happened."""

from __future__ import annotations

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.testing.answers import answer
from agentworld_local.engine.scripted import ScriptedBackend


class DiskFull(OSError):
    pass


class FlakyWriter:
    """Saves turns and undos like a trajectory writer; the next call of one kind fails once."""

    def __init__(self) -> None:
        self.turns: list[int] = []
        self.undos: list[int] = []
        self.fail_next = ""

    def _maybe_fail(self, kind: str) -> None:
        if self.fail_next == kind:
            self.fail_next = ""
            raise DiskFull(28, "No space left on device")

    def record_turn(self, record) -> None:
        self._maybe_fail("turn")
        self.turns.append(record.id)

    def record_undo(self, kept_turns: int) -> None:
        self._maybe_fail("undo")
        self.undos.append(kept_turns)


def make_world(writer: FlakyWriter) -> World:
    backend = ScriptedBackend([answer("thinking_then_tags").scripted()])
    return World(backend, get_domain("terminal"), SessionSettings(), on_turn=writer.record_turn,
                 on_undo=writer.record_undo)


def test_a_turn_that_cannot_be_saved_leaves_the_world_unchanged():
    writer = FlakyWriter()
    world = make_world(writer)
    world.run_turn("ls")
    world.add_control("the disk is almost full")
    writer.fail_next = "turn"
    with pytest.raises(DiskFull):
        world.run_turn("pwd")
    assert [r.id for r in world.history] == [1]
    assert world.pending_controls == ["the disk is almost full"]  # still waiting for a saved turn
    third = world.run_turn("pwd")
    assert (third.id, third.parent, third.turn) == (2, 1, 2)
    assert third.controls_added == ["the disk is almost full"]
    assert writer.turns == [1, 2]


def test_an_undo_that_cannot_be_saved_undoes_nothing():
    writer = FlakyWriter()
    world = make_world(writer)
    world.run_turn("ls")
    world.run_turn("pwd")
    writer.fail_next = "undo"
    with pytest.raises(DiskFull):
        world.undo()
    assert len(world.history) == 2 and writer.undos == []
    world.undo()
    assert len(world.history) == 1 and writer.undos == [1]
    again = world.run_turn("cat a")
    assert (again.id, again.parent) == (3, 1)


def test_undo_to_a_turn_reports_the_turns_kept():
    writer = FlakyWriter()
    world = make_world(writer)
    for action in ("ls", "pwd", "whoami"):
        world.run_turn(action)
    world.undo(to_turn=1)
    assert writer.undos == [1] and len(world.history) == 1
    with pytest.raises(Exception, match="Cannot undo"):
        world.undo(to_turn=5)
    assert writer.undos == [1]  # a refused undo is not recorded
