"""The performance core on the real llama.cpp path (tiny hybrid `qwen35moe` fixture).

(a) a late turn evaluates only its new tokens, (b) the incremental token list equals the
tokenization of the whole conversation as the model's template renders it, at every turn,
(c) undo / fork then re-running a turn with the same seed reproduces the observation.
"""

from __future__ import annotations

import gguf
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from agentworld_local.domains import get_domain
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World

ACTIONS = ["ls -la", "cd src", "cat main.py", "python main.py", "C-c", "git status", "git diff", "pwd", "ls", "echo done"]
# Tokens the engine may evaluate beyond the strictly new ones (none: tests/engine/test_turn_tokens.py).
SMALL_CONSTANT = 0


@pytest.fixture(scope="module")
def backend(qwen_gguf):
    engine = LlamaBackend(qwen_gguf, n_ctx=16384, gpu_layers=0)
    yield engine
    engine.close()


def make_world(backend, *, think="6", seed=7, max_tokens=24) -> World:
    backend.reset()
    settings = SessionSettings(
        sampling=SamplingConfig(temperature=0.8, max_tokens=max_tokens), think=ThinkBudget.parse(think), seed=seed
    )
    return World(backend, get_domain("terminal"), settings)


def independent_render(gguf_path, messages, *, enable_thinking=True, add_generation_prompt=True) -> str:
    """Render with the template read straight from the file, not through the engine."""
    reader = gguf.GGUFReader(gguf_path)
    field = reader.fields["tokenizer.chat_template"]
    source = bytes(field.parts[field.data[0]]).decode("utf-8")
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(source).render(
        messages=messages, add_generation_prompt=add_generation_prompt, enable_thinking=enable_thinking, bos_token="", eos_token=""
    )


def test_backend_reports_the_hybrid_model(backend):
    assert backend.info.architecture == "qwen35moe"
    assert backend.is_stateful, "the fixture must exercise the recurrent-state checkpoints"
    assert backend.info.chat_template_source == "gguf"


def test_each_turn_evaluates_only_new_tokens_and_matches_the_template(backend, qwen_gguf):
    world = make_world(backend)
    previous_base = 0
    for number, action in enumerate(ACTIONS, start=1):
        prompt = world.turn_prompt(world.domain.parse_action(action))
        messages = world.messages_for(prompt)
        expected = backend.tokenize(independent_render(qwen_gguf, messages))
        record = world.run_turn(action)
        assert record is not None
        # (b) the context holds exactly the full conversation's tokens, then the generated ones.
        assert backend.evaluated_tokens[: len(expected)] == expected, f"turn {number}"
        assert record.tokens["prompt_total"] == len(expected)
        # (a) only what is new since the last turn's checkpoint was evaluated: on this hybrid
        # model, where the last turn's answer began (after `<|im_start|>assistant\n`: the history
        # keeps no think block), past its boundary; nothing the context held is read again.
        new_tokens = len(expected) - previous_base
        assert record.tokens["prompt_evaluated"] <= new_tokens + SMALL_CONSTANT, f"turn {number}"
        base_text = backend.template.render(messages, add_generation_prompt=False)
        turn_checkpoint = backend.sequence.checkpoints[-1]
        previous_base = turn_checkpoint.n_tokens
        assert turn_checkpoint.state and len(backend.tokenize(base_text)) < previous_base < len(expected)
        opened = backend._llm.detokenize(expected[:previous_base], special=True).decode()
        assert opened.endswith("<|im_start|>assistant\n")
    last = world.history[-1].tokens
    assert last["prompt_evaluated"] * 5 < last["prompt_total"], "turn 10 must not re-evaluate the history"


def test_history_drops_thinking_and_keeps_observations(backend):
    world = make_world(backend, think="4")
    first = world.run_turn("ls")
    assert first.tokens["thinking"] == 4 and "</think>" in first.raw_output
    messages = world.messages_for("### Turn 2\n\n**Action:**\npwd")
    rendered = backend.template.render(messages, add_generation_prompt=True)
    assert first.raw_output not in rendered
    assert f"**Environment Observation:**\n{first.observation}".strip() in rendered


def test_undo_then_rerun_reproduces_the_turn(backend):
    world = make_world(backend)
    records = [world.run_turn(action) for action in ACTIONS[:5]]
    world.undo(to_turn=3)
    assert len(world.history) == 3
    # Take another path first, so the context no longer holds turn 4 at all.
    other = world.run_turn("rm -rf build")
    assert other.parent == records[2].id and other.id == 6  # ids keep growing: the file is append-only
    world.undo()
    again = world.run_turn(ACTIONS[3])
    assert again.raw_output == records[3].raw_output
    assert again.observation == records[3].observation
    # Two turns back, turn 4's known-start checkpoint was gone (the newest turn's alone stays):
    # "rm -rf build" restored where turn 3's answer began, evaluated turn 4's start again and
    # checkpointed it on the way; the rerun restored that and evaluated only the action and
    # what follows.
    beyond_action = lambda record: record.tokens["prompt_evaluated"] - len(backend.tokenize(record.prompt))  # noqa: E731
    assert beyond_action(again) <= 0 < beyond_action(other)
    assert again.tokens["prompt_evaluated"] < records[3].tokens["prompt_evaluated"]
    assert again.tokens["prompt_evaluated"] * 5 < again.tokens["prompt_total"]


def test_fork_continues_from_the_same_point(backend):
    world = make_world(backend, seed=11)
    records = [world.run_turn(action) for action in ACTIONS[:4]]
    child = world.fork(2)
    assert [r.observation for r in child.history] == [r.observation for r in records[:2]]
    rerun = child.run_turn(ACTIONS[2])
    assert rerun.raw_output == records[2].raw_output


def test_think_off_opens_the_answer_with_an_empty_think_block(backend):
    world = make_world(backend, think="off")
    record = world.run_turn("ls")
    assert record.tokens["thinking"] == 0 and record.thinking == ""
    _, full = backend.render(world.messages_for(record.prompt), think=ThinkBudget.parse("off"))
    assert full.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_different_seeds_give_different_output(backend):
    first = make_world(backend, seed=1).run_turn("ls")
    second = make_world(backend, seed=2).run_turn("ls")
    assert first.raw_output != second.raw_output


@pytest.mark.slow  # a capacity test: 11 turns past a checkpoint budget (the slow tier)
def test_checkpoints_stay_within_their_memory_budget_and_undo_still_works(backend):
    world = make_world(backend, seed=5)
    records = [world.run_turn(action) for action in ACTIONS[:8]]
    state_size = len(backend.sequence.checkpoints[-1].state)
    backend.checkpoint_budget = state_size * 5  # room for five turns of state
    try:
        more = [world.run_turn(action) for action in ACTIONS[8:]]
        assert backend.checkpoint_bytes() <= backend.checkpoint_budget
        # Undo to a turn whose checkpoint was thinned: the same prompt, re-read from an older
        # checkpoint. Not bit-identical: evaluated in other batches than the first time, the
        # logits move in their last bits on the CPU (and a sample may follow them).
        world.undo(to_turn=3)
        again = world.run_turn(ACTIONS[3])
        assert again.prompt == records[3].prompt and again.finish in ("stop", "length")
        assert again.tokens["prompt_evaluated"] > records[3].tokens["prompt_evaluated"]
        # Recent turns kept their checkpoints.
        assert more[-1].tokens["prompt_evaluated"] < more[-1].tokens["prompt_total"] // 5
    finally:
        backend.checkpoint_budget = LlamaBackend.checkpoint_budget


def test_a_lone_surrogate_in_a_prompt_reaches_the_model_as_a_replacement_character(backend):
    """Damaged input (a lone surrogate) used to raise UnicodeEncodeError inside tokenize."""
    assert backend.tokenize("ls caf\udce9") == backend.tokenize("ls caf\ufffd")
