"""The file `awl bench judge` writes: each prediction row with the judge's verdict added.

Each line is the prediction row, every field kept, with the fields the official scoring
reads (total_score, the five dimensions, failed, strengths, weaknesses, ...) and a side
record, `awl_judge`: its version, the row's line in the predictions file and the judge
(model and endpoint, never a key). Lines are appended as rows finish (in any order when
several are judged at once), each fsynced; a rerun with the same `--out` skips the lines
already judged, cuts off an unfinished last line, and refuses a file from another judge.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agentworld_local.agentworldbench.predictions import side_of_line
from agentworld_local.errors import InputError, TrajectoryError
from agentworld_local.files import os_error_text
from agentworld_local.trajectory.appender import AppendFailed, LineAppender, read_whole_lines
from agentworld_local.trajectory.jsonl import encode_line

SIDE = "awl_judge"
SIDE_VERSION = 1
_OTHER = "Choose another `--out`, or give the judge it was written with to go on."


class JudgedFile:
    def __init__(self, path: Path, done: set[int], cut_bytes: int) -> None:
        self.path = path
        self.done = done  # predictions lines already judged here
        self.cut_bytes = cut_bytes
        self._lines = LineAppender(path)

    @classmethod
    def open(cls, path: str | Path, judge: dict[str, Any], *, source: Path) -> "JudgedFile":
        path = Path(path)
        if path.is_dir() or (path.exists() and not path.is_file()):
            raise InputError(f"--out {path} is not a regular file.", "Give a file name, e.g. `--out judged.jsonl`.")
        if path.exists() and source.exists() and os.path.samefile(path, source):
            raise InputError(f"--out {path} is the predictions file itself.", "Write the verdicts to another file.")
        if not path.exists():
            return cls(path, set(), 0)
        try:
            done, cut = read_whole_lines(path, lambda raw, number: _judged_line(raw, number, path, judge))
        except OSError as error:
            raise InputError(f"Cannot read {path} ({error.strerror}).", "Check its permissions, or choose another `--out`.") from None
        return cls(path, set(done), cut)

    def append(self, row: dict[str, Any]) -> None:
        """Write one judged row and push it to the disk (a failed write is cut back, one error line)."""
        try:
            self._lines.append(encode_line(row))
        except OSError as error:
            raise TrajectoryError(f"cannot write {self.path}: {os_error_text(error)}.", "Choose a writable `--out`.") from None
        except AppendFailed as failed:
            raise TrajectoryError(
                f"could not save a verdict to {self.path}: {failed.reason}; every verdict saved before it is intact.",
                "Free disk space, then run the same command again: it goes on after the saved rows.",
            ) from None

    def close(self) -> None:
        self._lines.close()


def side_record(line: int, judge: dict[str, Any]) -> dict[str, Any]:
    return {"version": SIDE_VERSION, "line": line, "judge": judge}


def _judged_line(raw: bytes, number: int, path: Path, judge: dict[str, Any]) -> int:
    where = f"{path} line {number}"
    found = side_of_line(raw, where, SIDE)
    if found is None:
        raise InputError(f"{where} was not written by `awl bench judge`.", "Choose another `--out`; awl only goes on in a file it wrote.")
    _, side, line = found
    if side.get("version") != SIDE_VERSION:
        raise InputError(f"{where} has a side record of version {side.get('version')!r}; this awl writes {SIDE_VERSION}.", _OTHER)
    if side.get("judge") != judge:
        raise InputError(f"{where} was judged by {side.get('judge')}, not {judge}.", _OTHER)
    return line
