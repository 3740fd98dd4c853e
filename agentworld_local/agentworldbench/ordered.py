"""Putting a results file (predictions, verdicts) in its input's order, or taking rows out.

Rows are appended as they finish, so that an interruption loses nothing; that order is
the work's, not the input file's. The official run writes its rows in the input's order,
so a run that ends puts its file in that order: the file is written whole beside the old
one and renamed over it (files.writing_whole), so a kill part-way leaves the old file, every
row in it. The same rewrite takes out rows a rerun does again (`--retry-failed`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agentworld_local.errors import TrajectoryError
from agentworld_local.files import os_error_text, writing_whole
from agentworld_local.trajectory.appender import write_all

#: The input line a results line names (its side record's `line`).
LineOf = Callable[[bytes], int]


def rewrite_in_order(path: Path, line_of: LineOf, *, keep: Callable[[bytes], bool] | None = None) -> int:
    """Rewrite `path` with its lines in the order of the input lines they name, without those
    `keep` refuses; nothing is written when that changes nothing. Returns the lines taken out.
    TrajectoryError (the file left as it was) when it cannot be written."""
    entries, offset, dropped, blank = [], 0, 0, False
    try:
        with open(path, "rb") as handle:
            for raw in handle:
                if not raw.strip():
                    blank = True
                elif keep is None or keep(raw):
                    entries.append((line_of(raw), offset, len(raw)))
                else:
                    dropped += 1
                offset += len(raw)
        ordered = sorted(entries)
        if ordered == entries and not dropped and not blank:
            return 0
        with open(path, "rb") as source, writing_whole(path, overwrite=True) as target:
            for _, start, length in ordered:
                source.seek(start)
                write_all(target, source.read(length))
    except OSError as error:
        raise TrajectoryError(
            f"could not rewrite {path} in the input's order: {os_error_text(error)}; it is left as it was, every row in it.",
            "Free disk space, then run the same command again: it puts the file in order.",
        ) from None
    return dropped
