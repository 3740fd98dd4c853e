"""The prompt half of LlamaBackend (a mixin): making a sequence hold a prompt's tokens.

A turn restores the longest prefix its sequence can reuse (a checkpoint, or the state cache's
start of a new session) and evaluates the rest in n_batch chunks, stopping where it keeps a
checkpoint. A prompt's decodes ask llama.cpp for logits only where a token is sampled next:
any other chunk's output row is a product over the whole vocabulary (262k rows on Gemma). A
hybrid model stops at every checkpoint (its recurrent state can be copied only where a decode
ends), so a turn that prefetched keeps its state at the known start, not at its boundary; an
attention-only model's checkpoint is a position, so its prompt stops only at the known start
(prefetched or not, a turn's prompt goes in the same chunks) and where the state cache stores a
state. A split costs a decode more: on a mixture of experts, a few dozen tokens read nearly every
expert's weights, as a whole chunk does.
"""

from __future__ import annotations

import threading
import time

from agentworld_local.engine.llama.prefix_tokens import shared_length
from agentworld_local.engine.llama.sequences import Sequence
from agentworld_local.engine.types import GenerationStats


class PromptEvaluation:
    """LlamaBackend's prompt evaluation (see the module's doc)."""

    n_batch: int
    _stateful: bool

    def _evaluate(self, seq: Sequence, tokens: list[int], cancel: threading.Event | None, *,
                  output: bool = False) -> bool:
        """Decode `tokens` after `seq`'s, in n_batch chunks, with logits after the last one only
        when `output` (a generation samples there; a prompt chunk's would be a wasted product over
        the whole vocabulary); False when cancelled."""
        for start in range(0, len(tokens), self.n_batch):
            if cancel is not None and cancel.is_set():
                return False
            self._decode(seq, tokens[start : start + self.n_batch],
                         output=output and start + self.n_batch >= len(tokens))
        return True

    def _evaluate_prompt(self, seq: Sequence, full: list[int], stops: list[int], system: int,
                         cancel: threading.Event | None, stats: GenerationStats, *, leave_one: bool = True,
                         known: int = 0, first_turn: bool = False) -> bool:
        """Make `seq` hold `full`: restore the longest prefix it can reuse, evaluate the
        rest with a checkpoint at each of `stops`; False when cancelled. `leave_one`: evaluate
        at least the last token (a generation samples from its logits). `known`: the stop that
        is a turn's known start (an attention-only model's checkpoint there is dropped once a
        later turn's is made; a hybrid model's is the turn's one checkpoint);
        `first_turn`: it is a first turn's, whose state the state cache keeps too (the system
        prompt's alone leaves the task's text to evaluate): in memory, and on disk once a second
        session starts with it."""
        reach = len(full) - 1 if leave_one else len(full)  # what may come from the context or a cache
        started = time.perf_counter()
        self._unpark(seq, full)  # the state its owner left when another session took the place (parking.py)
        unparked = time.perf_counter() - started
        stats.restore_s = unparked + self._restore(seq, shared_length(seq.tokens, full, min(len(seq.tokens), reach)))
        cache_at = 0  # where a turn that evaluates the system prompt stores its state
        if self.state_cache is not None and (not seq.tokens or system > len(seq.tokens)):
            # A new session, or one lent a slot another system prompt's session held.
            stats.restore_s += self._load_cached_prefix(seq, full, limit=reach)
            cache_at = system
        stats.prompt_tokens_total = len(full)
        stats.prompt_tokens_evaluated = len(full) - len(seq.tokens)
        passed: list[int] = []  # an attention-only model's stops that need no split (the module's doc)
        for stop in stops:
            if stop <= len(seq.tokens):
                continue
            if not self._stateful and stop != known and stop != cache_at:
                passed.append(stop)
                continue
            if not self._evaluate(seq, full[len(seq.tokens) : stop], cancel):
                return False
            self._save_passed(seq, passed)
            self._save_checkpoint(seq, known=stop == known)
            if stop == cache_at:
                self._store_cached_prefix(seq)
            elif cache_at and first_turn and stop == known:
                # Held for this process's next sessions; on disk once one of them uses it
                # (RL episodes of distinct tasks write no file each).
                self._store_cached_prefix(seq, disk=False)
        if not self._evaluate(seq, full[len(seq.tokens) :], cancel, output=leave_one):
            return False
        self._save_passed(seq, passed)
        return True

    def _save_passed(self, seq: Sequence, passed: list[int]) -> None:
        """The checkpoints of positions an attention-only model's decode went through (emptied)."""
        for position in passed:
            self._save_checkpoint(seq, at=position)
        passed.clear()

