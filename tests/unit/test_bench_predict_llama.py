"""`awl bench predict` on the real llama.cpp path (the tiny hybrid `qwen35moe` fixture):
consecutive rows of one trajectory reuse the context, so each evaluates only its new tokens.

The expected counts come from the GGUF's own template, rendered here independently: row k+1
of a trajectory starts with row k's conversation, and evaluates exactly its prompt's tokens
after row k's checkpoint, which a hybrid model keeps where row k's answer begins (its prompt
less the generation prompt's end that the history does not keep: an open think block).
"""

from __future__ import annotations

import json

import pytest

from agentworld_local.agentworldbench.predict import predict_rows
from agentworld_local.agentworldbench.predictions import PredictionsFile, RunSettings
from agentworld_local.agentworldbench.rows import bench_messages, read_bench_rows
from agentworld_local.agentworldbench.selection import lines_of, work_order
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from tests.engine.test_append_only_context import independent_render
from tests.unit.test_agentworldbench import bench_job

SETTINGS = RunSettings("tiny", SamplingConfig(max_tokens=8), ThinkBudget.parse("4"), 3)


@pytest.fixture(scope="module")
def backend(qwen_gguf):
    engine = LlamaBackend(qwen_gguf, n_ctx=8192, gpu_layers=0)
    yield engine
    engine.close()


def predict_file(tmp_path, backend, jobs):
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps(job) + "\n" for job in jobs), encoding="utf-8")
    rows = read_bench_rows(bench)
    out = PredictionsFile.open(tmp_path / "predictions.jsonl", lines_of(rows), SETTINGS, source=bench)
    backend.reset()
    try:
        return list(predict_rows(work_order(rows), backend, SETTINGS, out))
    finally:
        out.close()


def test_each_later_turn_of_a_trajectory_evaluates_only_its_new_tokens(tmp_path, backend, qwen_gguf):
    # Shuffled on purpose: the work order puts each trajectory's rows together, by turn.
    jobs = [bench_job("terminal", 3), bench_job("mcp", 1), bench_job("terminal", 1), bench_job("mcp", 3),
            bench_job("terminal", 2), bench_job("mcp", 2)]
    checkpoints = {}  # each row's checkpoint, recorded as it is made
    original = backend._generate

    def recorded(seq, messages, **settings):
        yield from original(seq, messages, **settings)
        checkpoints[len(checkpoints)] = seq.checkpoints[-1].n_tokens

    backend._generate = recorded
    try:
        events = predict_file(tmp_path, backend, jobs)
    finally:
        del backend._generate
    assert [(e.row.domain, e.row.turn_idx) for e in events] == [("terminal", 1), ("terminal", 2), ("terminal", 3),
                                                                 ("mcp", 1), ("mcp", 2), ("mcp", 3)]
    for index, event in enumerate(events):
        messages = bench_messages(event.row)
        tokens = event.side["tokens"]
        assert tokens["prompt_total"] == len(backend.tokenize(independent_render(qwen_gguf, messages, add_generation_prompt=True)))
        # The row's checkpoint lies past the turn boundary, where its answer begins.
        text = independent_render(qwen_gguf, messages, add_generation_prompt=False)
        assert len(backend.tokenize(text)) < checkpoints[index] < tokens["prompt_total"]
        prompt = backend.tokenize(independent_render(qwen_gguf, messages, add_generation_prompt=True))
        assert backend._llm.detokenize(prompt[: checkpoints[index]], special=True).decode().endswith("<|im_start|>assistant\n")
        if event.row.turn_idx == 1:
            assert tokens["prompt_evaluated"] == tokens["prompt_total"], "a new system prompt: from scratch"
        else:
            assert tokens["prompt_evaluated"] == tokens["prompt_total"] - checkpoints[index - 1]
    evaluated = sum(e.side["tokens"]["prompt_evaluated"] for e in events)
    from_scratch = sum(e.side["tokens"]["prompt_total"] for e in events)
    assert evaluated < from_scratch * 0.7
    lines = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    # Recorded per row; the file is in the input's order, the events in the work order.
    assert [line["awl_predict"]["line"] for line in lines] == sorted(e.row.line for e in events)
    assert {line["awl_predict"]["line"]: line["awl_predict"]["tokens"] for line in lines} == {e.row.line: e.side["tokens"] for e in events}



def test_trajectories_with_the_same_system_prompt_share_its_evaluation(tmp_path, backend, qwen_gguf):
    """The backend keeps a checkpoint where the system message ends (bench predict turns it on):
    the next trajectory with that system prompt evaluates only from its first user message on."""
    tools = [{"name": f"tool_{n}", "description": f"Reads record {n} of the store.",
              "input_schema": {"type": "object", "properties": {"key": {"type": "string"}}}} for n in range(12)]
    system = "You simulate an MCP server. Its tools:\n" + json.dumps(tools, indent=2)
    jobs = []
    for trajectory in (1, 2, 3):  # each its own first turn, as benchmark trajectories have
        prompts = bench_job("mcp", 1)["prompt"]
        prompts = [prompts[0].replace("**Task Instruction:**\n", f"**Task Instruction:**\nCase {trajectory}: "), *prompts[1:]]
        jobs += [bench_job("mcp", turn, id=trajectory, system_str=system, prompt=prompts) for turn in (1, 2)]
    assert len(backend.tokenize(system)) > 300, "a system prompt worth sharing (tool definitions)"
    events = predict_file(tmp_path, backend, jobs)
    assert [(e.row.id, e.row.turn_idx) for e in events] == [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1), (3, 2)]
    # The fixture's template follows the Qwen3.5 rules: the system message, then the user message's opening.
    shared = len(backend.tokenize(f"<|im_start|>system\n{system.strip()}<|im_end|>\n<|im_start|>user\n"))
    first_rows = [e.side["tokens"] for e in events if e.row.turn_idx == 1]
    assert first_rows[0]["prompt_evaluated"] == first_rows[0]["prompt_total"], "the first one: from scratch"
    for tokens in first_rows[1:]:
        assert tokens["prompt_evaluated"] == tokens["prompt_total"] - shared
    assert independent_render(qwen_gguf, bench_messages(events[2].row)).startswith(
        f"<|im_start|>system\n{system.strip()}<|im_end|>\n<|im_start|>user\n")
