"""The file `awl bench judge` writes: each prediction row with the judge's verdict added.

Each line is the prediction row, every field kept, with the fields the official scoring
reads (total_score, the five dimensions, failed, strengths, weaknesses, ...) and a side
record, `awl_judge`: its version, the row's line in the predictions file and the judge
(model and endpoint, never a key; the user message's wording; how negative scores were
read). Lines are appended as rows finish (in any order when several are judged at once),
each fsynced, and a run that ends puts the file in the predictions' order (ordered.py). A
rerun with the same `--out` skips the lines already judged (failed ones too: with
`retry_failed` the rows whose judging failed are taken out and judged again), cuts off
an unfinished last line, and refuses a file from another judge.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agentworld_local.agentworldbench.judge import JUDGE_FAILED
from agentworld_local.agentworldbench.ordered import rewrite_in_order
from agentworld_local.agentworldbench.predictions import side_of_line
from agentworld_local.errors import InputError, TrajectoryError
from agentworld_local.files import cannot_write
from agentworld_local.trajectory.appender import AppendFailed, LineAppender, read_whole_lines
from agentworld_local.trajectory.jsonl import encode_line

SIDE = "awl_judge"
SIDE_VERSION = 1
_OTHER = "Choose another `--out`, or give the judge it was written with to go on."


class JudgedFile:
    def __init__(self, path: Path, lines: list[int], cut_bytes: int, retried: int = 0) -> None:
        self.path = path
        self.done = set(lines)  # predictions lines already judged here
        self.cut_bytes = cut_bytes
        #: Rows whose judging had failed, taken out of the file to be judged again.
        self.retried = retried
        self._order = list(lines)
        self._lines = LineAppender(path)

    @classmethod
    def open(cls, path: str | Path, judge: dict[str, Any], *, source: Path, retry_failed: bool = False) -> "JudgedFile":
        path = Path(path)
        if path.is_dir() or (path.exists() and not path.is_file()):
            raise InputError(f"--out {path} is not a regular file.", "Give a file name, e.g. `--out judged.jsonl`.")
        if path.exists() and source.exists() and os.path.samefile(path, source):
            raise InputError(f"--out {path} is the predictions file itself.", "Write the verdicts to another file.")
        if not path.exists():
            return cls(path, [], 0)
        try:
            found, cut = read_whole_lines(path, lambda raw, number: _judged_line(raw, number, path, judge))
        except OSError as error:
            raise InputError(f"Cannot read {path} ({error.strerror}).", "Check its permissions, or choose another `--out`.") from None
        retried = 0
        if retry_failed and any(failed for _, failed in found):
            retried = rewrite_in_order(path, _line_of, keep=lambda raw: not _judging_failed(_row(raw)))
            found = [(line, False) for line, failed in found if not failed]
        return cls(path, [line for line, _ in found], cut, retried)

    def append(self, row: dict[str, Any]) -> None:
        """Write one judged row and push it to the disk (a failed write is cut back, one error line)."""
        try:
            self._lines.append(encode_line(row))
            self._order.append(row[SIDE]["line"])
        except OSError as error:
            raise cannot_write(self.path, error, kind=TrajectoryError) from None
        except AppendFailed as failed:
            raise TrajectoryError(
                f"could not save a verdict to {self.path}: {failed.reason}; every verdict saved before it is intact.",
                "Free disk space, then run the same command again: it goes on after the saved rows.",
            ) from None

    def close(self) -> None:
        self._lines.close()

    def in_input_order(self) -> None:
        """Close the file and put its lines in the predictions' order (TrajectoryError when
        that cannot be written; the file is then as it was)."""
        self.close()
        if self._order != sorted(self._order):
            rewrite_in_order(self.path, _line_of)
            self._order.sort()


def side_record(line: int, judge: dict[str, Any]) -> dict[str, Any]:
    return {"version": SIDE_VERSION, "line": line, "judge": judge}


#: Judge settings recorded since the first files: a line without one goes with any value.
_LATER_KEYS = ("user_message", "drop_negative_scores")


def _same_judge(had: Any, wanted: dict[str, Any]) -> bool:
    return isinstance(had, dict) and had == {k: v for k, v in wanted.items() if k in had or k not in _LATER_KEYS}


def _judging_failed(row: dict[str, Any]) -> bool:
    """The official run's mark of a row its judge could not score (not one without a prediction)."""
    return row.get("error_message") == JUDGE_FAILED


def _row(raw: bytes) -> dict[str, Any]:
    found = side_of_line(raw, "a judged line", SIDE)
    assert found is not None  # checked when the file was opened
    return found[0]


def _line_of(raw: bytes) -> int:
    return _row(raw)[SIDE]["line"]


def _judged_line(raw: bytes, number: int, path: Path, judge: dict[str, Any]) -> tuple[int, bool]:
    where = f"{path} line {number}"
    found = side_of_line(raw, where, SIDE)
    if found is None:
        raise InputError(f"{where} was not written by `awl bench judge`.", "Choose another `--out`; awl only goes on in a file it wrote.")
    row, side, line = found
    if side.get("version") != SIDE_VERSION:
        raise InputError(f"{where} has a side record of version {side.get('version')!r}; this awl writes {SIDE_VERSION}.", _OTHER)
    if not _same_judge(side.get("judge"), judge):
        raise InputError(f"{where} was judged by {side.get('judge')}, not {judge}.", _OTHER)
    return line, _judging_failed(row)
