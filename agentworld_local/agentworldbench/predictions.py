"""The predictions file of `awl bench predict`: the official evaluation's output format.

QwenLM/Qwen-AgentWorld eval/eval.py (`infer`) writes each benchmark row back with one
field added, `gen`: the message content an OpenAI-compatible server returned for it. The
README serves the model with a reasoning parser, so that content is the answer after
thinking, tags included (`<predicted_observation>...`); the judge step strips any thinking
and reads the last observation block itself. The judge and score steps read `gen`, `task`,
`prompt`, `response`, `turn_idx` and `current_prompt`, and carry every other field along.

So each line here is the input row, every field as it was, plus `gen`, plus `awl_predict`:
the row's line in the input, the settings it was predicted with (model and its file's
identity, sampling, thinking, seed), its token counts and, for a row the run failed as the
official run fails it (an empty `gen`), `failed` with the reason and its `cause`: `context`
(it does not fit) or `request` (its request kept failing). The official steps ignore
`awl_predict`; a rerun with the same `--out` reads it to skip finished rows (failed ones
too, unless `retry_failed` takes the `request` ones out to do them again) and to refuse a
file from another input, another model file or other settings. Lines are appended as rows
finish (trajectory/appender.py: one whole line at a time, fsynced, a failed write cut
back), so an interruption loses at most the rows in flight; an unfinished last line (a
kill mid-write) is cut off and redone. A run that ends puts the file in the input's order
(ordered.py), as the official run writes it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld_local.agentworldbench.ordered import rewrite_in_order
from agentworld_local.agentworldbench.rows import BenchRow
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.errors import InputError, TrajectoryError
from agentworld_local.files import cannot_write
from agentworld_local.safe_parse import SyntaxProblem, load_json
from agentworld_local.trajectory.appender import AppendFailed, LineAppender, read_whole_lines
from agentworld_local.trajectory.jsonl import dumps, encode_line

GEN = "gen"
SIDE = "awl_predict"
#: The side record's format: a rerun goes on only in a file whose records it can read.
#: 2: `model_file` (the model file's size and hash), `failed`, the sampling's generation rules.
SIDE_VERSION = 2
#: The settings a file's rows must share for a rerun to go on in it (the model by its file, not its name).
SETTING_KEYS = ("model_file", "sampling", "think", "seed")
GO_ON_HINT = "Give the options it was written with to go on, or choose another `--out`."
#: `awl_predict.cause` of a row whose request kept failing (`context`: it did not fit).
REQUEST_FAILED = "request"


@dataclass(frozen=True)
class RunSettings:
    """What shapes a prediction besides the row: recorded on every line, compared on resume."""

    model: str
    sampling: SamplingConfig
    think: ThinkBudget
    seed: int
    #: The model file's identity: {"size", "sha256", "sha256_scope"} (models/gguf_file.file_identity).
    model_file: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "model_file": self.model_file, "sampling": self.sampling.to_dict(),
                "think": self.think.label(), "seed": self.seed}


def prediction_row(row: BenchRow, gen: str, side: dict[str, Any]) -> dict[str, Any]:
    """The input row with `gen` (in place if the row already had one) and the side record."""
    out = dict(row.fields)
    out[GEN] = gen
    out[SIDE] = {"version": SIDE_VERSION, **side}
    return out


def _row_text(fields: dict[str, Any]) -> str:
    """A row's own fields as JSON text, for comparing an output line with its input row."""
    return dumps({key: value for key, value in fields.items() if key not in (GEN, SIDE)})


def _describe(value: Any) -> str:
    return dumps(value) if not isinstance(value, str) else value


class PredictionsFile:
    """An `--out` file: what it already holds (checked against this run), then appends."""

    def __init__(self, path: Path, lines: list[int], cut_bytes: int, retried: int = 0) -> None:
        self.path = path
        #: Input lines already predicted in this file.
        self.done = set(lines)
        #: Bytes of an unfinished last line that `open` cut off (0 when there was none).
        self.cut_bytes = cut_bytes
        #: Rows whose request had failed, taken out of the file to be predicted again.
        self.retried = retried
        self._order = list(lines)  # the input line of each line of the file, in the file's order
        self._lines = LineAppender(path)

    @staticmethod
    def check_path(path: Path, source: Path) -> None:
        """Refuse an `--out` that cannot be a predictions file (checked before anything else)."""
        if path.is_dir():
            raise InputError(f"--out {path} is a directory.", "Give a file name, e.g. `--out predictions.jsonl`.")
        if path.exists() and not path.is_file():
            raise InputError(f"--out {path} is not a regular file.", "Give a plain file name, e.g. `--out predictions.jsonl`.")
        if path.exists() and source.exists() and os.path.samefile(path, source):
            raise InputError(f"--out {path} is the benchmark file itself.", "Write the predictions to another file.")

    @classmethod
    def open(cls, path: str | Path, rows: Mapping[int, dict], settings: RunSettings, *, source: Path,
             retry_failed: bool = False) -> "PredictionsFile":
        """Check an existing `--out` against the input rows (line -> the row's fields as read) and the settings.

        Refuses a directory, a non-regular file, the input file itself, a line that is not a
        prediction, and a file written from another input or with other settings. An
        unfinished last line is cut off (its row is predicted again); with `retry_failed`, so
        are the rows whose request had failed.
        """
        path = Path(path)
        cls.check_path(path, source)
        if not path.exists() or path.stat().st_size == 0:
            return cls(path, [], 0)
        wanted = settings.to_dict()
        try:
            found, cut = read_whole_lines(path, lambda raw, number: _check_line(raw, number, path, rows, wanted, source))
        except OSError as error:
            raise InputError(f"Cannot read {path} ({error.strerror}).", "Check its permissions, or choose another `--out`.") from None
        retried = 0
        if retry_failed and any(failed for _, failed in found):
            retried = rewrite_in_order(path, _line_of, keep=lambda raw: not _request_failed(raw))
            found = [(line, False) for line, failed in found if not failed]
        return cls(path, [line for line, _ in found], cut, retried)

    def append(self, fields: dict[str, Any]) -> None:
        """Write one prediction line and push it to the disk before the next row starts.

        A failed write cuts the file back to its last whole row and raises one TrajectoryError
        that says so; the rows before it are intact and a rerun goes on after them.
        """
        line = encode_line(fields)
        try:
            with _signals_held():  # a Ctrl+C or SIGTERM lands after the line, not inside it
                self._lines.append(line)
            self._order.append(fields[SIDE]["line"])
        except OSError as error:
            raise cannot_write(self.path, error, kind=TrajectoryError) from None
        except AppendFailed as failed:
            kept = "it was cut back to its last whole row" if failed.cut_back else "its last line is unfinished (a rerun cuts it off)"
            raise TrajectoryError(
                f"could not save row {fields.get(SIDE, {}).get('line')} to {self.path}: {failed.reason}; {kept}, "
                "and every row saved before it is intact.",
                "Free disk space, then run the same command again: it goes on after the saved rows.",
            ) from None

    def close(self) -> None:
        """Close the file. Never raises: every line was already fsynced, or its failure reported."""
        self._lines.close()

    def in_input_order(self) -> None:
        """Close the file and put its lines in the input's order (TrajectoryError when that
        cannot be written; the file is then as it was)."""
        self.close()
        if self._order != sorted(self._order):
            rewrite_in_order(self.path, _line_of)
            self._order.sort()


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back (where the platform can); they are delivered on exit."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _check_line(
    raw: bytes, number: int, path: Path, rows: Mapping[int, dict], wanted: dict[str, Any], source: Path
) -> tuple[int, bool]:
    """(the input line an existing output line predicted, whether its request had failed);
    InputError when it does not belong here."""
    where = f"{path} line {number}"
    found = side_of_line(raw, where, SIDE)
    if found is None or GEN not in found[0]:
        raise InputError(
            f"{path} is not a file of `awl bench predict` (line {number} has no `{SIDE}` record).",
            "Choose another `--out`; awl only goes on in a file it wrote.",
        )
    data, side, line = found
    if side.get("version") != SIDE_VERSION:
        raise InputError(
            f"{where}: its `{SIDE}` record has version {side.get('version')!r}; this awl reads version {SIDE_VERSION}.",
            "Choose another `--out`, or go on with the awl that wrote it.",
        )
    row = rows.get(line)
    if row is None or _row_text(row) != _row_text(data):
        raise InputError(
            f"{path} holds predictions for another benchmark file: its line {number} is not row {line} of {source}.",
            "Choose another `--out` for this file.",
        )
    had_file, asked_file = side.get("model_file") or None, wanted["model_file"] or None
    # A model file is known by its identity whatever its name; a server's model by its name.
    if had_file != asked_file or (asked_file is None and side.get("model") != wanted["model"]):
        raise InputError(
            f"{path} was written with the model {_model_named(side)}; this run loads {_model_named(wanted)}.",
            "Give the model file it was written with to go on, or choose another `--out`.",
        )
    for key in SETTING_KEYS:
        if side.get(key) != wanted[key]:
            name, had, asked = _first_difference(key, side.get(key), wanted[key])
            raise InputError(f"{path} was written with {name} {had}; this run asks for {asked}.", GO_ON_HINT)
    return line, side.get("cause") == REQUEST_FAILED


def _side(raw: bytes) -> dict[str, Any]:
    """The side record of a line already checked (by `open` or as it was written)."""
    found = side_of_line(raw, "a predictions line", SIDE)
    assert found is not None
    return found[1]


def _line_of(raw: bytes) -> int:
    return _side(raw)["line"]


def _request_failed(raw: bytes) -> bool:
    return _side(raw).get("cause") == REQUEST_FAILED


def side_of_line(raw: bytes, where: str, key: str) -> tuple[dict[str, Any], dict[str, Any], int] | None:
    """(the row, its side record `key`, the input line that record names) from a line of a results
    file awl writes; None when the line has no such record; InputError when it is not JSON."""
    try:
        data = load_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, SyntaxProblem):
        raise InputError(f"{where} is not a JSON row.", "Choose another `--out`; awl only goes on in a file it wrote.") from None
    side = data.get(key) if isinstance(data, dict) else None
    line = side.get("line") if isinstance(side, dict) else None
    if not isinstance(line, int) or isinstance(line, bool):
        return None
    return data, side, line


def _model_named(record: dict[str, Any]) -> str:
    """A model as a side record names it: its name, its file's size and the start of its hash."""
    identity = record.get("model_file")
    if not isinstance(identity, dict) or not identity:
        return _describe(record.get("model"))
    size, digest = identity.get("size"), identity.get("sha256")
    facts = [f"{size:,} bytes" if isinstance(size, int) else None, f"sha256 {digest[:12]}" if isinstance(digest, str) else None]
    return f"{_describe(record.get('model'))} ({', '.join(fact for fact in facts if fact) or 'file identity unknown'})"


def _first_difference(key: str, had: Any, asked: Any) -> tuple[str, str, str]:
    """(setting name, value in the file, value asked for), down to a sampling field."""
    if isinstance(had, dict) and isinstance(asked, dict):
        for name in asked:
            if had.get(name) != asked[name]:
                return name.replace("_", "-"), _describe(had.get(name)), _describe(asked[name])
    return key, _describe(had), _describe(asked)
