"""Prompt-lookup self-speculation on the real llama.cpp path: the same tokens as without it.

Each model runs the same turns with `speculate="off"` and `"on"`; the prompt repeats text so
the drafter fires, and every test asserts drafts were accepted (it cannot pass vacuously).
The hybrid fixture rolls rejected drafts back through its recurrent state; the attention-only
ones trim their KV cache. A second turn checks the context the first one left. (On a bigger
hybrid model a batch's recurrent state differs from the one-token recurrence in the last
digits, so a greedy answer can branch at a near-tie: docs/speculation.md. These fixtures and
prompts have none.)
"""

from __future__ import annotations

import codecs
import dataclasses
from pathlib import Path

import llama_cpp
import pytest

from agentworld_local.engine.llama import LlamaBackend, verify_width
from agentworld_local.engine.llama.speculation import MAX_DRAFT, DraftPacing, PromptLookup
from agentworld_local.models.offload_options import OffloadOptions
from agentworld_local.engine.types import GenerationDone, GenerationStats, SamplingConfig, ThinkBudget

FILE = "The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.\n"
MESSAGES = [
    {"role": "system", "content": "You simulate a terminal."},
    {"role": "user", "content": f"cat notes.txt\n{FILE * 3}\nShow notes.txt again."},
]
SECOND = {"role": "user", "content": f"cat notes.txt again\n{FILE}"}
GREEDY = SamplingConfig(temperature=0, max_tokens=40, repetition_guard=False, stop_at_observation=False)


def run_turns(backend: LlamaBackend, sampling: SamplingConfig, think: ThinkBudget, turns: int = 2) -> tuple[list[str], GenerationStats, list[int]]:
    """`turns` turns from an empty context: the raw answers, the summed draft counts, the context."""
    backend.reset()
    answers: list[str] = []
    total = GenerationStats()
    messages = list(MESSAGES)
    for _ in range(turns):
        done = [e for e in backend.generate(messages, sampling=sampling, think=think, seed=3) if isinstance(e, GenerationDone)][0]
        answers.append(done.raw_output)
        total.drafted += done.stats.drafted
        total.accepted += done.stats.accepted
        messages += [{"role": "assistant", "content": done.raw_output}, SECOND]
    return answers, total, backend.evaluated_tokens


def both(path: Path):
    return [LlamaBackend(path, n_ctx=2048, gpu_layers=0, offload=OffloadOptions(speculate=mode)) for mode in ("off", "on")]


@pytest.fixture(scope="module")
def llama_pair(llama_gguf):
    pair = both(llama_gguf)
    yield pair
    for backend in pair:
        backend.close()


@pytest.fixture(scope="module")
def qwen_pair(qwen_gguf):
    pair = both(qwen_gguf)
    yield pair
    for backend in pair:
        backend.close()


def assert_same(pair, sampling: SamplingConfig, think: ThinkBudget, turns: int = 2) -> GenerationStats:
    off, on = pair
    assert not off.speculate and on.speculate
    answers, stats, context = run_turns(off, sampling, think, turns)
    assert stats.drafted == 0
    answers_on, stats_on, context_on = run_turns(on, sampling, think, turns)
    assert answers_on == answers
    assert context_on == context  # what the next turn builds on: rejected drafts left nothing behind
    assert stats_on.accepted > 0  # the drafter fired and was right sometimes
    return stats_on


@pytest.mark.parametrize("max_tokens", [40, 7])
def test_greedy_answers_are_the_same_with_speculation_attention_only(llama_pair, max_tokens):
    # max_tokens 7: drafts are cut where the answer's length ends it.
    sampling = SamplingConfig(temperature=0, max_tokens=max_tokens, repetition_guard=False, stop_at_observation=False)
    assert_same(llama_pair, sampling, ThinkBudget.parse("off"))


@pytest.mark.parametrize("max_tokens", [40, 7])
@pytest.mark.parametrize("rollback", ["llama.cpp snapshots", "state copy"])
def test_greedy_answers_are_the_same_with_speculation_hybrid(qwen_pair, max_tokens, rollback, monkeypatch):
    # A rejected draft's recurrent state is dropped from llama.cpp's per-token snapshots
    # (n_rs_seq), or, where a build keeps none, restored from a copy taken before the batch.
    assert llama_cpp.llama_n_rs_seq(qwen_pair[1]._ctx) >= MAX_DRAFT
    if rollback == "state copy":
        monkeypatch.setattr(llama_cpp, "llama_n_rs_seq", lambda ctx: 0)
    sampling = SamplingConfig(temperature=0, max_tokens=max_tokens, repetition_guard=False, stop_at_observation=False)
    stats = assert_same(qwen_pair, sampling, ThinkBudget.parse("off"))
    if max_tokens == 40:
        assert stats.accepted < stats.drafted  # some drafts were rejected: the recurrent state was rolled back


@pytest.mark.parametrize("budget", ["3", "9"])
def test_a_draft_never_crosses_the_thinking_budget(qwen_pair, budget):
    # The qwen template opens <think>: the budget's forced end lands where it lands without drafts.
    sampling = SamplingConfig(temperature=0, max_tokens=30, repetition_guard=False, stop_at_observation=False)
    assert_same(qwen_pair, sampling, ThinkBudget.parse(budget))


def test_sampling_applies_the_sampler_at_every_drafted_position(llama_pair):
    # Temperature with top_k 1: the whole sampler chain (top-k, top-p, min-p, temperature, the
    # seeded draw) runs at each position and must pick what it picks without drafts.
    sampling = SamplingConfig(temperature=0.8, top_k=1, max_tokens=40, repetition_guard=False, stop_at_observation=False)
    assert_same(llama_pair, sampling, ThinkBudget.parse("off"))


def test_a_draft_stops_before_an_end_of_generation_token(llama_pair):
    backend = llama_pair[1]
    eog = backend._llm.token_eos()
    rules = _rules()
    assert backend._draft(backend.sequence, PromptLookup([5, 6, 9, eog, 7, 5]), 6, rules) == [9]
    assert backend._draft(backend.sequence, PromptLookup([5, 6, eog, 7, 5]), 6, rules) == []


def _rules():
    from agentworld_local.engine.answer_rules import AnswerRules

    return AnswerRules(think_open=False, think=ThinkBudget.parse("off"), sampling=GREEDY, stats=GenerationStats())



@pytest.mark.slow  # real weights: the fixtures' identity tests above run in the default tier
def test_greedy_answers_are_the_same_with_speculation_on_gemma(gemma_gguf):
    pair = both(gemma_gguf)
    try:
        # One turn (real weights on 2 CPU cores): Gemma copies the file, so drafts are accepted.
        sampling = SamplingConfig(temperature=0, max_tokens=24, repetition_guard=False, stop_at_observation=False)
        assert_same(pair, sampling, ThinkBudget.parse("off"), turns=1)
    finally:
        for backend in pair:
            backend.close()


@pytest.mark.parametrize("pair_name", ["llama_pair", pytest.param("qwen_pair", marks=pytest.mark.slow)])  # auto never drafts on hybrids
def test_a_rule_that_ends_the_turn_inside_a_verified_draft_drops_the_rest(pair_name, request, monkeypatch):
    # As a closed observation does: the turn ends at token N even when N lands inside a batch
    # of accepted draft tokens; the context must end there as it does without drafts.
    from agentworld_local.engine.llama import sample_loop as backend_module  # the token loop reads AnswerRules there

    class StopAt(backend_module.AnswerRules):
        def feed(self, text):
            events = super().feed(text)
            if self._stats.generated_tokens == stop_at:
                self.finish = "stop"
            return events

    monkeypatch.setattr(backend_module, "AnswerRules", StopAt)
    off, on = request.getfixturevalue(pair_name)
    verified: list[tuple[int, int]] = []  # (context length before, tokens accepted) of each verify
    verify = on._verify

    def spy(seq, sampler, batch, stats):
        before = len(seq.tokens)
        result = verify(seq, sampler, batch, stats)
        verified.append((before, len(result[0])))
        return result

    monkeypatch.setattr(on, "_verify", spy)
    sampling = SamplingConfig(temperature=0, max_tokens=200, repetition_guard=False, stop_at_observation=False)
    inside = 0
    for stop_at in range(60, 76):
        verified.clear()
        answers, _, context = run_turns(off, sampling, ThinkBudget.parse("off"), turns=1)
        answers_on, _, context_on = run_turns(on, sampling, ThinkBudget.parse("off"), turns=1)
        assert (answers_on, context_on) == (answers, context)
        inside += any(base < len(context_on) < base + accepted for base, accepted in verified)
    assert inside > 0  # some stops fell inside accepted drafts, whose tail was dropped


@pytest.mark.parametrize("fixture_name", ["llama_gguf", "qwen_gguf"])
def test_two_sessions_speculating_in_sequences_decoded_together_get_their_own_answers(fixture_name, request):
    # Verify batches, rollbacks (n_rs_seq per sequence) and drafts of two sessions at once
    # (sequences.py): each answer is the one a lone session gets without drafts.
    import threading

    path = request.getfixturevalue(fixture_name)
    sampling = SamplingConfig(temperature=0, max_tokens=60, repetition_guard=False, stop_at_observation=False)
    prompts = {"a": MESSAGES, "b": [MESSAGES[0], {"role": "user", "content": "ls -la /etc"}]}

    def answer(backend, key, out):
        done = [e for e in backend.generate(prompts[key], sampling=sampling, think=ThinkBudget.parse("off"), seed=3)
                if isinstance(e, GenerationDone)][0]
        out[key] = done

    alone: dict[str, GenerationDone] = {}
    single = LlamaBackend(path, n_ctx=2048, gpu_layers=0, offload=OffloadOptions(speculate="off"))
    try:
        for key in prompts:
            single.reset()
            answer(single, key, alone)
    finally:
        single.close()
    together: dict[str, GenerationDone] = {}
    multi = LlamaBackend(path, n_ctx=2048, gpu_layers=0, offload=OffloadOptions(speculate="on"), parallel=2)
    try:
        threads = [threading.Thread(target=answer, args=(multi.for_session(), key, together)) for key in prompts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        multi.close()
    assert {k: d.raw_output for k, d in together.items()} == {k: d.raw_output for k, d in alone.items()}
    assert all(d.stats.drafted > 0 for d in together.values())  # both verified drafts in the shared batches
    assert sum(d.stats.accepted for d in together.values()) > 0


def test_auto_drafts_for_attention_only_models_with_the_same_answers_and_not_for_hybrid_ones(llama_pair, llama_gguf, qwen_gguf):
    """`--speculate auto` (the default): on where it pays with identical tokens (issue 27),
    pausing after a run of misses; off for hybrid models (their batch arithmetic differs)."""
    off, on = llama_pair
    auto = LlamaBackend(llama_gguf, n_ctx=2048, gpu_layers=0, offload=OffloadOptions(speculate="auto"))
    hybrid = LlamaBackend(qwen_gguf, n_ctx=2048, gpu_layers=0, offload=OffloadOptions(speculate="auto"))
    try:
        # auto drafts exactly where its probe found batches computing like one-token decodes:
        # a build whose kernels group even 2 rows otherwise (this project's own build on one CPU
        # did) must not draft at all (tests/engine/test_drafting_identity.py fixes the width).
        assert auto.speculate == (auto.verify_width > 1) and not hybrid.speculate
        assert auto.draft_patience is not None
        answers, _, context = run_turns(off, GREEDY, ThinkBudget.parse("off"))
        answers_auto, stats_auto, context_auto = run_turns(auto, GREEDY, ThinkBudget.parse("off"))
        _, stats_on, _ = run_turns(on, GREEDY, ThinkBudget.parse("off"))
        assert (answers_auto, context_auto) == (answers, context)
        assert stats_auto.drafted <= stats_on.drafted
        assert (stats_auto.accepted > 0) == auto.speculate
    finally:
        auto.close()
        hybrid.close()


def test_a_sessions_turns_share_their_drafting_pace_and_another_session_starts_afresh(llama_gguf, monkeypatch):
    """`--speculate auto` pauses after runs of misses; the pause and the run outlast a turn (the
    sequence keeps them), and a session lent the slot next does not inherit them."""
    from agentworld_local.engine.llama import sample_loop

    paces = []
    real = sample_loop.PromptLookup

    def recording(*args, **options):
        lookup = real(*args, **options)
        paces.append((lookup.pacing, dataclasses.replace(lookup.pacing)))  # the object, and what it held then
        return lookup

    monkeypatch.setattr(sample_loop, "PromptLookup", recording)
    # The pace is auto's, whatever width this build's probe finds (none on some): say it found 3.
    monkeypatch.setattr(verify_width, "exact_width", lambda *args, **options: 3)
    model = LlamaBackend(llama_gguf, n_ctx=2048, gpu_layers=0, offload=OffloadOptions(speculate="auto"))
    try:
        first, second = model.for_session(), model.for_session()
        for view in (first, first, second):
            for _ in view.generate(MESSAGES, sampling=GREEDY, think=ThinkBudget.parse("off"), seed=3):
                pass
        (one, _), (again, _), (other, at_start) = paces
        assert one is again and other is not one
        assert at_start == DraftPacing()  # nothing carried over from the first session's turns
        model.reset()  # the backend's own caller takes the slot...
        model.sequence.pacing.misses = 2
        model.reset()  # ... and each reset of it is a new session too
        assert model.sequence.pacing == DraftPacing()
    finally:
        model.close()


@pytest.mark.parametrize("speculate", ["off", "on"])
def test_the_first_token_streams_before_any_decode_after_the_prompt(llama_gguf, speculate):
    """Issue 27: a sampled token's text goes out before its own decode (and a draft's verify):
    the reader's first token waits for the prompt alone, not for one more decode."""
    backend = LlamaBackend(llama_gguf, n_ctx=2048, gpu_layers=0, offload=OffloadOptions(speculate=speculate))
    decoded: list[int] = []
    run = backend._batcher._run

    def counted(parts):
        decoded.append(sum(count for _, _, count in parts))
        return run(parts)

    backend._batcher._run = counted
    try:
        messages = [{"role": "user", "content": "say ok ok ok ok ok ok ok ok"}]
        sampling = SamplingConfig(temperature=0, max_tokens=12, stop_at_observation=False, repetition_guard=False)
        before_first = None
        for event in backend.generate(messages, sampling=sampling, think=ThinkBudget.parse("off"), seed=1):
            if before_first is None and not isinstance(event, GenerationDone):
                before_first = sum(decoded)
            if isinstance(event, GenerationDone):
                done = event
        assert done.stats.generated_tokens > 1
        # Tokens before the first that completes a character (random weights write byte pieces).
        answer = backend.evaluated_tokens[done.stats.prompt_tokens_total:]
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        silent = next(i for i, token in enumerate(answer) if decoder.decode(backend._llm.detokenize([token], special=True)))
        # The prompt's decodes and those of the silent tokens: not the decode of the one shown.
        assert before_first == done.stats.prompt_tokens_evaluated + silent
    finally:
        del backend._batcher._run
        backend.close()
