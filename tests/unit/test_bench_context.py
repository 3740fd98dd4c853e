"""The context a benchmark run loads: sized for its longest row plus the generation room, at
most what the model and the machine take; prompts counted before the load with the GGUF's
own vocabulary, exactly as the loaded backend counts them."""

from __future__ import annotations

import json

import pytest

from agentworld_local.agentworldbench.context import choose_ctx, tokens_needed, unfit_reason
from agentworld_local.agentworldbench.predict import BENCH_SAMPLING, BENCH_THINK
from agentworld_local.agentworldbench.rows import bench_messages, parse_row
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.llama.vocab import PromptCounter
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.models.hardware import Hardware
from agentworld_local.engine.loading import ctx_ceiling
from tests.cli.helpers import awl
from tests.unit.test_agentworldbench import DOMAINS, bench_job

MiB = 1024**2


def test_a_row_fits_when_its_prompt_the_generation_room_and_the_slack_fit():
    needed = tokens_needed(1000, BENCH_SAMPLING, BENCH_THINK)
    assert needed == 1000 + 32768 + 8
    assert unfit_reason(1000, needed, BENCH_SAMPLING, BENCH_THINK) is None
    reason = unfit_reason(1000, needed - 1, BENCH_SAMPLING, BENCH_THINK)
    assert reason == ("the prompt takes 1,000 tokens and the generation up to 32,768: 33,776 in all, "
                      "more than the 33,775-token context")
    # A session-style budget: thinking, the forced end of thinking and the answer.
    budget = tokens_needed(1000, SamplingConfig(max_tokens=100), ThinkBudget.parse("50"))
    assert budget == 1000 + 50 + 8 + 100 + 8


def test_the_context_is_the_longest_row_plus_the_generation_room_within_the_ceiling():
    choice = choose_ctx(7180, BENCH_SAMPLING, BENCH_THINK, ceiling=262144, ceiling_reason="what it was trained for")
    assert choice.n_ctx == 40960 and choice.n_ctx >= tokens_needed(7180, BENCH_SAMPLING, BENCH_THINK)
    assert choice.reason == "the longest selected row's prompt (7,180 tokens) and 32,768 tokens of generation fit"
    capped = choose_ctx(7180, BENCH_SAMPLING, BENCH_THINK, ceiling=32768, ceiling_reason="what this machine's free memory holds")
    assert capped.n_ctx == 32768
    assert capped.reason.endswith("need 39,956; 32,768 is what this machine's free memory holds, so rows that do not "
                                  "fit are failed, as the official run fails them")
    assert choose_ctx(10, SamplingConfig(max_tokens=16), ThinkBudget.parse("off"), ceiling=None, ceiling_reason="").n_ctx == 2048


def test_the_ceiling_is_the_trained_context_or_what_free_memory_holds(qwen_gguf):
    roomy = Hardware(ram_total=64 * 1024 * MiB, ram_available=60 * 1024 * MiB, cpu_threads=8, cpu_cores=4)
    assert ctx_ceiling(str(qwen_gguf), hardware=roomy) == (65536, f"what {qwen_gguf.name} was trained for")
    tight = Hardware(ram_total=64 * MiB, ram_available=48 * MiB, cpu_threads=8, cpu_cores=4)
    ceiling, why = ctx_ceiling(str(qwen_gguf), hardware=tight)
    assert ceiling is not None and ceiling < 65536 and why == "what this machine's free memory holds"
    assert ctx_ceiling("scripted:answers.json") == (None, "")


@pytest.mark.parametrize("think", ["full", "off"])
def test_prompts_are_counted_before_the_load_as_the_loaded_model_counts_them(qwen_gguf, think):
    counter = PromptCounter(qwen_gguf)
    backend = LlamaBackend(qwen_gguf, n_ctx=2048, gpu_layers=0, notice=lambda text: None)
    try:
        for domain in sorted(DOMAINS):
            messages = bench_messages(parse_row(bench_job(domain, 3), line=1, source="rows.jsonl"))
            assert counter.count_tokens(messages, ThinkBudget.parse(think)) == backend.count_tokens(messages, ThinkBudget.parse(think))
    finally:
        counter.close()
        backend.close()


def test_bench_predict_says_the_context_it_chose_and_fails_rows_beyond_the_models(tmp_path, qwen_gguf, llama_gguf):
    bench = tmp_path / "bench_test.jsonl"
    bench.write_text("".join(json.dumps(bench_job("terminal", n)) + "\n" for n in (1, 2)), encoding="utf-8")
    sized = awl("bench", "predict", str(bench), "-m", str(qwen_gguf), "-o", str(tmp_path / "a.jsonl"), "--think", "off",
                "--max-tokens", "16", "--json", home=tmp_path)
    assert sized.returncode == 0, sized.stderr
    rows = [json.loads(line) for line in sized.stdout.splitlines()][:-1]
    longest = max(row["tokens"]["prompt_total"] for row in rows)
    assert f"the longest selected row's prompt ({longest:,} tokens) and 16 tokens of generation fit" in sized.stderr
    # The plain llama fixture was trained for 4,096 tokens: the official 32,768 cannot fit, so every row fails as it
    # would, and a run in which every row failed says so and exits 1.
    capped = awl("bench", "predict", str(bench), "-m", str(llama_gguf), "-o", str(tmp_path / "b.jsonl"), "--json", home=tmp_path)
    assert capped.returncode == 1, capped.stderr
    assert "every row of this run failed" in capped.stderr
    assert f"4,096 is what {llama_gguf.name} was trained for" in capped.stderr
    assert json.loads(capped.stdout.splitlines()[-1])["unfit"] == [1, 2]
