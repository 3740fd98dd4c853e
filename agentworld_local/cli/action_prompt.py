"""The `action>` prompt of `awl run` at a terminal: line editing (left/right, Ctrl+A/E, ...)
and up/down recall of earlier actions, kept between sessions in the data dir.

The standard library's `readline` does both, where Python has it (not on Windows); without
it the prompt still works, with the terminal's own line editing only.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

#: The prompt, on the terminal (readline writes it on stdout, the terminal it was given).
PROMPT = "action> "
#: Actions kept in the history file.
HISTORY_LENGTH = 1000


def _readline() -> ModuleType | None:
    try:
        import readline
    except ImportError:  # Windows, or a Python built without it
        return None
    return readline


class ActionPrompt:
    """Reads one action at a time with readline; every line is added to the history file at once,
    so a session that ends in any way keeps what was typed."""

    def __init__(self, history: Path) -> None:
        self.history = history
        self.readline = _readline()
        if self.readline is not None:
            self.readline.set_history_length(HISTORY_LENGTH)
            self.readline.clear_history()
            try:
                self.readline.read_history_file(str(history))
            except (OSError, UnicodeDecodeError):
                pass  # no history yet, or one that cannot be read: start without it

    @staticmethod
    def usable() -> bool:
        """readline edits lines only when stdin and stdout are the terminal (it draws on stdout)."""
        return _readline() is not None and sys.stdin.isatty() and sys.stdout.isatty()

    def read(self) -> str | None:
        """The next line typed (without its newline); None at the end of input (Ctrl+D)."""
        try:
            text = input(PROMPT)
        except EOFError:
            sys.stdout.write("\n")  # the shell's prompt starts on a line of its own
            return None
        if self.readline is not None and text.strip():
            self._save()
        return text

    def _save(self) -> None:
        assert self.readline is not None
        try:
            self.history.parent.mkdir(parents=True, exist_ok=True)
            self.readline.write_history_file(str(self.history))
        except OSError:
            pass  # a read-only data dir: recall still works within this session
