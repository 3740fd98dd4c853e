"""What a JSON text a client sent looks like before anything parses it: how deep its arrays and
objects nest, and its longest number, counted in one pass without recursion.

Python's json parser recurses once per level (a line of 100,000 `[` is a RecursionError) and
refuses integers of more than 4,300 digits with a ValueError; every walk of a parsed value is
recursive too. The wire faces (`awl mcp`'s lines, `awl serve --openenv`'s WebSocket messages)
look here first and refuse what is too deep or too long in one line of their own protocol.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# How deep a message may nest: the limit every parsed file and message of awl's has.
from agentworld_local.safe_parse import MAX_DEPTH

#: The most digits a number may have (a seed, a count: 20 digits hold any 64-bit integer).
MAX_DIGITS = 100

#: A JSON string (skipped whole; an unterminated one runs to the end), one bracket, or a run of
#: digits outside strings (a number's integer, fraction or exponent part).
_TOKEN = re.compile(r'"(?:[^"\\]+|\\.)*"?|[\[\]{}]|\d+')


@dataclass(frozen=True)
class Shape:
    depth: int  # the deepest nesting of arrays and objects (0: a scalar)
    digits: int  # the longest run of digits outside strings

    def problem(self, *, max_depth: int = MAX_DEPTH, max_digits: int = MAX_DIGITS) -> str | None:
        """Why the text is refused before parsing, or None."""
        if self.depth > max_depth:
            return f"it is nested {self.depth} deep; this server reads at most {max_depth} levels"
        if self.digits > max_digits:
            return f"it holds a number of {self.digits} digits; this server reads at most {max_digits}"
        return None


def shape(text: str) -> Shape:
    """The nesting and the longest number of `text` (JSON or not: a guess that never fails)."""
    depth = peak = digits = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first in "[{":
            depth += 1
            peak = max(peak, depth)
        elif first in "]}":
            depth -= 1
        elif first != '"':
            digits = max(digits, len(token))
    return Shape(peak, digits)
