"""The prompt half of LlamaBackend (a mixin): making a sequence hold a prompt's tokens.

A turn restores the longest prefix its sequence can reuse (a checkpoint, or the state cache's
start of a new session) and evaluates the rest in n_batch chunks, stopping where it keeps a
checkpoint. A prompt's decodes ask llama.cpp for logits only where a token is sampled next:
any other chunk's output row is a product over the whole vocabulary (262k rows on Gemma).

A hybrid model's recurrent state can be copied only where a decode ends and set back only
from a copy, so where a turn stops decides what the next one evaluates again. A turn stops at
its known start (prefetched or not: the same chunks, so the same answers) and where its answer
starts (`_answer_start`: the end of the generation prompt less what the template does not keep
in the history, `<think>\n\n</think>\n\n` on Qwen 3.5 with thinking off; llama-server stops 4
tokens before a prompt's end for the same reason). The next turn, an undo or a regenerate
restores that state and evaluates only what the context does not hold: the answer's history
form and the new turn, never the action again. The known start's state stays only for the
newest turn (undo, then another action, starts there). An attention-only model's checkpoint
is a position, so its prompt stops only at the known start and where the state cache stores
a state. A split costs a decode more: on a mixture of experts a few tokens read many experts.
"""

from __future__ import annotations

import threading
import time

from typing import Any

from agentworld_local.engine.llama import vocab
from agentworld_local.engine.llama.prefix_tokens import shared_length
from agentworld_local.engine.llama.sequences import Sequence
from agentworld_local.engine.types import GenerationStats, ThinkBudget

#: Two contents of an answer in the history: where their renders part is where it starts.
_ANSWERS = ("A", "B")


class PromptEvaluation:
    """LlamaBackend's prompt evaluation (see the module's doc)."""

    n_batch: int
    _stateful: bool
    template: Any
    _texts: Any

    def _answer_start(self, full_text: str, full: list[int], base_text: str, think: ThinkBudget) -> int:
        """Tokens of `full` (a turn's prompt) that the next turn's prompt starts with whatever
        the answer is: all but the end of the generation prompt that the template drops when
        the answer becomes history (an empty think block, an open one); 0 when that cannot be
        told (the turn then stops at its boundary).

        The part dropped is found once per thinking mode on a probe conversation (what a prompt
        of one user message and the render of that message, an answer and one more message
        share), so it holds no assumption about the template. Its last tokens are kept only
        where an answer's text (a letter, a mark) does not merge with them. One that starts with
        white space may (templates mostly trim it): the next turn then finds its prompt parts
        before this stop and restores the known start's state (the action evaluated again,
        counted; never a wrong state)."""
        tail = self._dropped_tail(think)
        if len(full_text) - tail < len(base_text):
            return 0
        text = full_text[: len(full_text) - tail]
        if not text.startswith(base_text):
            return 0
        if not tail:
            return len(full)
        tokens = self.tokenize(text)
        if full[: len(tokens)] != tokens:
            return 0
        end = text[-64:]
        alone, *continued = (self._texts.tokens_alone(end + answer) for answer in ("", "A", "**B"))
        if tokens[-8:] != alone[-8:]:
            return 0  # the last characters alone tokenize otherwise: the boundary is safe
        unstable = len(alone) - min(shared_length(alone, other) for other in continued)
        return len(tokens) - unstable

    def _dropped_tail(self, think: ThinkBudget) -> int:
        """Characters at the end of a generation prompt that the history's render of its answer
        does not hold (see _answer_start), per thinking mode."""
        thinking = think.mode != "off"
        memo = self.__dict__.setdefault("_dropped_tails", {})  # per backend: its template
        if thinking not in memo:
            question = [{"role": "user", "content": "A"}]
            prompt = vocab.render_prompt(self.template, question, think)
            later = [vocab.render_prompt(self.template, [*question, {"role": "assistant", "content": answer},
                                                         {"role": "user", "content": "B"}], think)
                     for answer in _ANSWERS]
            shared = min(shared_length(prompt, text) for text in later)
            memo[thinking] = len(prompt) - shared
        return memo[thinking]

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
        is a turn's known start (its checkpoint is dropped once a later turn's known start is
        checkpointed: the module's doc);
        `first_turn`: it is a first turn's, whose state the state cache keeps too (the system
        prompt's alone leaves the task's text to evaluate): in memory, and on disk when it is the
        process's first or once a second session starts with it."""
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
        # A stop at the prompt's end (the answer starts there) is the state after its last decode.
        at_end = leave_one and len(full) in stops
        for stop in stops:
            if stop <= len(seq.tokens) or (leave_one and stop >= len(full)):
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
                # Held for this process's next sessions; on disk for the next process's when it is
                # this process's first, else once one of its sessions uses it (PromptStates.write_first_start).
                self._store_cached_prefix(seq, disk=self.prompt_states.write_first_start())
        if not self._evaluate(seq, full[len(seq.tokens) :], cancel, output=leave_one):
            return False
        self._save_passed(seq, passed)
        if at_end:
            self._save_checkpoint(seq)
        return True

    def _save_passed(self, seq: Sequence, passed: list[int]) -> None:
        """The checkpoints of positions an attention-only model's decode went through (emptied)."""
        for position in passed:
            self._save_checkpoint(seq, at=position)
        passed.clear()

