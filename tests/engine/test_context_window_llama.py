"""A context that never dead-ends, on the real llama.cpp path (tiny hybrid `qwen35moe` fixture):
a session runs past the context size, and the turn after the cut evaluates only its new tokens."""

from __future__ import annotations

from agentworld_local.domains import get_domain
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.engine.events import ContextTrimmed, TurnFinished

N_CTX = 1024
ACTIONS = ["ls -la", "cd src", "cat main.py", "python main.py", "git status", "git diff", "pwd", "ls"]
# Tokens the engine may evaluate beyond the strictly new ones (as in test_append_only_context.py).
SMALL_CONSTANT = 4


def small_turns(seed: int) -> SessionSettings:
    """Short turns with a little thinking: a 1,024-token context fills within 30 of them."""
    return SessionSettings(
        sampling=SamplingConfig(temperature=0.8, max_tokens=24), think=ThinkBudget.parse("4"), seed=seed,
        task="find why the build fails", system_prompt="You simulate a Linux terminal.",
    )


def test_a_session_runs_past_the_context_size_and_the_turn_after_the_cut_is_incremental(qwen_gguf):
    backend = LlamaBackend(qwen_gguf, n_ctx=N_CTX, gpu_layers=0, notice=lambda text: None)
    try:
        world = World(backend, get_domain("terminal"), small_turns(seed=1))
        cuts, bases, after_turn_one = [], {}, 0
        for number in range(1, 31):
            for event in world.step(ACTIONS[number % len(ACTIONS)]):
                if isinstance(event, ContextTrimmed):
                    cuts.append(event)
                elif isinstance(event, TurnFinished):
                    record = event.record
            # What the model saw (the World just before this turn) is what the context holds.
            before = world.fork(number - 1)
            messages = before.messages_for(record.prompt, kept_from=_kept_from(record))
            base = backend.template.render(messages, add_generation_prompt=False)
            full = backend.tokenize(backend.template.render(messages, add_generation_prompt=True, enable_thinking=True))
            assert backend.evaluated_tokens[: len(full)] == full and record.tokens["prompt_total"] == len(full)
            bases[number] = backend.sequence.checkpoints[-1].n_tokens  # the turn's (where its action began)
            if number == 2:
                after_turn_one = turn_one_parting(backend, messages)
            if number == 1:  # room for five turns of state: older checkpoints get thinned
                backend.checkpoint_budget = 5 * len(backend.sequence.checkpoints[-1].state)
        assert len(world.history) == 30, "the session must go on past the context size"
        assert sum(r.tokens["prompt_total"] for r in world.history) > 10 * N_CTX
        assert len(cuts) >= 2, "30 turns of this size must outgrow a 1,024-token context"
        for cut in [cut for cut in cuts if cut.turn < len(world.history)]:
            at_cut, after = world.history[cut.turn - 1], world.history[cut.turn]
            assert at_cut.context["omitted_turns"] == {"first": 2, "last": cut.last}
            # The cut re-reads the kept history once, from the checkpoint after turn 1's prompt
            # and answer (kept even when older checkpoints are thinned) ...
            assert at_cut.tokens["prompt_evaluated"] == at_cut.tokens["prompt_total"] - after_turn_one
            # ... and the next turn evaluates only what is new since the cut turn's checkpoint
            # (where its action began).
            new_tokens = after.tokens["prompt_total"] - bases[cut.turn]
            assert after.tokens["prompt_evaluated"] <= new_tokens + SMALL_CONSTANT, cut
    finally:
        backend.close()


def turn_one_parting(backend, messages: list[dict[str, str]]) -> int:
    """Tokens up to where the text of the message after turn 1's answer begins: what every
    prompt after a cut (turn 1 kept, then a later turn) shares with the uncut history."""
    text = backend.template.render(messages, add_generation_prompt=False)
    return len(backend.tokenize(text[: text.index(messages[3]["content"].strip())]))


def _kept_from(record) -> int:
    return record.context["omitted_turns"]["last"] + 1 if record.context else 2
