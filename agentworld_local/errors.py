"""One exception family. Every message names the next step for the user."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Any


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_lone_surrogates(text: str) -> str:
    """`text` with each lone surrogate written as its escape (`\\ud800`), as the session file
    spells it (trajectory/jsonl.py): text that UTF-8 can always encode, and that says what was sent."""
    if not isinstance(text, str) or _LONE_SURROGATE.search(text) is None:
        return text
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`Did you mean `x`?` for the closest of `choices`, or "" when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f"Did you mean `{close[0]}`?" if close else ""


class AwlError(Exception):
    """Base of every error `awl` reports to a user (exit code 2, no traceback)."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        # An error may quote what a client sent; a lone surrogate in it (a `\ud800` escape that a
        # parser read) is shown as that escape, so every face can encode the error it answers.
        message = escape_lone_surrogates(message)
        super().__init__(message)
        self.message = message
        self.hint = escape_lone_surrogates(hint) if hint else hint

    def one_line(self) -> str:
        """The message and its next step, on one line."""
        return f"{self.message} {self.hint}".strip() if self.hint else self.message


class Cancelled(AwlError):
    """Long work (a model load, a turn, a reward) stopped because someone asked it to. `by`:
    who, when a face answers it differently ("client", or "closing": a server shutting down)."""

    def __init__(self, message: str, hint: str | None = None, *, by: str = "") -> None:
        super().__init__(message, hint)
        self.by = by


class InputError(AwlError):
    """Bad user input: an action, a script line, an option value."""


class ActionError(InputError):
    """An agent action the domain cannot accept."""


class ModelError(AwlError):
    """A model file that is missing, not a GGUF, or that llama.cpp refuses."""


class ModelLoadError(ModelError):
    """llama.cpp failed to load a file that looked like a GGUF."""


class TrajectoryError(AwlError):
    """A trajectory file that cannot be read or written."""


class GenerationError(AwlError):
    """A generation that could not run or continue (the backend is busy, llama.cpp failed)."""


class RequestRefused(GenerationError):
    """A server refused one request for what it holds (too long, malformed); others may pass."""


class BackendBusy(GenerationError):
    """A backend serves one generation at a time; another one is still in flight."""


class WorldStoreError(AwlError):
    """A shared world's store cannot be opened, read or written (worlds/)."""


def a_or_an(word: str) -> str:
    """`word` with its article, as it sounds: "an os session", "an android world", "a web page"."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def refuse_unknown(given: Iterable[str], accepted: Iterable[str], where: str, *, shown: str = "",
                   also: Iterable[str] = ()) -> None:
    """InputError naming every one of `given` not in `accepted` (`Unknown option `x` for WHERE.`),
    each with a "did you mean" (from `accepted` and `also`: names taken elsewhere, such as a
    named parameter), and what is accepted (`shown` first: the options taken elsewhere)."""
    accepted = tuple(accepted)
    unknown = sorted(set(given) - set(accepted))
    if not unknown:
        return
    known = (*accepted, *also)
    if len(unknown) == 1:
        message, guesses = f"Unknown option `{unknown[0]}` for {where}.", did_you_mean(unknown[0], known)
    else:
        message = f"Unknown options {', '.join(f'`{word}`' for word in unknown)} for {where}."
        guesses = " ".join(f"`{word}`: {guess[0].lower()}{guess[1:]}" for word in unknown
                           if (guess := did_you_mean(word, known)))
    raise InputError(message, f"{guesses} Accepted: {shown}{', '.join(accepted)}.".lstrip())


#: The most of a refused name an error shows back.
SHOWN_CHARS = 80


def shown_name(value: Any) -> str:
    """A client's value as an error may show it: one line, at most SHOWN_CHARS characters, no
    control character and no lone surrogate (an answer must always encode as UTF-8)."""
    if not isinstance(value, str):
        return f"({type(value).__name__})"
    text = "".join(char if char.isprintable() and not 0xD800 <= ord(char) <= 0xDFFF else "\N{REPLACEMENT CHARACTER}"
                   for char in value[:SHOWN_CHARS + 1])
    text = text.replace("`", "'")
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}…"
