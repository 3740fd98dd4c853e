"""Issue 43: a hybrid session evaluates no token twice, prefetched or not.

On the tiny hybrid `qwen35moe` fixture (its recurrent state can be set back only from a copy),
every prompt token a session decodes is counted. A turn whose action comes at once (RL: no prefetch
between turns) evaluates exactly the tokens of its prompt that the context does not hold
already (the previous answer's history form, the new turn's message): nothing the context held
is read again, the previous action included. With the known start prefetched between turns,
the prefetch and the turn together evaluate the same tokens, and every answer is the same
byte for byte, whole prefetch, part of one or none (the design notes' decision). An undo to an
earlier turn, then the same action again, evaluates only the generation prompt's end the
history does not keep (an empty think block).
"""

from __future__ import annotations

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.llama.prefix_tokens import shared_length
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.world import World
from tests.engine.test_prefetch import CancelAfter

ACTIONS = ["ls -la", "cd src", "cat main.py", "python main.py", "git status", "pwd", "make test", "git diff"]


def settings(think: str) -> SessionSettings:
    return SessionSettings(sampling=SamplingConfig(temperature=0.8, max_tokens=10), think=ThinkBudget.parse(think),
                           seed=5, system_prompt="You simulate a Linux terminal.", task="find why the build fails")


@pytest.fixture(scope="module")
def backend(qwen_gguf):
    engine = LlamaBackend(qwen_gguf, n_ctx=8192, gpu_layers=0, threads=1, notice=lambda text: None)
    engine.n_batch = 64  # several chunks a turn, so where a prefetch stops matters
    engine.decoded = []  # the tokens of each llama_decode a prompt's evaluation made
    evaluate, decode = engine._evaluate, engine._decode
    inside = []

    def evaluating(*args, **options):
        inside.append(True)
        try:
            return evaluate(*args, **options)
        finally:
            inside.pop()

    def decoding(seq, tokens, **options):
        if inside:
            engine.decoded.append(len(tokens))
        return decode(seq, tokens, **options)

    engine._evaluate, engine._decode = evaluating, decoding
    yield engine
    engine.close()


def play(backend: LlamaBackend, think: str, prefetch: str) -> list[dict]:
    """A session; before each turn its known start prefetched whole, in part, or not at all.
    Per turn: the raw answer, the prompt tokens evaluated (prefetch and turn, as counted) and
    decoded, and the prompt tokens the context did not hold when the turn began."""
    backend.reset()
    world = World(backend, get_domain("terminal"), settings(think))
    turns = []
    for number, action in enumerate(ACTIONS):
        held = backend.evaluated_tokens  # what the last turn left: its prompt and its answer
        del backend.decoded[:]
        before = 0
        if prefetch == "whole":
            before = world.backend.prefetch(world.next_turn_prefix())  # the session's place, as the runner's
        elif prefetch == "part":
            before = world.backend.prefetch(world.next_turn_prefix(), cancel=CancelAfter(number % 2))
        record = world.run_turn(action)
        prompt = backend.evaluated_tokens[: record.tokens["prompt_total"]]
        turns.append({"raw": record.raw_output, "evaluated": before + record.tokens["prompt_evaluated"],
                      "decoded": sum(backend.decoded), "new": len(prompt) - shared_length(held, prompt),
                      "world": world})
    return turns


@pytest.mark.parametrize("think", ["off", "4"])
def test_each_turn_evaluates_only_the_tokens_the_context_does_not_hold(backend, think):
    turns = play(backend, think, "none")
    assert turns[0]["evaluated"] == turns[0]["new"] > 0  # turn 1: all of it
    for number, turn in enumerate(turns, start=1):
        # Counted by the turn, and by llama_decode: the same tokens, those the context lacked.
        assert turn["evaluated"] == turn["decoded"] == turn["new"], f"turn {number}"
    # A later turn reads the last answer's history form and its own message, not the history.
    assert max(turn["new"] for turn in turns[1:]) * 4 < len(backend.evaluated_tokens)


@pytest.mark.parametrize("think", ["off", "4"])
def test_answers_are_the_same_prefetched_whole_in_part_or_not_and_so_are_the_tokens(backend, think):
    plain = play(backend, think, "none")
    for mode in ("whole", "part"):
        other = play(backend, think, mode)
        assert [turn["raw"] for turn in other] == [turn["raw"] for turn in plain], mode
        assert [turn["evaluated"] for turn in other] == [turn["evaluated"] for turn in plain], mode


def test_an_undo_then_the_same_action_evaluates_only_the_dropped_end_of_the_generation_prompt(backend):
    turns = play(backend, "off", "none")
    world = turns[-1]["world"]
    world.undo(to_turn=3)
    again = world.run_turn(ACTIONS[3])
    assert again.raw_output == turns[3]["raw"]
    assert again.tokens["prompt_evaluated"] == 4  # `<think>\n\n</think>\n\n`


def test_a_template_that_keeps_the_whole_generation_prompt_checkpoints_at_the_prompts_end(backend, monkeypatch):
    """Where the history keeps all of the generation prompt, the answer starts at the prompt's
    end: the state after its last decode is copied (no split), and the answers still do not
    depend on a prefetch. (This fixture's template drops an empty think block: the next turn's
    prompt parts before that end, so it restores the known start instead, as counted here.)"""
    monkeypatch.setitem(backend.__dict__, "_dropped_tails", {False: 0, True: 0})
    plain, prefetched = play(backend, "off", "none"), play(backend, "off", "whole")
    assert [turn["raw"] for turn in prefetched] == [turn["raw"] for turn in plain]
    last = prefetched[-1]["world"].history[-1]
    assert backend.sequence.checkpoints[-1].n_tokens == last.tokens["prompt_total"]
    for turn in plain[1:]:  # the action and the dropped end again, from the known start's state
        assert turn["evaluated"] > turn["new"]
