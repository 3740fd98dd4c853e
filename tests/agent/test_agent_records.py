"""The agent's fields in the trajectory schema: optional, written only when set, read back,
and a damaged value named; replay says them."""

from __future__ import annotations

import pytest

from agentworld_local.trajectory.replay import agent_note, header_lines, turn_notes
from agentworld_local.trajectory.reader import Trajectory
from agentworld_local.trajectory.schema import SCHEMA_VERSION, Header, TurnRecord

AGENT = {"name": "qwen3-8b", "backend": "openai", "endpoint": "http://127.0.0.1:8000/v1", "spec": "openai:qwen3-8b@..."}
SIDE = {"proposal": "```\nls -la\n```", "decision": "edited", "asks": 2}


def test_files_without_an_agent_write_no_agent_field_and_read_none():
    header, turn = Header(domain="terminal").to_dict(), TurnRecord(action="ls").to_dict()
    assert "agent" not in header and "agent" not in turn
    assert Header.from_dict(header).agent is None and TurnRecord.from_dict({**turn, "id": 1, "turn": 1}).agent is None


def test_the_agent_fields_round_trip_within_the_same_schema_version():
    header = Header(domain="terminal", agent=AGENT).to_dict()
    turn = TurnRecord(action="ls -la", id=1, turn=1, agent=SIDE).to_dict()
    assert header["version"] == SCHEMA_VERSION == 1  # additive and optional: older files read as before
    assert Header.from_dict(header).agent == AGENT and TurnRecord.from_dict(turn).agent == SIDE
    assert "agent" not in Header.from_dict(header).extra


@pytest.mark.parametrize("value", ["qwen", 3, ["a"]])
def test_a_damaged_agent_field_is_named(value):
    with pytest.raises(ValueError, match="field 'agent'"):
        TurnRecord.from_dict({"type": "turn", "id": 1, "turn": 1, "action": "ls", "agent": value})


def test_replay_names_the_agent_and_what_became_of_each_proposal():
    header = Header(domain="terminal", agent=AGENT)
    turn = TurnRecord(action="ls -la /tmp", id=1, turn=1, agent=SIDE)
    lines = header_lines(Trajectory(header=header, turns=[turn], path=None, head=1), 1)
    assert "agent: qwen3-8b (openai)" in lines
    assert turn_notes(turn)[-1] == "agent proposed: ``` ls -la ``` (edited by the user, asked twice)"
    assert agent_note({"proposal": "x" * 200, "decision": "auto"}).endswith("… (run as proposed)")
