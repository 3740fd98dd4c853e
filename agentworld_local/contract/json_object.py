"""Finding JSON objects in a model's free text: the one reader both judges use.

A judge (AgentWorldBench's, agentworldbench/verdict.py; the task judge,
session/rewards/task_judge.py) answers in prose, fences and loosely written JSON. Both look
for `{...}` spans the same way: from a `{`, count braces outside strings (a backslash in a
string escapes the next character) until the count is back to 0. Scanning again from every
`{` is quadratic on an answer with many unbalanced braces (100,000 `{` took minutes), so
here one pass tells every `{` where its object closes, and the fence reader is a plain
search instead of a backtracking pattern.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

_OUT, _IN, _ESCAPED = 0, 1, 2  # outside a string, inside one, right after a backslash inside one
_MARKS = re.compile(r'[{}"\\]')
_FENCE = "```"
_FENCE_LANGUAGE = "json"


class _Lineage:
    """The scans (one per `{`) that agree on what is a string from here on.

    Each scan waits for its depth to reach 0; `level` counts braces seen since the lineage
    began, so a scan waits under the key `level - depth` and closes when `level` comes down
    to it. Scans that come to agree are merged, the smaller into the larger. `shallow` holds
    the waiting scans not yet known to nest deeper than the limit, the shallowest key first.
    """

    __slots__ = ("level", "waiting", "shallow", "size")

    def __init__(self) -> None:
        self.level = 0
        self.waiting: dict[int, list[int]] = {}
        self.shallow: list[tuple[int, int]] = []
        self.size = 0

    def absorb(self, other: "_Lineage | None") -> "_Lineage":
        if other is None:
            return self
        big, small = (self, other) if self.size >= other.size else (other, self)
        shift = big.level - small.level
        for key, starts in small.waiting.items():
            big.waiting.setdefault(key + shift, []).extend(starts)
        for key, start in small.shallow:
            heapq.heappush(big.shallow, (key + shift, start))
        big.size += small.size
        return big


@dataclass(frozen=True)
class Braces:
    #: For each `{` whose object closes, the index of the `}` that closes it.
    closes: dict[int, int]
    #: The `{` whose object holds objects nested deeper than the limit asked for.
    deep: frozenset[int]


def scan_braces(text: str, depth_limit: int | None = None) -> Braces:
    """Where the object opened by each `{` closes: a scan from that `{` alone, strings judged
    from there. O(n log n): scans merge once they agree on what is a string."""
    closes: dict[int, int] = {}
    deep: set[int] = set()
    lineages: dict[int, _Lineage] = {}
    escaped_at = -1  # where the `_ESCAPED` lineage saw its backslash
    for mark in _MARKS.finditer(text):
        index, char = mark.start(), mark.group()
        escaped = lineages.pop(_ESCAPED, None)
        if escaped is not None and escaped_at < index - 1:  # a plain character ended its escape
            lineages[_IN] = escaped.absorb(lineages.get(_IN))
            escaped = None
        outside, inside = lineages.pop(_OUT, None), lineages.pop(_IN, None)
        if char == "{":
            outside = outside or _Lineage()
            outside.level += 1
            outside.waiting.setdefault(outside.level - 1, []).append(index)
            outside.size += 1
            if depth_limit is not None:
                heapq.heappush(outside.shallow, (outside.level - 1, index))
                while outside.shallow and outside.shallow[0][0] < outside.level - depth_limit:
                    start = heapq.heappop(outside.shallow)[1]
                    if start not in closes:
                        deep.add(start)
        elif char == "}" and outside is not None:
            outside.level -= 1
            for start in outside.waiting.pop(outside.level, ()):
                closes[start] = index
        elif char == '"':
            outside, inside = inside, outside
        elif char == "\\" and inside is not None:
            lineages[_ESCAPED], inside, escaped_at = inside, None, index
        if escaped is not None:  # this character was the escaped one: back inside the string
            inside = escaped.absorb(inside)
        for state, lineage in ((_OUT, outside), (_IN, inside)):
            if lineage is not None and lineage.waiting:
                lineages[state] = lineage
    return Braces(closes, frozenset(deep))


def read_objects(text: str, read: Callable[[int, int], T | None], *, depth_limit: int | None = None) -> list[T]:
    """Left to right, the objects not inside one already taken: at each `{`, if its object
    closes, `read(start, end)` (end exclusive) gives the value to keep; None passes over the
    span, and the search goes on at the next `{`, inside it. A span that nests objects more
    than `depth_limit` deep is passed over unread."""
    found: list[T] = []
    position = 0
    braces = scan_braces(text, depth_limit)
    for start in sorted(braces.closes):
        if start < position or start in braces.deep:
            continue
        value = read(start, braces.closes[start] + 1)
        if value is not None:
            found.append(value)
            position = braces.closes[start] + 1
    return found


def balanced_objects(text: str) -> list[str]:
    """Every balanced `{...}` span, left to right, those inside another left out."""
    return read_objects(text, lambda start, end: text[start:end])


def fenced_blocks(text: str) -> Iterator[str]:
    """The stripped contents of ``` fences, in order. An opening fence may name `json`
    (lowercase, as the official pattern has it); a fence left open ends the search."""
    position = 0
    while (opening := text.find(_FENCE, position)) != -1:
        start = opening + len(_FENCE)
        if text.startswith(_FENCE_LANGUAGE, start):
            start += len(_FENCE_LANGUAGE)
        end = text.find(_FENCE, start)
        if end == -1:
            return
        yield text[start:end].strip()
        position = end + len(_FENCE)


def object_closed_at(text: str, end: int) -> str | None:
    """Back from the `}` at `end` to the `{` that balances it; None when none does.
    Read backward, a quote after a backslash is no quote (the official parser's rule)."""
    depth, in_string = 0, False
    for index in range(end, -1, -1):
        char = text[index]
        if char == '"' and (index == 0 or text[index - 1] != "\\"):
            in_string = not in_string
        elif not in_string and char in "{}":
            depth += 1 if char == "}" else -1
            if depth == 0:
                return text[index:end + 1]
    return None


__all__ = ["Braces", "balanced_objects", "fenced_blocks", "object_closed_at", "read_objects", "scan_braces"]
