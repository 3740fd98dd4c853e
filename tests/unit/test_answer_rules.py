"""When a generation ends, as SamplingConfig asks (engine/answer_rules.py), on the answer path:
the scripted backend streams realistic raw answers one chunk per token.

Interactive sessions keep their rules (answer-only `max_tokens`, stop at the first closed
observation block, the repetition guard); the benchmark commands turn each one around, as
the official evaluation generates: every new token counts, the model writes to the end of
its turn, and nothing cuts a repetitive thinking short.
"""

from __future__ import annotations

import pytest

from agentworld_local.agentworldbench.predict import BENCH_SAMPLING
from agentworld_local.contract.parse import parse_output
from agentworld_local.engine.answer_rules import AnswerRules
from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend
from agentworld_local.engine.types import GenerationDone, GenerationStats, SamplingConfig, ThinkBudget

TWO_BLOCKS = (
    "<think>\nThe agent ran ls; draft first, then the real screen.\n</think>\n\n"
    "<predicted_observation>\ndraft\n</predicted_observation>\n"
    "<predicted_observation>\nmain.py  tests\nroot@box:/app# \n</predicted_observation>"
)
LOOPING_THINKING = "<think>\n" + "ok. " * 400 + "\n</think>\n<predicted_observation>\ndone\n</predicted_observation>"


def generate(raw: str, sampling: SamplingConfig, *, think: str = "full", chunk: int = 1) -> GenerationDone:
    backend = ScriptedBackend([ScriptedAnswer(raw, chunk=chunk)], n_ctx=262144)
    events = list(backend.generate([{"role": "user", "content": "ls"}], sampling=sampling, think=ThinkBudget.parse(think), seed=0))
    done = events[-1]
    assert isinstance(done, GenerationDone)
    return done


def test_the_interactive_defaults_are_unchanged():
    sampling = SamplingConfig()
    assert (sampling.max_tokens_counts_thinking, sampling.stop_at_observation, sampling.repetition_guard) == (False, True, True)


def test_a_session_stops_at_the_first_block_the_benchmark_writes_to_the_end():
    session = generate(TWO_BLOCKS, SamplingConfig())
    assert session.stats.finish == "stop" and "main.py" not in session.raw_output
    bench = generate(TWO_BLOCKS, BENCH_SAMPLING)
    assert bench.stats.finish == "stop" and bench.raw_output.endswith("root@box:/app# \n</predicted_observation>")
    # What the scorer reads is the last block: only the benchmark run has it.
    assert parse_output(bench.raw_output, think_open=bench.think_open).observation == "main.py  tests\nroot@box:/app# "
    assert parse_output(session.raw_output, think_open=session.think_open).observation == "draft"


@pytest.mark.parametrize("chunk", [1, 3, 7])
def test_max_tokens_counts_thinking_and_answer_when_asked(chunk):
    raw = "<think>\n" + " ".join(f"step {n}." for n in range(150)) + "\n</think>\n<predicted_observation>\nx\n</predicted_observation>"
    counted = generate(raw, SamplingConfig(max_tokens=20, max_tokens_counts_thinking=True, stop_at_observation=False), chunk=chunk)
    assert counted.stats.finish == "length" and counted.stats.generated_tokens == 20
    assert counted.stats.thinking_tokens == 20, "the limit fell inside thinking"
    answer_only = generate(raw, SamplingConfig(max_tokens=60), chunk=chunk)  # the answer is under 60 chunks
    assert answer_only.stats.finish == "stop" and answer_only.stats.generated_tokens > 60, "thinking is not counted"


def test_answer_only_max_tokens_still_ends_a_long_answer():
    raw = "<think>\nshort\n</think>\n<predicted_observation>\n" + "line\n" * 100
    done = generate(raw, SamplingConfig(max_tokens=10), chunk=2)
    assert done.stats.finish == "length" and done.stats.generated_tokens - done.stats.thinking_tokens == 10


def test_the_repetition_guard_can_be_turned_off():
    guarded = generate(LOOPING_THINKING, SamplingConfig(), chunk=2)
    assert guarded.stats.finish == "repetition" and "<predicted_observation>" not in guarded.raw_output
    free = generate(LOOPING_THINKING, BENCH_SAMPLING, chunk=2)
    assert free.stats.finish == "stop" and free.raw_output.endswith("done\n</predicted_observation>")


def test_the_benchmark_sampling_is_the_official_evaluations():
    assert BENCH_SAMPLING.temperature == 0.6 and BENCH_SAMPLING.max_tokens == 32768
    assert BENCH_SAMPLING.max_tokens_counts_thinking and not BENCH_SAMPLING.stop_at_observation
    assert not BENCH_SAMPLING.repetition_guard


def test_a_saved_header_keeps_the_rules_and_refuses_one_that_is_not_true_or_false():
    from agentworld_local.errors import TrajectoryError
    from agentworld_local.session.sampling import saved_settings

    sampling, _ = saved_settings(BENCH_SAMPLING.to_dict(), "full")
    assert sampling == BENCH_SAMPLING, "a benchmark session resumes with its own rules"
    with pytest.raises(TrajectoryError, match=r"`sampling.stop_at_observation` 'yes' is not true or false"):
        saved_settings({**BENCH_SAMPLING.to_dict(), "stop_at_observation": "yes"}, "full")


@pytest.mark.parametrize(("think", "counts_thinking", "pieces", "expected"), [
    ("4", False, ["a"], 3),            # thinking: the budget's forced end is 3 tokens away
    ("4", True, ["a"], 3),             # the budget comes before max_tokens 6
    ("full", True, ["a", "b"], 4),     # no budget: every token counts towards max_tokens 6
    ("full", False, ["a"], None),      # thinking without a budget, answer-only max_tokens: no bound yet
    ("full", False, ["a", "</think>", "b"], 5),  # the answer has 5 of its 6 left
])
def test_tokens_left_says_when_the_next_rule_fires(think, counts_thinking, pieces, expected):
    # A verified draft (engine/llama/speculation) feeds no more than this, so it never crosses
    # the thinking budget's forced end nor max_tokens.
    sampling = SamplingConfig(max_tokens=6, max_tokens_counts_thinking=counts_thinking, repetition_guard=False)
    rules = AnswerRules(think_open=True, think=ThinkBudget.parse(think), sampling=sampling, stats=GenerationStats())
    for piece in pieces:
        rules.feed(piece)
    assert rules.tokens_left() == expected
    if expected is not None:  # feeding exactly that many more fires the rule on the last one
        for _ in range(expected):
            assert not (rules.finish or rules.budget_spent)
            rules.feed("x")
        assert rules.finish or rules.budget_spent
