"""Make model or file text safe to write to a real terminal.

A simulated screen must never drive the user's terminal: every control character, escape
sequence and bidirectional override is shown as a visible escape, except newlines, tabs and SGR colour
sequences (`ESC [ ... m`), which a terminal view should keep. Lone surrogates (from
damaged input) become U+FFFD so no encoder fails on them.
"""

from __future__ import annotations

import re

# SGR only: ESC [ params m. Everything else that starts with ESC is neutralised.
_SGR = re.compile(r"\x1b\[[0-9;:]*m")
# Bidirectional overrides and isolates too: they reorder what follows on the line (the text a
# user reads would not be the text that is there).
_UNSAFE = re.compile(r"\x1b\[[0-9;:]*m|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|[\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    text = match.group()
    if text.startswith("\x1b["):
        return text if text.endswith("m") and _SGR.fullmatch(text) else "\\x1b" + text[1:]
    code = ord(text)
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    if code == 0x1B:
        return "\\x1b"
    if code > 0xFF:
        return f"\\u{code:04x}"
    return f"\\x{code:02x}"


def safe_for_terminal(text: str, *, keep_colour: bool = True) -> str:
    """`text` with control bytes shown as `\\xNN`; SGR colour kept unless `keep_colour` is False."""
    if keep_colour:
        return _UNSAFE.sub(_visible, text)
    return _UNSAFE.sub(lambda m: "" if _SGR.fullmatch(m.group()) else _visible(m), text)


def shorten(text: str, limit: int = 200) -> str:
    """One line for a header: the start of `text`, with how much was left out."""
    flat = text.replace("\n", "\\n")
    if len(flat) <= limit:
        return flat
    return f"{flat[:limit]}… ({len(text):,} characters)"
