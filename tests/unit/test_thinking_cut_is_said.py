"""A step whose thinking the budget cut says so (issue 44): the backend reports it, the turn
record keeps `tokens.thinking_cut: true` (only then: older files and uncut turns lack it), and
every face reads it from there. The budget has a stated limit, and a scenario may set its own."""

from __future__ import annotations

import json

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine import events
from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import GenerationDone, SamplingConfig, ThinkBudget
from agentworld_local.engine.world import World
from agentworld_local.errors import InputError
from agentworld_local.scenarios.schema import scenario_from_dict
from agentworld_local.session.spec import SessionSpec
from agentworld_local.testing.answers import answer
from agentworld_local.trajectory.replay import thinking_cut_note, turn_notes
from agentworld_local.trajectory.schema import TurnRecord

LONG_THINKING = ("<think>\n" + "The agent lists the directory; the repository holds a README. " * 8 + "\n</think>\n"
                 "<predicted_observation>\nREADME.md  src\nroot@box:/app# \n</predicted_observation>")


def done_with(think: str) -> GenerationDone:
    backend = ScriptedBackend([ScriptedAnswer(LONG_THINKING, chunk=4)])
    out = list(backend.generate([{"role": "user", "content": "ls"}], sampling=SamplingConfig(),
                                think=ThinkBudget.parse(think), seed=0))
    assert isinstance(out[-1], GenerationDone)
    return out[-1]


@pytest.mark.parametrize("think, cut", [("8", True), ("full", False), ("off", False), ("100000", False)])
def test_the_scripted_backend_reports_whether_the_budget_cut_the_thinking(think, cut):
    assert done_with(think).stats.thinking_cut is cut


def record_for(think: str) -> TurnRecord:
    world = World(ScriptedBackend([ScriptedAnswer(LONG_THINKING, chunk=4)]), get_domain("terminal"),
                  SessionSettings(think=ThinkBudget.parse(think)))
    return world.run_turn("ls")


def test_a_cut_turn_records_it_and_an_uncut_one_writes_no_field():
    cut, whole = record_for("8"), record_for("full")
    assert cut.tokens["thinking_cut"] is True and cut.tokens["thinking"] == 8
    assert "thinking_cut" not in whole.tokens  # optional: written only when set
    assert json.loads(json.dumps(cut.to_dict()))["tokens"]["thinking_cut"] is True
    assert TurnRecord.from_dict(cut.to_dict()).tokens["thinking_cut"] is True
    assert cut.observation == whole.observation == "README.md  src\nroot@box:/app# "  # the answer goes on after the cut


def test_the_turn_done_event_carries_it_on_the_wire():
    event = events.event_from_dict(json.loads(json.dumps(events.TurnFinished(1, record_for("8")).to_dict())))
    assert isinstance(event, events.TurnFinished) and event.record.tokens["thinking_cut"] is True


def test_replay_notes_say_where_thinking_was_cut_and_older_files_say_nothing():
    cut = record_for("8")
    assert thinking_cut_note(cut) == "thinking cut at 8 tokens"
    assert "thinking cut at 8 tokens by the thinking budget" in turn_notes(cut)
    older = TurnRecord.from_dict({**cut.to_dict(), "tokens": {"thinking": 1024, "generated": 1100}})
    assert thinking_cut_note(older) == "" and not any("thinking cut" in note for note in turn_notes(older))


@pytest.mark.parametrize("value", ["99999999999", "1" * 5000])
def test_a_budget_past_the_limit_says_the_limit(value):
    with pytest.raises(InputError) as raised:
        ThinkBudget.parse(value)
    assert "at most 999,999,999 tokens" in raised.value.message and "--think full" in raised.value.hint
    assert len(raised.value.message) < 200


def test_the_largest_budget_and_leading_zeros_are_taken():
    assert ThinkBudget.parse("999999999") == ThinkBudget("budget", 999_999_999)
    assert ThinkBudget.parse("0000000001024") == ThinkBudget("budget", 1024)


SCENARIO = {"version": 1, "name": "deep-shell", "domain": "terminal", "title": "A shell that needs thought",
            "task": "Find the bug.", "initial_state": "root@box:/app# "}


@pytest.mark.parametrize("value, label", [(4096, "4096"), ("off", "off"), ("full", "full"), (" 512 ", "512")])
def test_a_scenario_may_set_its_own_thinking_budget(value, label):
    scenario = scenario_from_dict({**SCENARIO, "think": value}, source="deep.toml")
    assert scenario.think == label and scenario.to_dict()["think"] == label
    assert scenario.apply(SessionSettings()).think == ThinkBudget.parse(label)


def test_a_scenario_without_think_keeps_the_default_and_writes_no_field():
    scenario = scenario_from_dict(dict(SCENARIO), source="deep.toml")
    assert scenario.think is None and "think" not in scenario.to_dict()
    assert scenario.apply(SessionSettings()).think == ThinkBudget.parse(None)


@pytest.mark.parametrize("value, said", [("lots", "not `off`, `full` or a number of tokens"),
                                         (99999999999, "more than 999,999,999 tokens"),
                                         (True, "not a boolean"), (1.5, "not a number")])
def test_a_bad_think_in_a_scenario_names_the_file_and_the_field(value, said):
    with pytest.raises(InputError) as raised:
        scenario_from_dict({**SCENARIO, "think": value}, source="deep.toml")
    assert raised.value.message.startswith("Scenario deep.toml: field `think`") and said in raised.value.message
    assert "think = 4096" in raised.value.hint


def test_think_given_overrides_the_scenarios_and_its_absence_keeps_it(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text('version = 1\nname = "deep-shell"\ndomain = "terminal"\ntitle = "Deep"\ntask = "Find the bug."\n'
                    'initial_state = "root@box:/app# "\nthink = 4096\n', encoding="utf-8")
    assert SessionSpec(scenario=str(path)).resolve().settings.think == ThinkBudget("budget", 4096)
    assert SessionSpec(scenario=str(path), think="off").resolve().settings.think == ThinkBudget("off")
    assert SessionSpec().resolve().settings.think == ThinkBudget.parse(None)


def test_the_realistic_answers_are_not_cut_by_the_default_budget():
    """The default budget cuts only what is longer than it: a short thinking is whole."""
    world = World(ScriptedBackend([answer("thinking_then_tags").scripted()]), get_domain("terminal"))
    assert "thinking_cut" not in world.run_turn("ls -la").tokens


@pytest.mark.parametrize("separate", [False, True], ids=["think-in-text", "reasoning-field"])
def test_a_server_that_continues_after_the_budget_reports_the_cut(separate):
    """The remote backend: the budget is a stop and a continuation; the turn says it was cut."""
    from agentworld_local.engine.remote.backend import OpenAIBackend
    from agentworld_local.engine.remote.options import RemoteOptions
    from tests.remote.fake_openai import FakeOpenAI, Reply

    server = FakeOpenAI()
    try:
        server.replies[:] = [Reply(LONG_THINKING, separate=separate)]
        backend = OpenAIBackend(RemoteOptions(server.base_url, "world"))
        cut = World(backend, get_domain("terminal"), SessionSettings(think=ThinkBudget.parse("4"))).run_turn("ls")
        backend.close()
        assert cut.tokens["thinking_cut"] is True and len(server.requests) == 2
        server.replies[:] = [Reply(LONG_THINKING, separate=separate)]
        backend = OpenAIBackend(RemoteOptions(server.base_url, "world"))
        whole = World(backend, get_domain("terminal"), SessionSettings(think=ThinkBudget.parse("full"))).run_turn("ls")
        backend.close()
        assert "thinking_cut" not in whole.tokens
    finally:
        server.close()
