"""`awl bench predict` against a server: several trajectories at once, the rows of one
trajectory in order, and a killed run goes on without predicting finished rows again."""

from __future__ import annotations

import json

import pytest

from agentworld_local.testing.answers import answer
from tests.cli.helpers import assert_one_line_error, awl
from tests.remote.conftest import killed_after_lines
from tests.remote.fake_openai import Reply

ITEM = answer("thinking_then_tags")
TRAJECTORIES = 4


def rows() -> list[dict]:
    out = []
    for number in range(TRAJECTORIES):
        prompts = [f"### Turn {turn}\n**Action:**\n```\ncmd-{number}-{turn}\n```" for turn in (1, 2)]
        responses = [f"**Environment Observation:**\nout-{number}-{turn}" for turn in (1, 2)]
        for turn in (1, 2):
            out.append({"task": "terminal", "id": f"traj-{number}", "turn_idx": turn, "total_turns": 2,
                        "system_str": "You simulate a terminal.", "prompt": prompts, "response": responses,
                        "current_prompt": ""})
    return out


@pytest.fixture
def bench(tmp_path, fake):
    path = tmp_path / "terminal_test.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows()), encoding="utf-8")
    fake.replies[:] = [Reply(ITEM.raw, separate=True)]
    fake.props = {"default_generation_settings": {"n_ctx": 65536}, "total_slots": 3}
    return path, tmp_path / "predictions.jsonl"


def predict_args(path, out, fake, *extra):
    return ["bench", "predict", str(path), "--backend", "openai", "--base-url", fake.base_url, "--api-model", "world",
            "--out", str(out), *extra]


def current_action(body: dict) -> str:
    return body["messages"][-1]["content"].split("```\n")[1].split("\n")[0]


def test_trajectories_run_at_once_each_in_its_order(bench, fake):
    path, out = bench
    fake.delay = 0.3  # each answer takes a while: the runs overlap
    result = awl(*predict_args(path, out, fake), home=out.parent)
    assert result.returncode == 0, result.stderr
    assert "up to 3 trajectories at once" in result.stderr  # llama-server's /props total_slots
    assert fake.most_at_once == 3
    predicted = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(p["awl_predict"]["line"] for p in predicted) == list(range(1, 2 * TRAJECTORIES + 1))
    assert all("<predicted_observation>" in p["gen"] and "<think>" not in p["gen"] for p in predicted)
    sent = [current_action(body) for body in fake.requests]
    for number in range(TRAJECTORIES):
        assert sent.index(f"cmd-{number}-1") < sent.index(f"cmd-{number}-2")
    # Turn 2 is sent with the ground-truth turn 1 before it, as the official evaluation sends it.
    second = next(b for b in fake.requests if current_action(b) == "cmd-0-2")
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert second["messages"][2]["content"] == "**Environment Observation:**\nout-0-1"


def test_concurrency_given_wins_and_a_local_model_cannot_take_more_than_one(bench, fake, tmp_path):
    path, out = bench
    result = awl(*predict_args(path, out, fake, "--concurrency", "1"), home=out.parent)
    assert result.returncode == 0, result.stderr
    assert fake.most_at_once == 1
    assert_one_line_error(awl("bench", "predict", str(path), "-m", "x.gguf", "--out", str(tmp_path / "p2.jsonl"),
                              "--concurrency", "2", home=tmp_path), "--concurrency", "--backend openai")


def test_a_killed_run_goes_on_without_predicting_rows_again(bench, fake):
    path, out = bench
    fake.delay = 0.3
    first = killed_after_lines(predict_args(path, out, fake, "--concurrency", "2"), out, 3, out.parent, "awl_predict")
    assert 3 <= len(first) < 2 * TRAJECTORIES
    fake.delay = 0.0
    sent_before = len(fake.requests)
    result = awl(*predict_args(path, out, fake), home=out.parent)
    assert result.returncode == 0, result.stderr
    again = [current_action(body) for body in fake.requests[sent_before:]]
    lines = [json.loads(line)["awl_predict"]["line"] for line in out.read_text().splitlines()]
    assert sorted(lines) == list(range(1, 2 * TRAJECTORIES + 1))
    assert len(again) == 2 * TRAJECTORIES - len(first)  # only the rows that were not written


def test_a_rerun_with_another_server_model_is_refused(bench, fake):
    path, out = bench
    assert awl(*predict_args(path, out, fake, "--rows", "1"), home=out.parent).returncode == 0
    fake.models[:] = ["world", "other"]
    args = ["bench", "predict", str(path), "--backend", "openai", "--base-url", fake.base_url, "--api-model", "other",
            "--out", str(out)]
    assert_one_line_error(awl(*args, home=out.parent), "other")
