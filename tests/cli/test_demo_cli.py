"""`awl demo [--domain D]`: a bundled example per domain, replayed, or run live on a model."""

from __future__ import annotations

from agentworld_local.examples import pick_example
from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import assert_one_line_error, awl, scripted_model

THOUGHT = "<think>\nA plausible screen.\n</think>\n<predicted_observation>\nok\n</predicted_observation>"


def test_demo_replays_the_example_of_the_domain_asked_for(tmp_path):
    result = awl("demo", "--domain", "web", "--plain", home=tmp_path)
    assert result.returncode == 0, result.stderr
    recorded = read_trajectory(pick_example("web").path)
    assert recorded.current_branch()[0].action in result.stdout
    assert "awl demo --domain web --model" in result.stdout


def test_demo_of_a_domain_without_an_example_is_one_clear_error(tmp_path):
    assert_one_line_error(awl("demo", "--domain", "nowhere", home=tmp_path), "no bundled example for the domain `nowhere`")


def test_the_live_demo_plays_the_examples_setup_and_current_branch(tmp_path):
    out = tmp_path / "live.jsonl"
    result = awl("demo", "--domain", "web", "--model", scripted_model(tmp_path, THOUGHT), "--out", str(out),
                 "--seed", "5", home=tmp_path)
    assert result.returncode == 0, result.stderr
    recorded, live = read_trajectory(pick_example("web").path), read_trajectory(out)
    assert [t.action for t in live.current_branch()] == [t.action for t in recorded.current_branch()]
    assert [t.controls_added for t in live.current_branch()] == [t.controls_added for t in recorded.current_branch()]
    for field in ("domain", "task", "initial_state", "controls", "tools", "world", "state_format"):
        assert getattr(live.header, field) == getattr(recorded.header, field), field
    assert live.header.seed == 5 and not live.header.hand_written


def test_a_bad_thinking_budget_is_refused_before_the_model_loads(tmp_path):
    result = awl("demo", "--model", "no-such-model", "--think", "lots", home=tmp_path)
    assert_one_line_error(result, "Invalid thinking budget `lots`")


def test_a_mistyped_domain_gets_did_you_mean(tmp_path):
    assert_one_line_error(awl("demo", "--domain", "andriod", home=tmp_path), "Did you mean `android`?", "Pick one of")
