"""Small promises of the CLI's output (issue 45): no face gets an untagged event of
whitespace alone, a signal while a session closes does not cut its last words short, and
replay names a scripted agent as scripted."""

from __future__ import annotations

import io
import json
import signal

import pytest

from agentworld_local.cli.interrupts import CLOSING_PATIENCE, SessionSignals, Terminated
from agentworld_local.cli.turn_output import TurnPrinter
from agentworld_local.engine import events
from agentworld_local.engine.world import ObservationStream
from agentworld_local.trajectory.reader import Trajectory
from agentworld_local.trajectory.replay import agent_backend, header_lines
from agentworld_local.trajectory.schema import Header


def printed(*said: events.SessionEvent) -> list[dict]:
    out = io.StringIO()
    printer = TurnPrinter(as_json=True, show_thinking=False, out=out, thoughts=io.StringIO())
    for event in said:
        printer.show(event)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def untagged(*pieces: str) -> list[str]:
    """What the World streams as untagged text for a raw answer arriving in `pieces`."""
    stream = ObservationStream()
    out = []
    for piece in pieces:
        stream.feed(piece)
        if text := stream.untagged_text():
            out.append(text)
    return out


def test_no_face_gets_the_blank_line_before_a_tag():
    assert untagged("\n", "<predicted_observation>\ntotal 0\n</predicted_observation>") == []


def test_whitespace_that_leads_into_untagged_text_goes_out_with_it():
    assert untagged("\n", " \n", "bash: gti: command not found") == ["\n \nbash: gti: command not found"]


def test_json_prints_the_worlds_untagged_events_as_they_come():
    lines = printed(events.TurnStarted(1, "gti"), events.UntaggedDelta(1, "bash: gti"))
    assert [line.get("text") for line in lines if line["event"] == "untagged"] == ["bash: gti"]


def test_json_ends_with_discarded_when_a_new_session_kept_no_file(tmp_path):
    out = io.StringIO()
    printer = TurnPrinter(as_json=True, show_thinking=False, out=out, thoughts=io.StringIO())
    printer.saved(tmp_path / "s.jsonl", 0, kept=False)
    printer.saved(tmp_path / "t.jsonl", 2)
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [
        {"event": "discarded", "path": str(tmp_path / "s.jsonl")},
        {"event": "saved", "path": str(tmp_path / "t.jsonl"), "turns": 2}]


def test_a_signal_while_closing_is_noted_not_raised_until_past_the_patience():
    signals = SessionSignals(interactive=False)
    with pytest.raises(KeyboardInterrupt):
        signals._handle(signal.SIGINT, None)  # the quit: the session closes after it
    with signals.closing():
        for _ in range(CLOSING_PATIENCE):
            signals._handle(signal.SIGTERM, None)  # a SIGTERM after Ctrl+C, a Ctrl+C pressed again
        assert signals.cancel.is_set() and type(signals.quit) is KeyboardInterrupt  # the first signal's exit code
        with pytest.raises(KeyboardInterrupt):
            signals._handle(signal.SIGINT, None)  # one more: a close that hangs can still be left
    with pytest.raises(KeyboardInterrupt):
        signals._handle(signal.SIGINT, None)  # after closing, signals quit as before


def test_a_sigterm_alone_while_closing_makes_the_exit_143():
    signals = SessionSignals(interactive=False)
    with signals.closing():
        signals._handle(signal.SIGTERM, None)
    assert isinstance(signals.quit, Terminated)


@pytest.mark.parametrize("agent, label", [
    ({"name": "scripted:agent.json", "backend": "llama.cpp", "spec": "scripted:/tmp/agent.json"}, "scripted"),
    ({"name": "agent-model", "backend": "llama.cpp", "spec": "scripted:agent.json"}, "scripted"),
    ({"name": "qwen3-8b", "backend": "openai", "spec": "openai:qwen3-8b@http://127.0.0.1:8000/v1"}, "openai"),
    ({"name": "world.gguf", "backend": "llama.cpp", "spec": "/models/world.gguf"}, "llama.cpp"),
])
def test_replay_labels_an_agent_by_its_real_backend(agent, label):
    assert agent_backend(agent) == label
    lines = header_lines(Trajectory(header=Header(domain="terminal", agent=agent), turns=[], path=None, head=0), 0)
    assert f"agent: {agent['name']} ({label})" in lines


def test_whitespace_after_untagged_text_goes_out_as_it_comes():
    assert untagged("\n", "total 0", "\n") == ["\ntotal 0", "\n"]
