"""Reading files that users name: regular files only, with a size limit, UTF-8 (a BOM is accepted).

A FIFO or a device (`/dev/zero`) given where a file is expected must be refused at once,
not read forever.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agentworld_local.errors import AwlError, InputError

#: Scripts, scenarios, states, tool files: far below this. Trajectories use their own reader.
DEFAULT_LIMIT = 64 * 1024 * 1024


def check_regular_file(path: Path, what: str, error: type[AwlError] = InputError) -> int:
    """The file's size; raises `error` when it is missing, a directory, or not a regular file."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise error(f"The {what} {path} does not exist.", "Check the path.") from None
    except OSError as problem:
        raise error(f"Cannot open the {what} {path}: {problem.strerror}.", "Check the path and its permissions.") from None
    if stat.S_ISDIR(info.st_mode):
        raise error(f"The {what} {path} is a directory, not a file.", "Give the path of a file inside it.")
    if not stat.S_ISREG(info.st_mode):
        raise error(
            f"The {what} {path} is not a regular file (a pipe or a device).",
            "Save the content to a file first and pass that file.",
        )
    return info.st_size


def read_bytes(path: str | Path, what: str, *, limit: int = DEFAULT_LIMIT, error: type[AwlError] = InputError) -> bytes:
    """The bytes of a regular file of at most `limit` bytes."""
    path = Path(path)
    size = check_regular_file(path, what, error)
    if size > limit:
        raise error(
            f"The {what} {path} is {size:,} bytes; awl reads at most {limit:,}.",
            "Pass a smaller file.",
        )
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)  # a file that grew since stat still stops here
    except OSError as problem:
        raise error(f"Cannot read the {what} {path}: {problem.strerror}.", "Check its permissions.") from None
    if len(data) > limit:
        raise error(f"The {what} {path} is larger than {limit:,} bytes.", "Pass a smaller file.")
    return data


def read_text(path: str | Path, what: str, *, limit: int = DEFAULT_LIMIT, error: type[AwlError] = InputError) -> str:
    """UTF-8 text of a regular file; a leading byte-order mark is dropped; bad bytes are named."""
    data = read_bytes(path, what, limit=limit, error=error)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as problem:
        line = data[: problem.start].count(b"\n") + 1
        raise error(
            f"The {what} {path} is not UTF-8 text (byte 0x{data[problem.start]:02x} on line {line}).",
            "Save it as UTF-8 and try again.",
        ) from None
