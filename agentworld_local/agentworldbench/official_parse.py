"""How the official judge step reads a prediction, restated in awl's own code.

QwenLM/Qwen-AgentWorld eval/lwm_eval_utils/output_parser.py decides what its judge sees:
thinking is removed from `gen` (every `<think>...</think>` pair, text before a close that
has no open, text after an open that has no close up to the response tag), the last
response block is taken (tags matched in any case, to its close or the end), and the
benchmark's marker is taken off. awl's judge sends what these rules give, so its request
is the official one; contract/parse.py keeps its own rules for sessions.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

_OPEN = re.compile(r"<think>", re.IGNORECASE)
_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_CLOSE_LENGTH = len("</think>")
#: What the official parser returns for a prediction with no text.
NO_OUTPUT = "No output"


def without_thinking(text: str, stop_tag: str) -> str:
    """`text` with its thinking removed (then stripped); unchanged when it has no think tag.

    A closed pair goes with its content (nested pairs pair in order), an unpaired close
    takes everything before it, an unpaired open everything after it up to `<stop_tag>`.
    """
    if not text:
        return text
    opens = [m.start() for m in _OPEN.finditer(text)]
    closes = [m.start() for m in _CLOSE.finditer(text)]
    if not opens and not closes:
        return text
    spans: list[tuple[int, int]] = []
    paired: set[int] = set()
    free = 0  # closes before it are taken: each open takes the first free close after it
    for start in opens:
        close = max(free, bisect_right(closes, start))
        if close < len(closes):
            spans.append((start, closes[close] + _CLOSE_LENGTH))
            paired.add(close)
            free = close + 1
        else:
            spans.append((start, -1))  # unpaired: its end is found below
    spans += [(0, close + _CLOSE_LENGTH) for index, close in enumerate(closes) if index not in paired]
    stops = [m.start() for m in re.finditer(f"<{re.escape(stop_tag)}>", text, re.IGNORECASE)] if stop_tag else []
    for index, (start, end) in enumerate(spans):
        if end == -1:
            after = bisect_left(stops, start)
            spans[index] = (start, stops[after] if after < len(stops) else len(text))
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    kept, position = [], 0
    for start, end in merged:
        kept.append(text[position:start])
        position = end
    return ("".join(kept) + text[position:]).strip()


def last_block(text: str, tag: str) -> str | None:
    """The stripped content of the last `<tag>` block (to its close, or the end); None without one."""
    opens = list(re.finditer(f"<{re.escape(tag)}>", text, re.IGNORECASE))
    if not opens:
        return None
    rest = text[opens[-1].end():]
    close = re.search(f"</{re.escape(tag)}>", rest, re.IGNORECASE)
    return (rest[: close.start()] if close else rest).strip()


def model_output(gen: str, response_tag: str) -> str:
    """What the official judge compares from a `gen`: thinking removed, the last response block."""
    if not gen:
        return NO_OUTPUT
    text = without_thinking(gen, response_tag)
    block = last_block(text, response_tag)
    if block is None:
        return text.strip() or NO_OUTPUT
    return block


def unmarked(text: str, marker: str) -> str:
    """`text` without the benchmark's marker (`**Environment Observation:**`), stripped."""
    if not marker:
        return text.strip()
    if text.startswith(marker):
        return text[len(marker):].strip()
    return text.replace(marker, "").strip()
