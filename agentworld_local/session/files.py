"""Where sessions are saved, the rule that a saved file is never overwritten, and the one
wording of "cannot write PATH" (with its real reason and fix) that every command uses."""

from __future__ import annotations

import errno
import json
import os
import tempfile
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from agentworld_local.errors import InputError
from agentworld_local.files import MAX_NAME_BYTES, cannot_write, writing_whole  # noqa: F401 - cannot_write: faces import it from here
from agentworld_local.paths import data_dir, sessions_dir

#: Whether ensure_new_file records a new session in the index (sessions_index): on for the
#: commands a user starts a session with (cli/main.py), off for a program that imports awl
#: (a gym environment writes thousands; they are its own).
_remembering = False

def default_session_path(domain: str, folder: Path | None = None) -> Path:
    """A new file in the sessions folder, `<stamp>-<domain>.jsonl` (every face names its files
    so); a second session started in the same second gets `-2`, `-3`, ... (awl never
    overwrites a session)."""
    folder = sessions_dir() if folder is None else folder
    stem = f"{datetime.now():%Y%m%d-%H%M%S}-{domain}"
    path, number = folder / f"{stem}.jsonl", 1
    while os.path.lexists(path):
        number += 1
        path = folder / f"{stem}-{number}.jsonl"
    return path


def _check_name_length(path: Path) -> None:
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > MAX_NAME_BYTES:
            shown = Path(*(p if len(p) <= 40 else p[:40] + "…" for p in path.parts))
            raise cannot_write(shown, errno.ENAMETOOLONG, reason=(
                f"a name in it is {size:,} bytes long; file systems allow at most {MAX_NAME_BYTES} bytes per name"))


def check_can_write(path: Path, *, suffix: str = ".jsonl") -> None:
    """Refuse, before a model loads, a new file that cannot be created there: a name too long,
    a directory, a file where a directory should be, no permission, a read-only or full
    drive. Nothing is left behind. `suffix`: the kind of file, for the name a hint suggests."""
    _check_name_length(path)
    if os.path.isdir(path):
        raise cannot_write(path, errno.EISDIR, name=f"NAME{suffix}")
    if os.path.lexists(path):
        raise cannot_write(path, errno.EEXIST)
    ancestor = path.parent
    while not os.path.lexists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not os.path.isdir(ancestor):
        raise cannot_write(path, errno.ENOTDIR, reason=f"{ancestor} is a file, not a directory")
    try:
        with tempfile.TemporaryFile(dir=ancestor):  # really try: permissions, a read-only mount
            pass
    except OSError as error:
        raise cannot_write(path, error) from None


def ensure_new_file(path: Path, *, session: bool = True, suffix: str = ".jsonl") -> None:
    """Refuse before the model loads or anything is written: awl never overwrites a saved
    file, and a file that cannot be created is named with its reason (check_can_write).
    A session file (not an export: `session=False`) is added to the index of sessions, so
    `awl sessions list` and `--resume last` find it wherever it is written. `suffix`: what
    kind of file it is (`.cast`, `.html`), for the name a hint suggests."""
    check_can_write(Path(path), suffix=suffix)
    if session and _remembering:
        remember_session(Path(path))


def remember_sessions(on: bool = True) -> None:
    """Turn on (or off) recording new session files in the index (cli/main.py turns it on
    for `awl run`, `awl play`, `awl demo`, `awl fork`)."""
    global _remembering
    _remembering = on


def sessions_index() -> Path:
    """`<awl data dir>/sessions.index`: one JSON line per session file awl was asked to
    write, `{"file": ABSOLUTE PATH, "at": SECONDS}`; listing.py reads and prunes it."""
    return data_dir() / "sessions.index"


def remember_session(path: Path) -> None:
    """Append `path` to the index. Best effort: a session is never refused for its index."""
    line = json.dumps({"file": os.path.abspath(path), "at": time.time()}, ensure_ascii=True) + "\n"
    try:
        index = sessions_index()
        index.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(index, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, line.encode("ascii"))  # one write of one short line: appends stay whole
        finally:
            os.close(descriptor)
    except OSError:
        pass


def write_whole(path: Path, chunks: Iterable[bytes]) -> None:
    """An `--out` file written whole (files.writing_whole): a failure or a kill part-way leaves
    no partial file to mistake for a result or to block the rerun. Errors are one InputError."""
    try:
        with writing_whole(path) as handle:
            for chunk in chunks:
                handle.write(chunk)
    except OSError as error:  # FileExistsError included
        raise cannot_write(path, error, after="" if isinstance(error, FileExistsError) else "; no file was left behind") from None
