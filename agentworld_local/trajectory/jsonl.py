"""One JSON line that can always be written: to a UTF-8 file, a pipe or a terminal.

Damaged input can hold lone surrogates (from `\\ud800` escapes), which UTF-8 cannot
encode; such a value is written with ASCII escapes instead, which reads back the same.
C1 control characters (U+0080..U+009F, e.g. U+009B, a terminal's CSI) are not escaped by
`json.dumps`; they are escaped here so a row printed to a terminal cannot drive it.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Outside strings JSON text is ASCII, so these can only occur inside strings, where
# `\\uXXXX` is an equivalent spelling.
_C1 = re.compile("[\x7f-\x9f\u2028\u2029]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def dumps(value: Any) -> str:
    """Compact-enough JSON text of `value` that always encodes as UTF-8."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return json.dumps(value)
    return _C1.sub(_escape, text)


def encode_line(value: Any) -> bytes:
    """`value` as one JSONL line, newline included."""
    return (dumps(value) + "\n").encode("utf-8")
