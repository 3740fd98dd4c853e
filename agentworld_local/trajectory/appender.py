"""Appending whole lines to a JSONL file: the discipline trajectories and benchmark predictions share.

Each line is written unbuffered, flushed and fsynced before the call returns, so a killed
process loses at most the line it was writing. A failed write (a full disk) cuts the file
back to the end of its last whole line, so readers and the next append find a clean file.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import BinaryIO


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
        raise AppendFailed(reason(error), cut_back(handle, size)) from None
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


def reason(error: OSError) -> str:
    """Why a write failed, in a user's words."""
    if error.errno == errno.ENOSPC:
        return "the disk is full"
    return error.strerror or str(error) or type(error).__name__
