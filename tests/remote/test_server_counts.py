"""Token counts from a server are the server's: each server kind is asked to report them in
every chunk (so a turn that ends at the observation's close, while the model writes on, still
has them), cached prompt tokens are subtracted where the server names them, and what no
server said stays awl's estimate, marked as one in the record and in every report."""

from __future__ import annotations

import json

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.remote.backend import OpenAIBackend, estimate_tokens
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import ThinkBudget
from agentworld_local.engine.world import World
from agentworld_local.testing.answers import answer
from agentworld_local.trajectory.replay import turn_stats
from tests.cli.helpers import awl
from tests.remote.fake_openai import Reply

ITEM = answer("thinking_then_tags")
#: The model writes on well past the observation's close: more chunks than awl reads past the
#: answer's end, so a usage chunk sent only at the very end never reaches it.
RUNS_ON = ITEM.raw + "\n" + "and then some more text the model wrote on " * 40

SHAPES = {
    "llama-server": dict(props={"total_slots": 2, "default_generation_settings": {"n_ctx": 65536}}),
    "vllm": dict(model_extra={"max_model_len": 65536}),
    "sglang": dict(server_info={"max_running_requests": 4, "context_length": 65536}),
    "openai": {},
}


def shaped(fake, kind: str):
    for name, value in SHAPES[kind].items():
        setattr(fake, name, value)
    return fake


def one_turn(fake):
    backend = OpenAIBackend(RemoteOptions(fake.base_url, "world"))
    world = World(backend, get_domain("terminal"), SessionSettings(think=ThinkBudget.parse("full")))
    record = next(event.record for event in world.step("ls -la") if hasattr(event, "record"))
    backend.close()
    return backend, record


def server_prompt(body: dict) -> int:
    return sum(len(m.get("content") or "") for m in body["messages"]) // 4  # what the fake counts


@pytest.mark.parametrize("kind", ["llama-server", "vllm", "sglang"])
def test_a_known_server_reports_its_counts_even_when_awl_ends_the_answer_early(fake, kind):
    shaped(fake, kind).replies[:] = [Reply(RUNS_ON, separate=True)]
    fake.cached_tokens = 100
    backend, record = one_turn(fake)
    assert backend.facts.kind == kind
    body = fake.requests[-1]
    if kind == "llama-server":
        assert body["timings_per_token"] is True and "continuous_usage_stats" not in body["stream_options"]
    else:
        assert body["stream_options"]["continuous_usage_stats"] is True and "timings_per_token" not in body
    assert record.observation == ITEM.observation  # the turn ended at the close: the rest was not taken
    prompt = server_prompt(body)
    assert prompt != estimate_tokens(body["messages"])  # the figures below cannot be awl's own
    assert record.tokens["prompt_total"] == prompt
    assert record.tokens["prompt_evaluated"] == prompt - 100  # the server's cache, subtracted
    assert record.tokens["generated"] > 0
    assert "estimated" not in record.tokens or not any(k.startswith("prompt") for k in record.tokens["estimated"])


def test_an_unknown_server_is_sent_only_the_standard_option_and_its_late_usage_is_marked_missing(fake):
    shaped(fake, "openai").replies[:] = [Reply(RUNS_ON, separate=True)]
    backend, record = one_turn(fake)
    body = fake.requests[-1]
    assert body["stream_options"] == {"include_usage": True} and "timings_per_token" not in body
    # Its usage comes only after everything the model wrote: awl closed the stream before it.
    assert record.tokens["prompt_total"] == estimate_tokens(body["messages"])
    assert {"prompt_total", "prompt_evaluated", "generated"} <= set(record.tokens["estimated"])
    assert record.estimated("prompt_total") and "prompt ~" in turn_stats(record)


def test_a_server_that_ends_with_the_observation_gives_its_counts_from_the_last_chunk(fake):
    shaped(fake, "openai").replies[:] = [Reply(ITEM.raw, separate=True)]
    fake.cached_tokens = 7
    backend, record = one_turn(fake)
    prompt = server_prompt(fake.requests[-1])
    assert record.tokens["prompt_total"] == prompt and record.tokens["prompt_evaluated"] == prompt - 7
    assert record.tokens["estimated"] == ["thinking"]  # no server here says how many were thinking
    assert not record.estimated("prompt_total") and "prompt ~" not in turn_stats(record)


def test_without_a_cache_figure_the_evaluated_count_is_marked_an_estimate(fake):
    shaped(fake, "vllm").replies[:] = [Reply(ITEM.raw, separate=True)]  # no --enable-prompt-tokens-details
    backend, record = one_turn(fake)
    prompt = server_prompt(fake.requests[-1])
    assert record.tokens["prompt_total"] == prompt and not record.estimated("prompt_total")
    assert record.tokens["prompt_evaluated"] == prompt and record.estimated("prompt_evaluated")


def test_a_run_against_a_server_that_reports_nothing_marks_every_figure(fake, tmp_path):
    shaped(fake, "vllm").replies[:] = [Reply(ITEM.raw, separate=True)]
    fake.reports_usage = False
    out = tmp_path / "s.jsonl"
    result = awl("run", "--backend", "openai", "--base-url", fake.base_url, "--api-model", "world",
                 "--out", str(out), home=tmp_path, stdin="ls -la\n")
    assert result.returncode == 0, result.stderr
    assert "~" in result.stderr and "awl's estimates" in result.stderr
    turn = [json.loads(line) for line in out.read_text().splitlines()][-1]
    assert set(turn["tokens"]["estimated"]) == {"prompt_total", "prompt_evaluated", "thinking", "generated"}


def test_bench_predict_says_which_prompt_figures_are_estimates(fake, tmp_path):
    row = {"task": "terminal", "id": "t", "turn_idx": 1, "total_turns": 1, "system_str": "You simulate a terminal.",
           "prompt": ["### Turn 1\n**Action:**\n```\nls\n```"], "response": ["**Environment Observation:**\nx"],
           "current_prompt": ""}
    path = tmp_path / "terminal_test.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    args = ["bench", "predict", str(path), "--backend", "openai", "--base-url", fake.base_url, "--api-model", "world"]
    shaped(fake, "vllm").replies[:] = [Reply(ITEM.raw, separate=True)]
    fake.cached_tokens = 0
    reported = awl(*args, "--out", str(tmp_path / "a.jsonl"), "--json", home=tmp_path)
    assert reported.returncode == 0, reported.stderr
    done = json.loads(reported.stdout.splitlines()[-1])
    assert done["prompt_tokens_estimated_rows"] == 0 and done["prompt_tokens_total"] == server_prompt(fake.requests[-1])
    fake.reports_usage = False
    silent = awl(*args, "--out", str(tmp_path / "b.jsonl"), home=tmp_path)
    assert silent.returncode == 0, silent.stderr
    assert "prompt tokens evaluated: ~" in silent.stderr and "awl's estimate for 1 row" in silent.stderr


def test_an_answer_counts_as_the_servers_only_when_each_of_its_requests_said():
    """A continuation after a spent thinking budget is a second request: a count that misses
    one of them is not the server's (it would leave that request's tokens out)."""
    from types import SimpleNamespace

    from agentworld_local.engine.remote.usage import ServedCounts
    from agentworld_local.engine.types import GenerationStats

    def chunk(completion):
        return SimpleNamespace(usage=SimpleNamespace(prompt_tokens=40, completion_tokens=completion), model_extra={})

    both, first_only = ServedCounts(), ServedCounts()
    for counts, second in ((both, chunk(7)), (first_only, SimpleNamespace(usage=None, model_extra={}))):
        counts.read(chunk(30))
        counts.next_request()
        counts.read(second)
    assert both.generated == 37
    stats = GenerationStats(generated_tokens=35)  # what awl counted of the stream
    first_only.apply(stats)
    assert first_only.generated is None and stats.generated_tokens == 35 and "generated" in stats.estimated
