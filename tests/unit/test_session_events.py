"""Session events are a wire format: each one survives `to_dict` -> JSON -> `event_from_dict`."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentworld_local.domains import get_domain
from agentworld_local.engine.world import World
from agentworld_local.errors import InputError
from agentworld_local.engine import events as ev
from agentworld_local.testing.answers import answer
from agentworld_local.engine.scripted import ScriptedBackend

RECORD = None


def a_real_record():
    global RECORD
    if RECORD is None:
        world = World(ScriptedBackend([answer("thinking_then_tags").scripted()]), get_domain("terminal"))
        world.add_control("the disk is full")
        RECORD = world.run_turn("ls -la")
    return RECORD


def every_event(text: str, turn: int) -> list[ev.SessionEvent]:
    return [
        ev.TurnStarted(turn, text, {"tool": "bash", "args": {"cmd": text}}),
        ev.ThinkingDelta(turn, text),
        ev.AnswerDelta(turn, text),
        ev.ObservationDelta(turn, text),
        ev.UntaggedDelta(turn, text),
        ev.ObservationReplaced(turn, text),
        ev.ContextTrimmed(turn, 2, 5, 3000, 1800, 2048),
        ev.TurnFinished(turn, a_real_record()),
        ev.Rewarded(turn, 0.5, "judge:world@http://127.0.0.1:9/v1", {"achieved": False, "reason": text}),
        ev.TurnCancelled(turn, turn, turn),
        ev.Undone(turn, turn),
        ev.Regenerated(turn + 1, 2, turn, turn),
        ev.ControlAdded(text, 2),
        ev.Forked(f"/tmp/{text}.jsonl", turn, f"/tmp/{turn}-fork.jsonl", turn or None),
        ev.SessionOpened(f"/tmp/{text}.jsonl", "terminal", turn, turn, True, view=object()),
        ev.Refused("undo", text, "wait"),
        ev.Ready("step", turn, turn),
        ev.LoadProgress(text, 0.5),
        ev.ModelLoaded(text, 4096, 0, info=object()),
        ev.LoadCancelled(text),
        ev.FilesListed([text, "src/"], tree=object()),
        ev.Notice(text),
        ev.ErrorEvent(text, "do this next", error=ValueError(text)),
        ev.Discarded(f"/tmp/{text}.jsonl"),
        ev.Saved(f"/tmp/{turn}.jsonl", turn),
        ev.FromWorld(turn, text, "store"),
    ]


def test_every_event_type_is_covered():
    assert {type(event) for event in every_event("x", 1)} == set(ev.EVENT_TYPES)


@given(text=st.text(), turn=st.integers(min_value=0, max_value=10**6))
def test_every_event_round_trips_through_json(text, turn):
    for event in every_event(text, turn):
        wire = json.loads(json.dumps(event.to_dict()))
        assert ev.event_from_dict(wire) == event


def test_the_wire_names_are_the_ones_awl_run_json_prints():
    record = a_real_record()
    assert ev.TurnStarted(1, "ls", None).to_dict() == {"event": "action", "turn": 1, "action": "ls", "payload": None}
    assert ev.ObservationDelta(2, "x").to_dict() == {"event": "observation", "turn": 2, "text": "x"}
    # Events that move a session say where it is now: the branch's length and its last turn's id.
    assert ev.TurnFinished(1, record).to_dict() == {"event": "turn_done", "turn": 1, "record": record.to_dict(),
                                                    "turns": 1, "head": record.id}
    assert ev.TurnCancelled(3, 2, 7).to_dict() == {"event": "cancelled", "turn": 3, "turns": 2, "head": 7}
    assert ev.Undone(0, 0).to_dict() == {"event": "undo", "turns": 0, "head": 0}
    assert ev.Regenerated(2, 1, 1, 1).to_dict() == {"event": "regenerate", "turn": 2, "attempt": 1, "turns": 1, "head": 1}
    assert ev.ControlAdded("x", 1).to_dict() == {"event": "control", "text": "x", "pending": 1}
    # Python objects for faces in the same process stay off the wire.
    assert ev.ErrorEvent("m", "h", error=ValueError()).to_dict() == {"event": "error", "message": "m", "hint": "h"}
    assert ev.Saved("s.jsonl", 2).to_dict() == {"event": "saved", "path": "s.jsonl", "turns": 2}


@pytest.mark.parametrize("data", [None, [], {}, {"event": "teleport"}, {"event": "saved", "path": "x"}, {"event": 3}])
def test_a_malformed_event_is_a_clear_input_error(data):
    with pytest.raises(InputError):
        ev.event_from_dict(data)
