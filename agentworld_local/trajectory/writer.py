"""Append-only trajectory writing. Every line is flushed and fsynced, so a killed
process loses at most the turn it was writing (which the reader then skips)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO

from agentworld_local import __version__
from agentworld_local.errors import TrajectoryError
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.trajectory.schema import SCHEMA_VERSION, Header, TurnRecord, utc_now


def _encode(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


class TrajectoryWriter:
    """Writes one trajectory. Build it with `create` or `append_to`, not directly."""

    def __init__(self, path: Path, handle: BinaryIO, turn_of: dict[int, int]) -> None:
        self.path = path
        self._handle: BinaryIO | None = handle
        self._turn_of = turn_of  # id -> branch position, for parent checks and turn numbers

    @classmethod
    def create(cls, path: str | Path, header: Header, *, overwrite: bool = False) -> TrajectoryWriter:
        """Start a new file holding just `header`. Refuses an existing file unless `overwrite`."""
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = open(path, "wb" if overwrite else "xb")
        except FileExistsError:
            raise TrajectoryError(
                f"{path} already exists; awl will not overwrite a session.", "Choose another file name or delete it first."
            ) from None
        except OSError as error:
            raise TrajectoryError(f"cannot create {path}: {error.strerror}.", "Choose a writable location.") from None
        writer = cls(path, handle, {})
        writer._write(header.to_dict())
        return writer

    @classmethod
    def append_to(cls, path: str | Path) -> TrajectoryWriter:
        """Reopen an existing trajectory to add turns. An interrupted last line is cut off first."""
        path = Path(path)
        traj = read_trajectory(path)  # raises on anything damaged; nothing is repaired
        if traj.file_version != SCHEMA_VERSION:
            raise TrajectoryError(
                f"{path} uses schema v{traj.file_version}; awl only appends to v{SCHEMA_VERSION} files.",
                "Fork it with `awl fork` to get an up-to-date copy and continue there.",
            )
        try:
            handle = open(path, "r+b")
            handle.truncate(traj.good_bytes)
            handle.seek(0, os.SEEK_END)
            if traj.good_bytes and not _ends_with_newline(handle):
                handle.write(b"\n")  # a hand-edited file may lack the final newline
        except OSError as error:
            raise TrajectoryError(f"cannot open {path} for appending: {error.strerror}.", "Check its permissions.") from None
        return cls(path, handle, {t.id: t.turn for t in traj.turns})

    @property
    def last_id(self) -> int:
        """Id of the last turn in the file, 0 when there is none."""
        return next(reversed(self._turn_of), 0)

    def append(self, turn: TurnRecord) -> TurnRecord:
        """Write `turn` as the next line and return it with `id` (and `turn`, if 0) filled in.

        The caller decides `parent` (the previous turn of the current branch, None for the first).
        """
        if turn.parent is not None and turn.parent not in self._turn_of:
            raise ValueError(f"parent {turn.parent} is not a turn of {self.path}")
        position = 1 if turn.parent is None else self._turn_of[turn.parent] + 1
        if turn.turn not in (0, position):
            raise ValueError(f"turn position {turn.turn} does not follow parent {turn.parent} (expected {position})")
        next_id = self.last_id + 1
        if turn.id not in (0, next_id):
            raise ValueError(f"turn id {turn.id} is not the next id ({next_id})")
        record = replace(turn, id=next_id, turn=position)
        self._write(record.to_dict())
        self._turn_of[next_id] = position
        return record

    def _write(self, record: dict[str, Any]) -> None:
        if self._handle is None:
            raise ValueError(f"the writer for {self.path} is closed")
        try:
            self._handle.write(_encode(record))
            self._handle.flush()
            os.fsync(self._handle.fileno())
        except OSError as error:
            raise TrajectoryError(f"cannot write {self.path}: {error.strerror}.", "Free disk space or check the drive.") from None

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    @property
    def closed(self) -> bool:
        return self._handle is None

    def __enter__(self) -> TrajectoryWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _ends_with_newline(handle: BinaryIO) -> bool:
    handle.seek(-1, os.SEEK_END)
    last = handle.read(1)
    handle.seek(0, os.SEEK_END)
    return last == b"\n"


def fork_trajectory(src: str | Path, dst: str | Path, at_turn: int, *, overwrite: bool = False) -> Path:
    """Copy the current branch of `src` up to branch position `at_turn` into a new file `dst`.

    Turns are renumbered as a straight line (id = turn, parent = turn - 1); `at_turn=0`
    keeps only the header, i.e. the same setup started afresh.
    """
    src, dst = Path(src), Path(dst)
    traj = read_trajectory(src)
    branch = traj.current_branch()
    if not 0 <= at_turn <= len(branch):
        raise TrajectoryError(
            f"cannot fork at turn {at_turn}: {src} has {len(branch)} turns in its current branch.",
            f"Pick a turn from 0 to {len(branch)}.",
        )
    if dst.resolve() == src.resolve():
        raise TrajectoryError(f"cannot fork {src} onto itself.", "Choose a different destination file.")
    # A fork is a new session written now, in the current schema; its setup is the source's.
    header = replace(
        traj.header, version=SCHEMA_VERSION, awl_version=__version__, created=utc_now(),
        forked_from={"file": str(src.resolve()), "turn": at_turn},
    )
    with TrajectoryWriter.create(dst, header, overwrite=overwrite) as writer:
        for old in branch[:at_turn]:
            writer.append(replace(old, id=old.turn, parent=old.turn - 1 or None))
    return dst
