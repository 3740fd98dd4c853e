"""`awl run` over the session core: its JSON lines are the session events' wire form."""

from __future__ import annotations

import json

from agentworld_local.session.events import event_from_dict
from tests.cli.helpers import awl, scripted_model

THOUGHT_LS = "<think>\nAn empty directory lists nothing.\n</think>\n<predicted_observation>\ntotal 0\n</predicted_observation>"


def test_awl_run_json_prints_session_events_that_read_back_exactly(tmp_path):
    out = tmp_path / "s.jsonl"
    model = scripted_model(tmp_path, THOUGHT_LS)
    result = awl("run", "-m", model, "-o", str(out), "--json", home=tmp_path,
                 stdin="ls\n:control the disk is full\npwd\n:undo\n")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert {line["event"] for line in lines} >= {"action", "thinking", "answer", "observation", "turn_done",
                                                  "control", "undo", "saved"}
    assert [event_from_dict(line).to_dict() for line in lines] == lines
