"""Prompt-lookup drafting: guess the next tokens by finding the context's last few tokens
earlier in the context and proposing what followed them there.

A world model's observations often repeat text the context already holds (a file shown
before, a screen redrawn), so the guess is often right; the backend verifies a draft in one
batch and keeps the prefix the sampler agrees with (backend._sample_loop). Pure: no llama.cpp.

The tokens are kept as machine integers in one bytearray, so a lookup is `bytes.rfind`
(C speed) over a session of tens of thousands of tokens instead of a Python scan; a match
that does not start on a token boundary is skipped.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass

_WIDTH = array("i").itemsize  # bytes per token id


def _encode(tokens: Iterable[int]) -> bytes:
    return array("i", tokens).tobytes()


def _decode(data: bytes | bytearray) -> list[int]:
    return array("i", bytes(data)).tolist()


#: The longest draft verified at once (a hybrid model keeps this many recurrent snapshots).
MAX_DRAFT = 8
#: `--speculate auto`: drafts rejected whole, one after the other, before drafting pauses; the
#: pause (in context tokens) starts here and doubles on each further run of misses, up to
#: MAX_PAUSE, and an accepted draft ends it. A verify batch that keeps nothing costs more than
#: the one-token decode it replaced, so a session whose answers copy nothing stops paying.
MISS_RUN = 3
FIRST_PAUSE = 16
MAX_PAUSE = 1024


@dataclass
class DraftPacing:
    """Where `--speculate auto`'s drafting stands: drafts rejected in a row, the next pause and
    the context length the current one lasts to. A sequence keeps one across its session's
    turns (a turn builds its PromptLookup anew), so a session whose answers copy nothing pauses
    longer each turn instead of paying a run of misses at every turn's start."""

    misses: int = 0
    pause: int = FIRST_PAUSE
    paused_until: int = 0  # context length before which no draft is offered


class PromptLookup:
    """The context's tokens, and drafts looked up in them.

    `draft()` tries the last `max_ngram` tokens first, then shorter tails down to `min_ngram`;
    the most recent earlier occurrence wins (the latest screen is the likeliest to repeat).
    """

    def __init__(self, tokens: Iterable[int] = (), *, min_ngram: int = 2, max_ngram: int = 4, max_draft: int = MAX_DRAFT,
                 patience: int | None = None, pacing: DraftPacing | None = None) -> None:
        if not 1 <= min_ngram <= max_ngram or max_draft < 1 or (patience is not None and patience < 1):
            raise ValueError("need 1 <= min_ngram <= max_ngram, max_draft >= 1 and patience >= 1")
        self.min_ngram, self.max_ngram, self.max_draft = min_ngram, max_ngram, max_draft
        self._buffer = bytearray(_encode(tokens))
        #: None: draft wherever a match is found (`--speculate on`); N: pause after N misses (auto).
        self.patience = patience
        #: The run of misses and the pause (`pacing`: one that outlasts this lookup, a session's).
        self.pacing = DraftPacing() if pacing is None else pacing

    def __len__(self) -> int:
        return len(self._buffer) // _WIDTH

    def extend(self, tokens: Iterable[int]) -> None:
        self._buffer += _encode(tokens)

    def truncate(self, n: int) -> None:
        """Keep the first `n` tokens (a rejected draft or a rolled-back turn)."""
        del self._buffer[n * _WIDTH :]

    def verified(self, drafted: int, accepted: int) -> None:
        """What the sampler made of the last draft: `accepted` of its `drafted` tokens kept.
        With `patience`, a run of drafts that kept nothing pauses drafting (MISS_RUN)."""
        if self.patience is None or not drafted:
            return
        pacing = self.pacing
        if accepted:
            pacing.misses, pacing.pause = 0, FIRST_PAUSE
            return
        pacing.misses += 1
        if pacing.misses >= self.patience:
            pacing.paused_until = len(self) + pacing.pause
            pacing.misses, pacing.pause = 0, min(pacing.pause * 2, MAX_PAUSE)

    @property
    def paused(self) -> bool:
        return len(self) < self.pacing.paused_until

    def tokens(self) -> list[int]:
        return _decode(self._buffer)

    def draft(self, limit: int | None = None) -> list[int]:
        """Up to `limit` (default max_draft) tokens that followed the longest matching tail; [] if none."""
        limit = self.max_draft if limit is None else min(limit, self.max_draft)
        n_tokens = len(self)
        if limit < 1 or n_tokens < self.pacing.paused_until:
            return []
        buffer = self._buffer
        for n in range(min(self.max_ngram, n_tokens - 1), self.min_ngram - 1, -1):
            key = bytes(buffer[(n_tokens - n) * _WIDTH :])
            # An earlier occurrence must end before the last token, so at least one follows it.
            end = (n_tokens - 1) * _WIDTH
            while True:
                found = buffer.rfind(key, 0, end)
                if found < 0:
                    break
                if found % _WIDTH == 0:
                    start = found + len(key)
                    stop = min(start + limit * _WIDTH, n_tokens * _WIDTH)
                    return _decode(buffer[start:stop])
                end = found + len(key) - 1  # a match across token boundaries: look further back
        return []



def speculation_default(*, stateful: bool, gpu_layers: int) -> bool:
    """`--speculate auto`, before the probe: on for attention-only models, CPU or GPU (a verify
    batch costs little more than one token there once its graph is built; drafting pauses after
    a run of misses: MISS_RUN), as wide as verify_width.exact_width measured batches to give
    one-token decodes' logits. Off for hybrid and recurrent models: a batch's recurrent state
    differs from the one-token one in the last digits, so greedy output is not always identical
    (docs/speculation.md, "Identical tokens: what holds"), and auto keeps no rollback snapshots."""
    return not stateful
