"""What awl says when it connects to a server, and where: a capacity default that fits the
server's kind (said by the commands that run many sessions, not by `awl run`), one notice for a
hybrid model on an engine whose prefix cache cannot reuse it (and `awl doctor` says the same),
and the token-count notice once per run. Against loopback servers shaped as vLLM, SGLang and
llama-server."""

from __future__ import annotations

import json

import pytest

from agentworld_local.engine.remote.backend import OpenAIBackend
from agentworld_local.engine.remote.options import BATCHING_SERVER_PARALLEL, DEFAULT_SERVER_PARALLEL, RemoteOptions
from agentworld_local.testing.answers import answer
from tests.cli.helpers import awl
from tests.remote.fake_openai import Reply
from tests.remote.test_errors import run_remote

ITEM = answer("thinking_then_tags")
HYBRID = "Qwen/Qwen-AgentWorld-35B-A3B"


@pytest.fixture
def answering(fake):
    fake.replies[:] = [Reply(ITEM.raw, separate=True)]
    return fake


def connect(fake, model: str = "world", **options) -> OpenAIBackend:
    return OpenAIBackend(RemoteOptions(fake.base_url, model), **options)


def test_a_server_without_a_count_gets_the_default_of_its_kind(fake):
    fake.model_extra = {"max_model_len": 65536}  # vLLM
    vllm = connect(fake)
    assert vllm.parallel == BATCHING_SERVER_PARALLEL
    assert [n for n in vllm.notices if "vLLM batches many" in n and f"up to {BATCHING_SERVER_PARALLEL} turns" in n]
    assert connect(fake, parallel=3).parallel == 3 and connect(fake, parallel=3).notices == []  # --parallel wins
    fake.model_extra = {}
    fake.server_info = {"context_length": 8192, "max_running_requests": None}  # SGLang, no limit set
    assert connect(fake).parallel == BATCHING_SERVER_PARALLEL
    fake.server_info = None
    unknown = connect(fake)  # nothing shows what it is
    assert unknown.facts.kind == "openai" and unknown.parallel == DEFAULT_SERVER_PARALLEL


def test_a_hybrid_model_on_vllm_gets_one_notice_with_its_cost_and_check(fake):
    fake.models = [HYBRID]
    fake.model_extra = {"max_model_len": 65536}
    backend = connect(fake, HYBRID, parallel=2)
    assert len(backend.notices) == 1
    notice = backend.notices[0]
    assert "hybrid model" in notice and "whole conversation" in notice and "vllm-project/vllm#51198" in notice
    root = fake.base_url.removesuffix("/v1")
    assert f"vllm:prefix_cache_hits_total over vllm:prefix_cache_queries_total at {root}/metrics" in notice
    # vLLM's `root` says what an alias hides.
    fake.models = ["world"]
    fake.model_extra = {"max_model_len": 65536, "root": "/models/Qwen3.5-35B-A3B-FP8"}
    assert any("hybrid model" in n for n in connect(fake, parallel=2).notices)


@pytest.mark.parametrize("shape", ["plain-vllm", "llama-server", "unknown"])
def test_no_hybrid_notice_where_the_model_or_the_engine_does_not_call_for_one(fake, shape):
    if shape == "plain-vllm":
        fake.models, fake.model_extra = ["meta-llama/Llama-3.1-8B-Instruct"], {"max_model_len": 65536}
    else:
        fake.models = [HYBRID]  # llama-server keeps recurrent checkpoints; an unknown server: awl cannot say
        fake.props = {"total_slots": 2, "default_generation_settings": {"n_ctx": 8192}} if shape == "llama-server" else None
    backend = connect(fake, fake.models[0], parallel=1)
    assert not [n for n in backend.notices if "hybrid" in n]


def test_awl_doctor_reports_the_server_and_the_same_notice(fake, tmp_path):
    fake.models = [HYBRID]
    fake.model_extra = {"max_model_len": 65536}
    args = ["doctor", "--backend", "openai", "--base-url", fake.base_url, "--api-model", HYBRID]
    result = awl(*args, "--json", home=tmp_path)
    assert result.returncode == 0, result.stderr
    server = json.loads(result.stdout)["server"]
    assert (server["kind"], server["context"], server["parallel"], server["hybrid"]) == ("vllm", 65536, 16, True)
    backend_notices = connect(fake, HYBRID).notices
    assert [n for n in server["notices"] if "hybrid" in n] == [n for n in backend_notices if "hybrid" in n]
    shown = awl(*args, home=tmp_path)
    assert shown.returncode == 0 and "whole conversation" in " ".join(shown.stdout.split())
    gone = awl("doctor", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--api-model", "x", "--json",
               home=tmp_path)
    assert gone.returncode == 0 and "Cannot reach the server" in json.loads(gone.stdout)["server"]["error"]


def test_awl_run_says_nothing_of_capacity_and_the_count_notice_once(answering, tmp_path):
    answering.reports_usage = False  # no counts at all: every turn's are awl's estimates
    answering.models = [HYBRID]
    answering.model_extra = {"max_model_len": 65536}
    out = tmp_path / "s.jsonl"
    result = awl("run", "--backend", "openai", "--base-url", answering.base_url, "--api-model", HYBRID, "--think",
                 "off", "--out", str(out), home=tmp_path, stdin="ls\npwd\nls -la\n")
    assert result.returncode == 0, result.stderr
    assert "turns at once" not in result.stderr and "decodes" not in result.stderr
    assert result.stderr.count("did not report every token count") == 1
    assert result.stderr.count("hybrid model") == 1  # said at connect, not each turn


def test_a_many_session_command_states_the_default_at_connect(answering, tmp_path):
    answering.model_extra = {"max_model_len": 65536}
    bench = tmp_path / "terminal_test.jsonl"
    row = {"task": "terminal", "id": "t", "turn_idx": 1, "total_turns": 1, "system_str": "You simulate a terminal.",
           "prompt": ["### Turn 1\n**Action:**\n```\nls\n```"], "response": ["**Environment Observation:**\nx"],
           "current_prompt": ""}
    bench.write_text(json.dumps(row) + "\n", encoding="utf-8")
    result = awl("bench", "predict", str(bench), "--backend", "openai", "--base-url", answering.base_url,
                 "--api-model", "world", "--out", str(tmp_path / "p.jsonl"), home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"vLLM batches many, so awl sends up to {BATCHING_SERVER_PARALLEL} turns at once" in " ".join(result.stderr.split())


def test_one_session_runs_through_the_unknown_server_without_the_capacity_notice(answering, tmp_path):
    result, _ = run_remote(answering.base_url, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "turns at once" not in result.stderr
