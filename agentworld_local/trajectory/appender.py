"""Appending whole lines to a JSONL file: the discipline trajectories and benchmark results
(predictions, verdicts) share.

Each line is written unbuffered, flushed and fsynced before the call returns, so a killed
process loses at most the line it was writing. A failed write (a full disk) cuts the file
back to the end of its last whole line, so readers and the next append find a clean file.
A results file that a rerun goes on in is read back line by line (`read_whole_lines`), its
unfinished last line cut off, and appended to with `LineAppender`.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TypeVar

from agentworld_local.files import os_error_text, remove_stale_temporaries

T = TypeVar("T")


class AppendFailed(Exception):
    """A line could not be written; `cut_back`: the file was cut back to its last whole line."""

    def __init__(self, reason: str, cut_back: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.cut_back = cut_back


def open_unbuffered(path: Path, mode: str) -> BinaryIO:
    """Unbuffered: a failed write leaves nothing in a buffer for `close()` to retry."""
    return open(path, mode, buffering=0)  # type: ignore[return-value]


def append_line(handle: BinaryIO, line: bytes, size: int) -> int:
    """Write one whole line after the first `size` bytes (the end of the last whole line) and
    push it to the disk; returns the new size. On failure: cut back to `size`, AppendFailed."""
    try:
        write_all(handle, line)
        handle.flush()
        os.fsync(handle.fileno())
    except OSError as error:
        raise AppendFailed(os_error_text(error), cut_back(handle, size)) from None
    return size + len(line)


def cut_back(handle: BinaryIO, size: int) -> bool:
    """Truncate to `size` bytes; False when even that failed."""
    try:
        handle.truncate(size)
        handle.seek(size)
        os.fsync(handle.fileno())
    except OSError:
        return False
    return True


def write_all(handle: BinaryIO, data: bytes) -> None:
    """An unbuffered write may write only part; loop until every byte is out."""
    view = memoryview(data)
    while view:
        written = handle.write(view)
        if not written:
            raise OSError(errno.EIO, "the write made no progress")
        view = view[written:]




def read_whole_lines(path: Path, check: Callable[[bytes, int], T]) -> tuple[list[T], int]:
    """`check(line, number)` for each whole non-blank line of an existing file (1-based numbers,
    read one at a time: results files grow as large as their input); an unfinished last line
    (a kill mid-write) is cut off. Returns (the checks' results, bytes cut off); OSError for
    the caller's message."""
    results: list[T] = []
    end = 0  # the end of the last whole line; what follows it is cut off
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.endswith(b"\n"):
                break
            if raw.strip():
                results.append(check(raw, number))
            end += len(raw)
    cut = path.stat().st_size - end
    if cut:
        os.truncate(path, end)
    return results, cut


class LineAppender:
    """Whole lines at the end of a results file, which is created with its folder on the first."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: BinaryIO | None = None
        self._size = 0  # bytes of whole lines: where a failed write is cut back to

    def append(self, line: bytes) -> None:
        """OSError when the file cannot be opened; AppendFailed when the line could not be written."""
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_temporaries(self.path.parent)  # what a killed fork or export left there
            self._handle = open_unbuffered(self.path, "ab")
            self._size = self._handle.seek(0, os.SEEK_END)
        self._size = append_line(self._handle, line, self._size)

    def close(self) -> None:
        """Never raises: every line was already fsynced, or its failure reported."""
        handle, self._handle = self._handle, None
        if handle is not None:
            with contextlib.suppress(OSError):
                handle.close()
