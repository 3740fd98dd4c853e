"""Re-simulating a benchmark row on the real llama.cpp path: the model's context is exactly
the official message list, rendered by the GGUF's own chat template."""

from __future__ import annotations

import json

import pytest

from agentworld_local.agentworldbench.resimulate import bench_world, resimulate
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.events import TurnFinished
from agentworld_local.agentworldbench.rows import parse_row
from tests.engine.test_append_only_context import independent_render
from tests.unit.test_agentworldbench import bench_job, official_messages


@pytest.fixture(scope="module")
def backend(qwen_gguf):
    engine = LlamaBackend(qwen_gguf, n_ctx=16384, gpu_layers=0)
    yield engine
    engine.close()


@pytest.mark.parametrize("domain", ["mcp", "android"])
def test_the_model_receives_the_official_messages(backend, qwen_gguf, domain):
    job = bench_job(domain, 3)
    job["response"][1] = "exit code 1"  # a response without the marker stays verbatim too
    row = parse_row(json.loads(json.dumps(job)), line=4, source="bench.jsonl")
    settings = SessionSettings(sampling=SamplingConfig(max_tokens=12), think=ThinkBudget.parse("4"), seed=1)
    backend.reset()
    world = bench_world(row, backend, settings)
    expected = backend.tokenize(independent_render(qwen_gguf, official_messages(job)))
    events = list(resimulate(world, row))
    record = events[-1].record if isinstance(events[-1], TurnFinished) else None
    assert record is not None
    assert backend.evaluated_tokens[: len(expected)] == expected
    assert record.tokens["prompt_total"] == len(expected)
    assert record.prompt == job["current_prompt"] and record.turn == 3
    assert [t.prompt for t in world.history[:2]] == job["prompt"][:2]
