"""Where the CLI writes: results on stdout, status for people on stderr."""

from __future__ import annotations

from rich.console import Console


def stderr_console() -> Console:
    """Status lines for people; never wrapped, so paths stay copyable."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


def facts_console() -> Console:
    """Wrap to the terminal; into a pipe or a file, keep each fact on one line for grep."""
    console = Console(highlight=False)
    return console if console.is_terminal else Console(highlight=False, width=400)
