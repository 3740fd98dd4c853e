"""The sampling half of LlamaBackend (a mixin): the token loop of one answer, with the
answer rules, and self-speculation's draft, verify and roll-back (speculation.py, mtp.py).

The methods take the sequence the generation acquired (`seq`, engine/llama/sequences.py), as
the rest of LlamaBackend does: a generator may be advanced from different threads."""

from __future__ import annotations

import codecs
import threading
import time
from collections.abc import Iterator
from typing import Any

import llama_cpp
from llama_cpp import _internals as llama_internals

from agentworld_local.engine.answer_rules import AnswerRules
from agentworld_local.engine.llama import checkpoints
from agentworld_local.engine.llama.mtp import MTP_DRAFT
from agentworld_local.engine.llama.sequences import Sequence
from agentworld_local.engine.llama.speculation import PromptLookup
from agentworld_local.engine.thinking import FORCED_THINK_END
from agentworld_local.engine.types import GenerationDone, GenerationEvent, GenerationStats, SamplingConfig, ThinkBudget
from agentworld_local.errors import GenerationError


class SampleLoop:
    """LlamaBackend's token loop (see the module's doc)."""

    _pieces: dict[int, bytes]
    #: Tokens one verify holds at most, the sampled one included (verify_width.py).
    verify_width: int

    def _make_sampler(self, sampling: SamplingConfig, seed: int) -> Any:
        sampler = llama_internals.LlamaSampler()
        if _greedy(sampling):
            sampler.add_greedy()
            return sampler
        sampler.add_top_k(sampling.top_k)
        sampler.add_top_p(sampling.top_p, 1)
        sampler.add_min_p(sampling.min_p, 1)
        sampler.add_temp(sampling.temperature)
        sampler.add_dist(seed & 0xFFFFFFFF)
        return sampler

    def _cancelled(self, stats: GenerationStats, started: float) -> GenerationDone:
        """Cancelled while the prompt was evaluated: nothing was generated yet."""
        stats.finish = "cancelled"
        stats.prompt_s = time.perf_counter() - started
        return GenerationDone(raw_output="", think_open=False, stats=stats)

    def _sample_loop(
        self,
        seq: Sequence,
        sampling: SamplingConfig,
        think: ThinkBudget,
        seed: int,
        cancel: threading.Event | None,
        think_open: bool,
        stats: GenerationStats,
    ) -> Iterator[GenerationEvent]:
        sampler = self._make_sampler(sampling, seed)
        seq.greedy = _greedy(sampling)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        rules = AnswerRules(think_open=think_open, think=think, sampling=sampling, stats=stats)
        forced_end = self.tokenize(FORCED_THINK_END)
        lookup = (PromptLookup(seq.tokens, patience=self.draft_patience, pacing=seq.pacing)
                  if self.speculate and self._mtp is None else None)
        started = time.perf_counter()
        token: int | None = None  # the next token, when a draft's verify already sampled it
        try:
            while True:
                if cancel is not None and cancel.is_set():
                    stats.finish = "cancelled"
                    break
                if self.room(seq) < 1:
                    stats.finish = "length"  # the context is full: the turn ends, the session stays usable
                    break
                if token is None:
                    token = self._sample_at(seq, sampler, -1)
                if llama_cpp.llama_vocab_is_eog(self._vocab, token):
                    stats.finish = "stop"
                    break
                # The sampled token's text goes out before its decode (and a draft's verify): the
                # reader sees each token one decode sooner; the context gets the same batches.
                yield from rules.feed(decoder.decode(self._piece(token)))
                ended = bool(rules.finish or rules.budget_spent)
                draft = self._draft(seq, lookup, token, rules) if self.speculate and not ended else []
                base = len(seq.tokens)
                if draft:
                    step, token, snapshot = self._verify(seq, sampler, [token, *draft], stats)
                    if lookup is not None:
                        lookup.verified(len(draft), len(step) - 1)
                else:
                    self._decode(seq, [token])
                    step, token, snapshot = [token], None, None
                kept = 1
                for piece in step[1:] if not ended else ():
                    kept += 1
                    yield from rules.feed(decoder.decode(self._piece(piece)))
                    if rules.finish or rules.budget_spent:
                        break
                if base + kept < len(seq.tokens):  # rejected draft tokens, or a rule ended the step early
                    self._keep(seq, base, kept, snapshot)
                if kept < len(step):
                    token = None  # sampled after tokens the turn does not keep
                if rules.finish:
                    stats.finish = rules.finish
                    break
                if rules.budget_spent:
                    token = None  # sampled before thinking was closed
                    if len(forced_end) > self.room(seq):
                        stats.finish = "length"  # no room left even to close thinking
                        stats.thinking_cut = True  # the budget ended it all the same
                        break
                    yield from rules.end_thinking()
                    self._decode(seq, forced_end)
                if lookup is not None:
                    lookup.extend(seq.tokens[len(lookup) :])
        finally:
            sampler.close()
        yield from rules.flush()
        stats.generate_s = time.perf_counter() - started
        raw = "".join(rules.raw) + decoder.decode(b"", final=True)
        yield GenerationDone(raw_output=raw, think_open=think_open, stats=stats)

    def _piece(self, token: int) -> bytes:
        """A token's bytes as llama.cpp writes them (special tokens too), kept per token: the
        vocabulary does not change, and every generated token asks."""
        piece = self._pieces.get(token)
        if piece is None:
            piece = self._pieces[token] = self._llm.detokenize([token], special=True)
        return piece

    def _draft(self, seq: Sequence, lookup: PromptLookup | None, token: int, rules: AnswerRules) -> list[int]:
        """Tokens to verify after `token`, looked up in the context (or the MTP layer's guesses,
        `lookup` None): none past the end of the
        context or of the batch, past the point where a thinking budget or max_tokens ends
        (rules.tokens_left), nor from an end-of-generation token on (the sampler must pick it); no
        more than a verify may hold (`verify_width`: `auto`'s keeps one-token decodes' logits)."""
        limit = min(self.room(seq) - 1, self.n_batch - 1, self.verify_width - 1)
        left = rules.tokens_left()  # `token` was fed already
        if left is not None:
            limit = min(limit, left)
        if limit < 1:
            return []
        if lookup is None:
            draft = self._mtp.draft(token, len(seq.tokens), min(limit, MTP_DRAFT))
        else:
            lookup.extend([token])
            draft = lookup.draft(limit)
            lookup.truncate(len(lookup) - 1)
        for i, drafted in enumerate(draft):
            if llama_cpp.llama_vocab_is_eog(self._vocab, drafted):
                return draft[:i]
        return draft

    def _verify(self, seq: Sequence, sampler: Any, batch: list[int],
                stats: GenerationStats) -> tuple[list[int], int | None, bytes | None]:
        """Evaluate `batch` (a sampled token and its draft) in one decode with logits at every
        position and apply the sampler at each: a draft token is accepted while the sampler picks
        it (so sampling at any temperature gives what it would without the draft). The context
        keeps the whole batch; returns (the accepted tokens, the token the sampler picked after
        them or None, the recurrent state before the batch for `_keep` when llama.cpp keeps no
        snapshots to roll back to)."""
        rollback = llama_cpp.llama_n_rs_seq(self._ctx) >= len(batch) - 1
        snapshot = self._copy_state(seq) if self._stateful and not rollback else None
        self._decode(seq, batch, all_logits=True)
        stats.drafted += len(batch) - 1
        for i in range(len(batch) - 1):
            picked = self._sample_at(seq, sampler, i)
            if picked != batch[i + 1]:
                stats.accepted += i
                return batch[: i + 1], picked, snapshot
        stats.accepted += len(batch) - 1
        return batch, self._sample_at(seq, sampler, len(batch) - 1), snapshot

    def _keep(self, seq: Sequence, base: int, kept: int, snapshot: bytes | None) -> None:
        """After a verify from `base`, keep `kept` of its tokens in the context. Attention drops
        the rest, and so do recurrent layers that keep a snapshot per token (llama.cpp's
        n_rs_seq, loading.with_rollback); otherwise their state goes back to `snapshot` (taken
        before the batch) and the kept tokens are evaluated again."""
        tokens = seq.tokens[base : base + kept]
        if snapshot is None:
            with self._batcher.exclusive():
                dropped = llama_cpp.llama_memory_seq_rm(self._memory, seq.id, base + kept, -1)
            del seq.tokens[base + kept :]
            self._llm.n_tokens = len(seq.tokens)
            if not dropped:
                seq.live = False  # the next turn restores from a checkpoint
                raise GenerationError("llama.cpp refused to roll back a rejected draft.",
                                      "Run the turn again with `--speculate off`.")
            return
        with self._batcher.exclusive():
            restored = checkpoints.set_state(self._ctx, snapshot, seq.id)
            llama_cpp.llama_memory_seq_rm(self._memory, seq.id, base, -1)
        del seq.tokens[base:]
        self._llm.n_tokens = base
        if not restored:
            seq.live = False  # the next turn restores from a checkpoint
            raise GenerationError("llama.cpp refused to roll back a rejected draft.",
                                  "Run the turn again with `--speculate off`.")
        self._decode(seq, tokens)


def _greedy(sampling: SamplingConfig) -> bool:
    """The sampler is llama.cpp's greedy one alone (batching.sample_row then takes the argmax)."""
    return sampling.temperature <= 0
