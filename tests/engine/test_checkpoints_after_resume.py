"""Checkpoint thinning keeps the checkpoint after turn 1 (its prompt and answer) by its
position, on the real llama.cpp path (tiny hybrid `qwen35moe` fixture). After a resume the
model reads the saved history in one go, so the second checkpoint in the list is not "after
turn 1": keyed by list index, thinning kept a useless one and a context cut re-read the whole
conversation."""

from __future__ import annotations

from agentworld_local.domains import get_domain
from agentworld_local.engine.events import ContextTrimmed, TurnFinished
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.world import World
from tests.engine.test_context_window_llama import ACTIONS, N_CTX, small_turns, turn_one_parting


def test_after_a_resume_a_context_cut_restores_the_turn_one_checkpoint(qwen_gguf):
    backend = LlamaBackend(qwen_gguf, n_ctx=N_CTX, gpu_layers=0, notice=lambda text: None)
    try:
        settings = small_turns(seed=3)
        saved = World(backend, get_domain("terminal"), settings)
        for action in ACTIONS[:3]:
            saved.run_turn(action)
        turn_one_end = turn_one_parting(backend, saved.fork(1).messages_for(saved.history[1].prompt))

        backend.reset()  # a new process: the resumed session's first turn reads the history at once
        world = World(backend, get_domain("terminal"), settings, history=list(saved.history), next_id=4)
        cut_record = None
        for number in range(4, 40):
            trimmed = False
            for event in world.step(ACTIONS[number % len(ACTIONS)]):
                trimmed = trimmed or isinstance(event, ContextTrimmed)
                if isinstance(event, TurnFinished):
                    record = event.record
            if number == 4:  # room for three turns of state: older checkpoints get thinned
                backend.checkpoint_budget = 3 * len(backend.sequence.checkpoints[-1].state)
            assert turn_one_end in [c.n_tokens for c in backend.sequence.checkpoints], f"turn {number}"
            if trimmed:
                cut_record = record
                break
        assert cut_record is not None, "36 turns of this size must outgrow a 1,024-token context"
        # The cut re-reads the kept history from the checkpoint after turn 1's prompt and answer,
        # not from 0.
        assert cut_record.tokens["prompt_evaluated"] == cut_record.tokens["prompt_total"] - turn_one_end
    finally:
        backend.close()
