"""The predictions file of `awl bench predict`: the official evaluation's output format.

QwenLM/Qwen-AgentWorld eval/eval.py (`infer`) writes each benchmark row back with one
field added, `gen`: the message content an OpenAI-compatible server returned for it. The
README serves the model with a reasoning parser, so that content is the answer after
thinking, tags included (`<predicted_observation>...`); the judge step strips any thinking
and reads the last observation block itself. The judge and score steps read `gen`, `task`,
`prompt`, `response`, `turn_idx` and `current_prompt`, and carry every other field along.

So each line here is the input row, every field as it was, plus `gen`, plus `awl_predict`:
the row's line in the input, the settings it was predicted with (model, sampling, thinking,
seed) and its token counts. The official steps ignore `awl_predict`; a rerun with the same
`--out` reads it to skip finished rows and to refuse a file from another input or other
settings. Lines are appended one at a time and flushed, so an interruption loses at most
the row in flight; an unfinished last line (a kill mid-write) is cut off and redone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld_local.agentworldbench.rows import BenchRow
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.errors import InputError
from agentworld_local.safe_parse import SyntaxProblem, load_json
from agentworld_local.trajectory.jsonl import dumps, encode_line

GEN = "gen"
SIDE = "awl_predict"
#: The side record's format: a rerun goes on only in a file whose records it can read.
SIDE_VERSION = 1
#: The settings a file's rows must share for a rerun to go on in it.
SETTING_KEYS = ("model", "sampling", "think", "seed")
GO_ON_HINT = "Give the options it was written with to go on, or choose another `--out`."


@dataclass(frozen=True)
class RunSettings:
    """What shapes a prediction besides the row: recorded on every line, compared on resume."""

    model: str
    sampling: SamplingConfig
    think: ThinkBudget
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "sampling": self.sampling.to_dict(), "think": self.think.label(), "seed": self.seed}


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

    def __init__(self, path: Path, done: set[int], cut_bytes: int) -> None:
        self.path = path
        #: Input lines already predicted in this file.
        self.done = done
        #: Bytes of an unfinished last line that `open` cut off (0 when there was none).
        self.cut_bytes = cut_bytes
        self._handle: Any = None

    @classmethod
    def open(cls, path: str | Path, rows: dict[int, BenchRow], settings: RunSettings, *, source: Path) -> "PredictionsFile":
        """Check an existing `--out` against the input rows (by line) and the settings.

        Refuses a directory, a non-regular file, the input file itself, a line that is not a
        prediction, and a file written from another input or with other settings. An
        unfinished last line is cut off (its row is predicted again).
        """
        path = Path(path)
        if path.is_dir():
            raise InputError(f"--out {path} is a directory.", "Give a file name, e.g. `--out predictions.jsonl`.")
        if path.exists() and not path.is_file():
            raise InputError(f"--out {path} is not a regular file.", "Give a plain file name, e.g. `--out predictions.jsonl`.")
        if path.exists() and source.exists() and os.path.samefile(path, source):
            raise InputError(f"--out {path} is the benchmark file itself.", "Write the predictions to another file.")
        if not path.exists() or path.stat().st_size == 0:
            return cls(path, set(), 0)
        done: set[int] = set()
        wanted = settings.to_dict()
        end = 0  # the end of the last finished line; what follows it is cut off
        try:
            with open(path, "rb") as handle:  # line by line: a predictions file is as large as its input
                for number, raw in enumerate(handle, start=1):
                    if not raw.endswith(b"\n"):
                        break
                    if raw.strip():
                        done.add(_check_line(raw, number, path, rows, wanted, source))
                    end += len(raw)
        except OSError as error:
            raise InputError(f"Cannot read {path} ({error.strerror}).", "Check its permissions, or choose another `--out`.") from None
        cut = path.stat().st_size - end
        if cut:
            os.truncate(path, end)
        return cls(path, done, cut)

    def append(self, fields: dict[str, Any]) -> None:
        """Write one prediction line and push it to the disk before the next row starts."""
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._handle = open(self.path, "ab")  # noqa: SIM115 - closed by close()
            except OSError as error:
                raise InputError(f"Cannot write {self.path} ({error.strerror}).", "Choose a writable `--out`.") from None
        with _signals_held():  # a Ctrl+C or SIGTERM lands after the line, not inside it
            self._handle.write(encode_line(fields))
            self._handle.flush()
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


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
    raw: bytes, number: int, path: Path, rows: dict[int, BenchRow], wanted: dict[str, Any], source: Path
) -> int:
    """The input line an existing output line predicted; InputError when it does not belong here."""
    where = f"{path} line {number}"
    try:
        data = load_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, SyntaxProblem):
        raise InputError(f"{where} is not a JSON row.", "Choose another `--out`; awl only goes on in a file it wrote.") from None
    side = data.get(SIDE) if isinstance(data, dict) else None
    line = side.get("line") if isinstance(side, dict) else None
    if not isinstance(line, int) or isinstance(line, bool) or GEN not in data:
        raise InputError(
            f"{path} is not a file of `awl bench predict` (line {number} has no `{SIDE}` record).",
            "Choose another `--out`; awl only goes on in a file it wrote.",
        )
    if side.get("version") != SIDE_VERSION:
        raise InputError(
            f"{where}: its `{SIDE}` record has version {side.get('version')!r}; this awl reads version {SIDE_VERSION}.",
            "Choose another `--out`, or go on with the awl that wrote it.",
        )
    row = rows.get(line)
    if row is None or _row_text(row.fields) != _row_text(data):
        raise InputError(
            f"{path} holds predictions for another benchmark file: its line {number} is not row {line} of {source}.",
            "Choose another `--out` for this file.",
        )
    for key in SETTING_KEYS:
        if side.get(key) != wanted[key]:
            name, had, asked = _first_difference(key, side.get(key), wanted[key])
            raise InputError(f"{path} was written with {name} {had}; this run asks for {asked}.", GO_ON_HINT)
    return line


def _first_difference(key: str, had: Any, asked: Any) -> tuple[str, str, str]:
    """(setting name, value in the file, value asked for), down to a sampling field."""
    if isinstance(had, dict) and isinstance(asked, dict):
        for name in asked:
            if had.get(name) != asked[name]:
                return name.replace("_", "-"), _describe(had.get(name)), _describe(asked[name])
    return key, _describe(had), _describe(asked)
