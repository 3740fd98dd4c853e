"""Where sessions are saved, and the rule that a saved file is never overwritten."""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from agentworld_local.errors import InputError
from agentworld_local.files import check_name_length, os_error_text, writing_whole
from agentworld_local.paths import sessions_dir


def default_session_path(domain: str, folder: Path | None = None) -> Path:
    """A new file in the sessions folder, named by the time and the domain; a second session
    started in the same second gets `-2`, `-3`, ... (awl never overwrites a session)."""
    folder = sessions_dir() if folder is None else folder
    stem = f"{datetime.now():%Y%m%d-%H%M%S}-{domain}"
    path, number = folder / f"{stem}.jsonl", 1
    while os.path.lexists(path):
        number += 1
        path = folder / f"{stem}-{number}.jsonl"
    return path


def ensure_new_file(path: Path) -> None:
    """Refuse before the model loads or anything is written: awl never overwrites a saved file."""
    check_name_length(path)
    if os.path.lexists(path):
        raise InputError(f"{path} already exists.", "Choose another `--out` file, or delete that one first.")


def write_whole(path: Path, chunks: Iterable[bytes]) -> None:
    """An `--out` file written whole (files.writing_whole): a failure or a kill part-way leaves
    no partial file to mistake for a result or to block the rerun. Errors are one InputError."""
    try:
        with writing_whole(path) as handle:
            for chunk in chunks:
                handle.write(chunk)
    except FileExistsError:
        raise InputError(f"{path} already exists.", "Choose another `--out` file, or delete that one first.") from None
    except OSError as error:
        raise InputError(
            f"Cannot write {path} ({os_error_text(error)}); no file was left behind.",
            "Free disk space or choose another location, then run the same command again.",
        ) from None
