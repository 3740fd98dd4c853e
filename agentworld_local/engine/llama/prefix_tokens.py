"""Tokens of rendered prompts, the part an earlier prompt shares taken from its tokens.

Every prompt of a session is the last one and a little more (one more turn), and each turn
tokenizes several renders of it (counted to fit, the known start, the turn boundary, the
whole prompt): on a long history that is most of the Python time of a turn. llama.cpp splits
a text at its special tokens before it tokenizes anything and tokenizes the text between two
of them on its own, so the tokens of a text up to a special token it shares with a text
tokenized before are that text's tokens up to there: only the rest is tokenized. The split
is at a control token's start (chat templates write one at every message boundary); a
text that shares none is tokenized whole.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class _Tokenized:
    text: str
    tokens: tuple[int, ...]
    #: (character offset where a control token's text starts, its index in `tokens`), in order.
    marks: tuple[tuple[int, int], ...]


#: The latest texts a new one may start like (a turn's renders of one history).
_SEARCHED = 8


class PrefixTokenizer:
    """`tokens(text)`: `tokenize(text)` (a tuple), reusing the longest usable prefix of the last
    texts' tokens (the last `keep` are answered at once). `piece(token)`: the text llama.cpp
    matches for a special token; `is_special(token)`: whether it is one (a split point)."""

    def __init__(self, tokenize: Callable[[str], list[int]], piece: Callable[[int], str],
                 is_special: Callable[[int], bool], *, keep: int = 32) -> None:
        self._tokenize = tokenize
        self._piece_of = piece
        self._is_special = is_special
        self._keep = keep
        self._done: OrderedDict[str, _Tokenized] = OrderedDict()
        self._pieces: dict[int, str] = {}  # a special token's text ("" for any other token)
        self._lock = threading.Lock()

    def _piece(self, token: int) -> str:
        piece = self._pieces.get(token)
        if piece is None:
            piece = self._pieces[token] = self._piece_of(token) if self._is_special(token) else ""
        return piece

    def tokens(self, text: str) -> tuple[int, ...]:
        with self._lock:
            known = self._done.get(text)
            if known is not None:
                self._done.move_to_end(text)
                return known.tokens
            earlier = list(self._done.values())[-_SEARCHED:]
        source, mark = self._reusable(text, earlier)
        if source is not None:
            at, index = mark
            tail = tuple(self._tokenize(text[at:]))
            if tail[:1] == source.tokens[index : index + 1]:  # the split llama.cpp makes: reuse
                marks = source.marks[: source.marks.index(mark)] + self._marks(text[at:], tail, at, index)
                done = _Tokenized(text, source.tokens[:index] + tail, marks)
                self._remember(done)
                return done.tokens
        tokens = tuple(self._tokenize(text))
        self._remember(_Tokenized(text, tokens, self._marks(text, tokens)))
        return tokens

    def _reusable(self, text: str, earlier: list[_Tokenized]) -> tuple[_Tokenized | None, tuple[int, int]]:
        """(the earlier text whose last special token shared with `text` comes latest, that
        mark); (None, (0, 0)) when none shares one after the start."""
        best: tuple[_Tokenized | None, tuple[int, int]] = (None, (0, 0))
        for done in earlier:
            mark = _last_shared_mark(done, text, self._piece)
            if mark is not None and mark[0] > best[1][0]:
                best = (done, mark)
        return best

    def _marks(self, text: str, tokens: tuple[int, ...], offset: int = 0,
               first: int = 0) -> tuple[tuple[int, int], ...]:
        """Where each special token's text starts in `text` (found in order: the text between
        two never holds one, or llama.cpp would have split there), shifted by `offset` and
        `first` (a tail's). Stops at one not found."""
        marks, at = [], 0
        for index, token in enumerate(tokens):
            piece = self._piece(token)
            if not piece:
                continue
            found = text.find(piece, at)
            if found < 0:
                break
            marks.append((offset + found, first + index))
            at = found + len(piece)
        return tuple(marks)

    def _remember(self, done: _Tokenized) -> None:
        with self._lock:
            self._done[done.text] = done
            self._done.move_to_end(done.text)
            while len(self._done) > self._keep:
                self._done.popitem(last=False)


def shared_length(one: Sequence, two: Sequence, limit: int | None = None) -> int:
    """How many items (characters, tokens) `one` and `two` start with alike, at most `limit`:
    slices compared in C, the whole first (a context is usually a prefix of the next prompt),
    then block by block, then by halves inside the block that differs (os.path.commonprefix or
    a loop compares one at a time in Python, milliseconds on a history; halving the whole
    copies it again at every step)."""
    limit = min(len(one), len(two)) if limit is None else limit
    if one[:limit] == two[:limit]:
        return limit
    low = 0
    while one[low : low + _BLOCK] == two[low : low + _BLOCK]:
        low += _BLOCK  # stops inside `limit`: the whole differs somewhere there
    high = min(low + _BLOCK, limit) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if one[low:middle] == two[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


#: shared_length's block: a few thousand characters or tokens are one copy in C.
_BLOCK = 4096


def _last_shared_mark(done: _Tokenized, text: str, piece: Callable[[int], str]) -> tuple[int, int] | None:
    """The last mark of `done` whose special token `text` shares with it, text before included
    (the marks are in order, so their ends too); None when none but one at the start does."""
    shared = shared_length(done.text, text)
    found = bisect.bisect_right(done.marks, shared, key=lambda mark: mark[0] + len(piece(done.tokens[mark[1]]))) - 1
    return None if found < 0 or done.marks[found][0] == 0 else done.marks[found]
