"""The terminal view as a scrollback: the starting screen, then each command as it was typed
after the prompt and what it printed, the way a real terminal shows a session (not only the
latest output)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

#: How a control key shows where it was typed (the shell echoes Ctrl+C as ^C).
_ECHO = {"Enter": "\n", "Tab": "\t", "Escape": "^[", "BSpace": "", "Up": "", "Down": "", "Left": "", "Right": ""}
#: Keys after which the screen holds only what comes next.
_CLEARS = {"C-l"}


def typed_text(payload: Any) -> str:
    """What the keystrokes put after the prompt: text as typed, `C-c` as `^C`; one line."""
    parts = []
    for item in payload if isinstance(payload, list) else []:
        keys = item.get("keystrokes", "") if isinstance(item, dict) else ""
        if not isinstance(keys, str):
            continue
        if keys in _ECHO:
            parts.append(_ECHO[keys])
        elif len(keys) == 3 and keys.startswith("C-"):
            parts.append("^" + keys[2].upper())
        else:
            parts.append(keys)
    text = "".join(parts)
    return text if text.endswith("\n") else text + "\n"


def _clears(payload: Any) -> bool:
    return isinstance(payload, list) and any(isinstance(item, dict) and item.get("keystrokes") in _CLEARS
                                             for item in payload)


def extend(screen: str, payload: Any, observation: str) -> str:
    """`screen` (ending at the prompt) after one more command and its output."""
    if _clears(payload):
        return observation
    prompt = screen.rsplit("\n", 1)[-1]
    if prompt.strip() and observation.startswith(prompt.rstrip()):
        # The model wrote the screen from the prompt on (prompt, command, output): it replaces the prompt line.
        return screen[: len(screen) - len(prompt)] + observation
    return screen + typed_text(payload) + observation


def scrollback(initial: str, turns: Iterable[tuple[Any, str]]) -> str:
    """The whole session as a terminal shows it: `turns` are (keystrokes payload, observation)."""
    screen = initial
    for payload, observation in turns:
        screen = extend(screen, payload, observation)
    return screen
