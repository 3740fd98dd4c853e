"""Files that users name: regular files only, with a size limit, UTF-8 (a BOM is accepted);
names no file system can hold; names awl derives from data; files written whole.

A FIFO or a device (`/dev/zero`) given where a file is expected must be refused at once,
not read forever. A name component over 255 bytes makes every file call fail with
ENAMETOOLONG (Python's `Path.exists()` included): a given one is refused in one line, a
derived one (from a benchmark row's id) is shortened.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from agentworld_local.errors import AwlError, InputError

#: Scripts, scenarios, states, tool files: far below this. Trajectories use their own reader.
DEFAULT_LIMIT = 64 * 1024 * 1024
#: The longest name component (in bytes) of Linux, macOS and Windows file systems.
MAX_NAME_BYTES = 255
_HASH_CHARS = 12
#: writing_whole's temporary name ends `.PID-HEX.part`: the writer's process id, so the next
#: write in that folder can tell a killed writer's leftover from a live writer's file.
_TEMPORARY = re.compile(r"^\..*\.(\d{1,10})-[0-9a-f]{8}\.part$", re.DOTALL)
#: A temporary file untouched this long is a leftover even if its pid runs again (reused).
STALE_TEMPORARY_S = 3600.0


def user_path(value: str | Path, error: type[AwlError] = InputError) -> Path:
    """A path a user wrote, in an option or a config file alike: `~` is their home, `~name`
    that user's home; a user the system does not know is one line (Python raises RuntimeError)."""
    path = Path(value)
    text = str(value)
    if not text.startswith("~"):
        return path
    try:
        return path.expanduser()
    except RuntimeError:
        user = text[1:].split("/", 1)[0].split(os.sep, 1)[0]
        raise error(f"{text}: there is no user `{user}` on this system, so `~{user}` names no home folder.",
                    "Write the folder out in full, or `~/...` for your own home.") from None


def user_path_option(value: str | Path | None) -> Path | None:
    """`user_path` for a command's path option or argument (its Typer callback): every path a
    user gives on the command line, `--out=~/x` included (no shell expands that `~`)."""
    return None if value is None else user_path(value)


def check_name_length(path: str | Path, what: str = "file", error: type[AwlError] = InputError) -> None:
    """Refuse a path with a component no file system holds, before any file call fails on it."""
    for part in Path(path).parts:
        size = len(os.fsencode(part))
        if size > MAX_NAME_BYTES:
            shown = part if len(part) <= 40 else part[:40] + "…"
            raise error(
                f"A name in the {what} path, `{shown}`, is {size:,} bytes long; file systems allow at most "
                f"{MAX_NAME_BYTES} bytes per name.",
                "Choose a shorter name.",
            )


def fit_name(stem: str, suffix: str = "") -> str:
    """`stem + suffix` as a file name; a name over MAX_NAME_BYTES keeps the start of `stem`
    and ends with a hash of the whole stem, so different long stems stay different names."""
    name = stem + suffix
    if len(os.fsencode(name)) <= MAX_NAME_BYTES:
        return name
    digest = hashlib.sha256(os.fsencode(stem)).hexdigest()[:_HASH_CHARS]
    room = MAX_NAME_BYTES - len(os.fsencode(suffix)) - len(digest) - 1
    start = os.fsencode(stem)[:room].decode("utf-8", errors="ignore")  # never half a character
    return f"{start}-{digest}{suffix}"


def check_regular_file(path: Path, what: str, error: type[AwlError] = InputError) -> int:
    """The file's size; raises `error` when it is missing, a directory, or not a regular file."""
    check_name_length(path, what, error)
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


@contextmanager
def writing_whole(path: str | Path, *, overwrite: bool = False) -> Iterator[BinaryIO]:
    """A file written whole or not at all: the block writes a temporary file beside `path`,
    which is fsynced and renamed to `path` only when the block ends without an error.

    A crash, a kill or a full disk part-way leaves `path` as it was (absent, or the old
    file), never a shorter file that looks complete and blocks the rerun. Without
    `overwrite`, an existing `path` raises FileExistsError (checked at the rename, too:
    a file that appeared meanwhile is not replaced). OSError otherwise, for the caller's message.
    """
    path = Path(path)
    if not overwrite and os.path.lexists(path):
        raise FileExistsError(errno.EEXIST, "File exists", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent)
    temporary = path.with_name(fit_name(f".{path.name}", f".{os.getpid()}-{secrets.token_hex(4)}.part"))
    handle = open(temporary, "xb")
    try:
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        _publish(temporary, path, overwrite)
    except BaseException:
        with suppress(OSError):
            temporary.unlink()
        raise


def remove_stale_temporaries(folder: Path) -> None:
    """Remove what killed writers left in `folder`: writing_whole's hidden temporary files
    whose writer's process is gone (or that nobody touched for an hour). A live writer's
    file, this process's own included, is kept."""
    now = time.time()
    with suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            found = _TEMPORARY.match(entry.name)
            if found is None:
                continue
            with suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and (not _running(int(found.group(1)))
                                                   or now - info.st_mtime > STALE_TEMPORARY_S):
                    os.unlink(entry.path)


def _running(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":  # Windows' os.kill ends the process: only the age tells there
        return True
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's process, or cannot tell: kept
    return True


def _publish(temporary: Path, path: Path, overwrite: bool) -> None:
    if overwrite:
        os.replace(temporary, path)
    else:
        try:
            os.link(temporary, path)  # unlike a rename, refuses a file that appeared meanwhile
        except OSError as error:
            if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            if os.path.lexists(path):  # a file system without hard links
                raise FileExistsError(errno.EEXIST, "File exists", str(path)) from None
            os.rename(temporary, path)
        else:
            with suppress(OSError):  # published: a leftover temporary name is no failure
                temporary.unlink()
    with suppress(OSError):  # the new name survives a power cut only once its directory is synced
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def os_error_text(error: OSError) -> str:
    """What went wrong, for a message: `the disk is full`, `Permission denied`, ..."""
    if error.errno == errno.ENOSPC:
        return "the disk is full"
    return error.strerror or str(error) or type(error).__name__


#: A reason (errno) and the fix that goes with it, for `cannot_write`.
_REASONS: dict[int, tuple[str, str]] = {
    errno.EACCES: ("permission denied", "Choose a folder you can write to, or change its permissions."),
    errno.EPERM: ("permission denied", "Choose a folder you can write to, or change its permissions."),
    errno.EROFS: ("the file system is read-only", "Choose a folder on a writable drive."),
    errno.ENOSPC: ("the disk is full", "Free disk space or choose another drive, then run the same command again."),
    errno.EDQUOT: ("the disk quota is used up", "Free disk space or choose another drive, then run the same command again."),
    errno.ENAMETOOLONG: ("a name in it is too long", "Choose a shorter name."),
    errno.ENOTDIR: ("a part of it is a file, not a directory", "Choose a path inside a directory."),
    errno.EISDIR: ("it is a directory", "Give a file name inside it: {path}/{name}."),
    errno.EEXIST: ("it already exists and awl never overwrites a saved file",
                   "Choose another file name, or delete that one first."),
}


def cannot_write(path: str | Path, error: OSError | int, *, reason: str | None = None,
                 after: str = "", kind: type[AwlError] = InputError, name: str = "NAME.jsonl") -> AwlError:
    """`Cannot write PATH: REASON.` with the fix for that reason: the one wording of every
    command that writes a file (`awl run`, `awl demo`, `awl fork`, `awl export`, the TUI, a session file, a bench file);
    `kind`: the AwlError it is (a trajectory's is a TrajectoryError).
    `after` adds what happened to the file (", no file was left behind"); `name`: the file name
    a hint suggests inside a directory given as the file (`NAME.cast` for a recording)."""
    number = error if isinstance(error, int) else error.errno
    known, fix = _REASONS.get(number or 0, (None, "Choose another location, then run the same command again."))
    if reason is None:
        reason = known or (error.strerror if isinstance(error, OSError) and error.strerror else str(error))
    return kind(f"Cannot write {path}: {reason}{after}.", fix.replace("{path}", str(path)).replace("{name}", name))
