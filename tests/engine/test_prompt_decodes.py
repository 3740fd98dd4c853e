"""Issue 27: a turn's prompt costs what llama-server's does, on the real llama.cpp path.

Every llama_decode a turn makes is watched (its tokens and the rows it asks logits for):
- a prompt chunk asks for no logits (the output row is a product over the whole vocabulary,
  262k rows on Gemma): only the decode a token is sampled after does, at its last row;
- after the known start the rest of the prompt goes in one decode on an attention-only model
  (its checkpoint is a position); a hybrid model splits once more, where its answer starts
  (the end of the generation prompt that the history drops: an empty think block), as
  llama-server stops 4 tokens before a prompt's end, so the next turn evaluates nothing the
  context holds (prefetched or not, the same chunks: tests/engine/test_prefetch.py holds the
  answers equal; tests/engine/test_turn_tokens.py counts what each turn evaluates).
"""

from __future__ import annotations

import contextlib

import llama_cpp
import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.world import World

SETTINGS = SessionSettings(sampling=SamplingConfig(temperature=0, max_tokens=6), think=ThinkBudget.parse("off"),
                           seed=1, system_prompt="You simulate a Linux terminal.", task="find why the build fails")


@contextlib.contextmanager
def watched_decodes():
    """(tokens, rows asking for logits) of each llama_decode while inside."""
    calls: list[tuple[int, list[int]]] = []
    original = llama_cpp.llama_decode

    def watch(ctx, batch):
        calls.append((batch.n_tokens, [i for i in range(batch.n_tokens) if batch.logits[i]]))
        return original(ctx, batch)

    llama_cpp.llama_decode = watch
    try:
        yield calls
    finally:
        llama_cpp.llama_decode = original


def prompt_decodes(calls: list[tuple[int, list[int]]], prompt_tokens: int) -> list[tuple[int, list[int]]]:
    """The decodes of a turn's prompt: those until the evaluated count is reached."""
    seen, out = 0, []
    for n, rows in calls:
        if seen >= prompt_tokens:
            break
        out.append((n, rows))
        seen += n
    return out


@pytest.mark.parametrize("fixture", ["qwen_gguf", "llama_gguf"])
def test_only_the_decode_sampled_after_asks_for_logits_and_the_action_goes_in_one_decode(fixture, request):
    hybrid = fixture == "qwen_gguf"
    backend = LlamaBackend(request.getfixturevalue(fixture), n_ctx=4096, gpu_layers=0, notice=lambda text: None)
    try:
        world = World(backend, get_domain("terminal"), SETTINGS)
        world.run_turn("ls -la")
        for action in ("cat README.md", "git status"):
            prefix = world.next_turn_prefix()
            with watched_decodes() as prefetched:
                known = backend.prefetch(prefix)
            assert known > 0 and prefetched
            # The prefetch samples nothing: none of its decodes computes a logits row.
            assert all(rows == [] for _, rows in prefetched)
            with watched_decodes() as calls:
                record = world.run_turn(action)
            evaluated = record.tokens["prompt_evaluated"]
            prompt = prompt_decodes(calls, evaluated)
            assert sum(n for n, _ in prompt) == evaluated
            # Logits at the prompt's last row only (the first answer token is sampled there).
            assert [rows for _, rows in prompt[:-1]] == [[] for _ in prompt[:-1]]
            assert prompt[-1][1] == [prompt[-1][0] - 1]
            # After the known start (prefetched) the action goes in one decode: no split at the
            # boundary; a hybrid model's last decode is the generation prompt's dropped end.
            if hybrid:
                assert [n for n, _ in prompt][1:] == [4]
                ended = backend._llm.detokenize(backend.evaluated_tokens[: record.tokens["prompt_total"] - 4], special=True)
                assert ended.decode().endswith("<|im_start|>assistant\n")
            else:
                assert len(prompt) == 1
    finally:
        backend.close()


@pytest.mark.parametrize("fixture", ["qwen_gguf", "llama_gguf"])
def test_a_cold_first_turn_splits_its_prompt_only_at_its_known_start(fixture, request):
    """n_batch chunks up to the known start, then the rest in one decode, as llama-server's one
    prompt would go but for that split (the state cache off); a hybrid model's also stops where
    its answer starts. An attention-only model's system prompt checkpoint is a position, not a
    split; a hybrid model's turn keeps its state where its answer starts and at its known start."""
    hybrid = fixture == "qwen_gguf"
    backend = LlamaBackend(request.getfixturevalue(fixture), n_ctx=4096, n_batch=64, gpu_layers=0, notice=lambda text: None)
    backend.checkpoint_system_prompt = not hybrid  # a system-prompt checkpoint is a position here
    try:
        world = World(backend, get_domain("terminal"), SETTINGS)
        known = len(backend._known_prefix(world.next_turn_prefix())[0])
        with watched_decodes() as calls:
            record = world.run_turn("ls -la")
        prompt = prompt_decodes(calls, record.tokens["prompt_evaluated"])
        sizes = [n for n, _ in prompt]
        expected = [64] * (known // 64) + ([known % 64] if known % 64 else [])
        total = record.tokens["prompt_total"]
        answer_start = total - 4  # `<think>\n\n</think>\n\n`: the history holds no empty think block
        if hybrid:
            expected.append(answer_start - known)
        assert sizes[:-1] == expected and sum(sizes) == total
        # The checkpoints are still where a restore goes: the system prompt's end kept, pinned;
        # a hybrid model's state where the action began and where the answer starts.
        kept = {c.n_tokens: c.state for c in backend.sequence.checkpoints}
        if hybrid:
            assert kept.get(known) and kept.get(answer_start) and not backend.sequence.pinned
        else:
            assert min(backend.sequence.pinned) in kept
    finally:
        backend.close()
