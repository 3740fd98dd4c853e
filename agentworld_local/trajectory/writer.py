"""Append-only trajectory writing. Every line is written unbuffered and fsynced, so a killed
process loses at most the turn it was writing (which the reader then skips).

A failed write (a full disk) cuts the file back to its last complete line, so the file
stays readable with every saved turn, and the next line can still follow cleanly
(trajectory/appender.py, shared with benchmark predictions).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO

from agentworld_local import __version__
from agentworld_local.errors import TrajectoryError
from agentworld_local.files import cannot_write, os_error_text, remove_stale_temporaries, writing_whole
from agentworld_local.trajectory.appender import AppendFailed, append_line, open_unbuffered, write_all
from agentworld_local.trajectory.jsonl import encode_line
from agentworld_local.trajectory.reader import CONTROL, FORK, REWARD, UNDO, Trajectory, count, read_trajectory, walk_back
from agentworld_local.trajectory.schema import SCHEMA_VERSION, Header, TurnRecord, utc_now




class TrajectoryWriter:
    """Writes one trajectory. Build it with `create` or `append_to`, not directly."""

    def __init__(
        self, path: Path, handle: BinaryIO, turn_of: dict[int, int], *,
        parent_of: dict[int, int | None] | None = None, head: int | None = None, size: int = 0,
    ) -> None:
        self.path = path
        self._handle: BinaryIO | None = handle
        self._turn_of = turn_of  # id -> branch position, for parent checks and turn numbers
        self._parent_of = dict(parent_of or {})  # id -> parent, to walk back on undo
        self._head = next(reversed(turn_of), 0) if head is None else head  # current branch tip, 0 for none
        self._size = size  # bytes of complete lines in the file: where a failed write is cut back to
        self._broken: str | None = None

    @classmethod
    def create(cls, path: str | Path, header: Header, *, overwrite: bool = False) -> TrajectoryWriter:
        """Start a new file holding just `header`. Refuses an existing file unless `overwrite`.

        If the header cannot be written, no file is left behind, so the same command can be retried.
        """
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # a file where a folder of the path should be
            raise cannot_write(path, errno.ENOTDIR, kind=TrajectoryError) from None
        except OSError as error:
            raise cannot_write(path, error, kind=TrajectoryError) from None
        try:
            remove_stale_temporaries(path.parent)  # what a killed fork or export left there
            handle = open_unbuffered(path, "wb" if overwrite else "xb")
        except OSError as error:  # FileExistsError too: awl never overwrites a saved file
            raise cannot_write(path, error, kind=TrajectoryError) from None
        writer = cls(path, handle, {})
        try:
            writer._write(encode_line(header.to_dict()))
        except AppendFailed as failed:
            writer.discard()
            raise TrajectoryError(
                f"Cannot write {path}: {failed.reason}; nothing was saved and no file was left behind.",
                "Free disk space or choose another location, then run the same command again.",
            ) from None
        except BaseException:
            writer.discard()
            raise
        return writer

    @classmethod
    def append_to(cls, path: str | Path, traj: Trajectory | None = None) -> TrajectoryWriter:
        """Reopen an existing trajectory to add turns. An interrupted last line is cut off first.

        `traj`: the file as the caller just read it, so a long session is not read twice."""
        path = Path(path)
        traj = read_trajectory(path) if traj is None else traj
        if traj.damaged_line is not None:
            # Appending after the damage would put the new turns where readers stop.
            raise TrajectoryError(
                f"{path} is damaged at line {traj.damaged_line}; awl will not add turns after the damage.",
                f"Write a clean copy of the {count(len(traj.current_branch()), 'intact turn')} and continue there: "
                f"`{traj.fork_command()}`.",
            )
        if traj.file_version != SCHEMA_VERSION:
            raise TrajectoryError(
                f"{path} uses schema v{traj.file_version}; awl only appends to v{SCHEMA_VERSION} files.",
                f"Write an up-to-date copy and continue there: `{traj.fork_command()}`.",
            )
        size = traj.good_bytes
        try:
            handle = open_unbuffered(path, "r+b")
            handle.truncate(size)
            handle.seek(0, os.SEEK_END)
            if size and not _ends_with_newline(handle):
                write_all(handle, b"\n")  # a hand-edited file may lack the final newline
                size += 1
        except OSError as error:
            raise TrajectoryError(f"cannot open {path} for appending: {os_error_text(error)}.", "Check its permissions.") from None
        return cls(
            path, handle, {t.id: t.turn for t in traj.turns},
            parent_of={t.id: t.parent for t in traj.turns}, head=traj.head or 0, size=size,
        )

    @property
    def last_id(self) -> int:
        """Id of the last turn in the file, 0 when there is none."""
        return next(reversed(self._turn_of), 0)

    @property
    def branch_length(self) -> int:
        """How many turns the current branch holds (after any undo)."""
        return self._turn_of.get(self._head, 0)

    def append(self, turn: TurnRecord) -> TurnRecord:
        """Write `turn` as the next line and return it with `id` (and `turn`, if 0) filled in.

        The caller decides `parent` (the previous turn of the current branch, None for the first).
        On a failed write the file is cut back and TrajectoryError says so; nothing is recorded.
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
        self._save(encode_line(record.to_dict()), f"turn {position}")
        self._turn_of[next_id] = position
        self._parent_of[next_id] = turn.parent
        self._head = next_id
        return record

    def record_undo(self, kept_turns: int) -> None:
        """Write that the current branch now ends after its first `kept_turns` turns.

        Called before the session drops the turns, so a failed write leaves both unchanged.
        """
        length = self.branch_length
        if not 0 <= kept_turns <= length:
            raise ValueError(f"cannot keep {count(kept_turns, 'turn')}: the current branch of {self.path} has {length}")
        if kept_turns == length:
            return  # nothing is dropped
        self._save(encode_line({"type": UNDO, "kept": kept_turns, "created": utc_now()}), "the undo")
        self._head = walk_back(self._head, length - kept_turns, self._parent_of)

    def record_control(self, text: str) -> None:
        """Write a control instruction for the next turn, so that a resume still sends it."""
        self._save(encode_line(control_line(text)), "the control instruction")

    def record_fork(self, turn: int, file: str | Path) -> None:
        """Write that a fork of this session's first `turn` turns was saved in `file`."""
        self._save(encode_line({"type": FORK, "turn": turn, "file": str(file), "created": utc_now()}), "the fork point")

    def record_reward(self, turn_id: int, value: float, source: str, verdict: dict[str, Any] | None) -> None:
        """Write what a reward hook gave the turn with id `turn_id` (session/rewards/)."""
        line: dict[str, Any] = {"type": REWARD, "id": turn_id, "value": value, "source": source}
        if verdict is not None:
            line["verdict"] = verdict
        line["created"] = utc_now()
        self._save(encode_line(line), f"the reward of turn {self._turn_of.get(turn_id, turn_id)}")

    def _save(self, line: bytes, what: str) -> None:
        if self._broken is not None:
            raise TrajectoryError(
                f"cannot save {what}: {self.path} could not be written earlier ({self._broken}).",
                f"The turns saved before that are intact; continue in a copy: `awl fork {self.path} --out NEW.jsonl`.",
            )
        try:
            self._write(line)
        except AppendFailed as failed:
            saved = self.branch_length
            if failed.cut_back:
                raise TrajectoryError(
                    f"could not save {what} to {self.path}: {failed.reason}. The file was cut back to its last "
                    f"complete line; every turn saved before it is intact ({count(saved, 'turn')}).",
                    "Free disk space or check the drive.",
                ) from None
            if not self._holds_a_partial_line():  # e.g. a file made read-only or immutable meanwhile
                raise TrajectoryError(
                    f"could not save {what} to {self.path}: {failed.reason}. Nothing of it reached the file; every "
                    f"turn saved before it is intact ({count(saved, 'turn')}).",
                    "Check that the file can still be written (permissions, a read-only or immutable file, the drive).",
                ) from None
            self._broken = failed.reason
            raise TrajectoryError(
                f"could not save {what} to {self.path}: {failed.reason}. Its last line is incomplete (readers skip "
                f"it); every turn saved before it is intact ({count(saved, 'turn')}).",
                f"Free disk space, then continue in a copy: `awl fork {self.path} --out NEW.jsonl`.",
            ) from None

    def _write(self, line: bytes) -> None:
        """Write one complete line, or cut the file back to where it was and raise AppendFailed."""
        if self._handle is None:
            raise ValueError(f"the writer for {self.path} is closed")
        self._size = append_line(self._handle, line, self._size)

    def _holds_a_partial_line(self) -> bool:
        """After a failed write that could not be cut back: does the file hold part of the line?"""
        assert self._handle is not None
        try:
            return os.fstat(self._handle.fileno()).st_size > self._size
        except OSError:
            return True  # cannot tell: say the worst

    def discard(self) -> None:
        """Close and delete the file: for a new file whose content is worthless after a failure."""
        self.close()
        try:
            self.path.unlink()
        except OSError:
            pass

    def close(self) -> None:
        """Close the file. Never raises: every line was already fsynced, or its failure reported."""
        handle, self._handle = self._handle, None
        if handle is not None:
            try:
                handle.close()
            except OSError:
                pass

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


def write_new(
    path: str | Path, header: Header, turns: Iterable[TurnRecord], *, overwrite: bool = False,
    pending_controls: Iterable[str] = (),
) -> Path:
    """A new trajectory file: `header`, `turns` as one straight branch (numbered 1, 2, 3...),
    then `pending_controls` (control instructions for the turn after the last one).

    Written whole (files.writing_whole): a failure, a full disk or a kill part-way leaves no
    file, never a shorter one that looks complete, so the same command can simply run again.
    """
    path = Path(path)
    try:
        with writing_whole(path, overwrite=overwrite) as handle:
            handle.write(encode_line(header.to_dict()))
            for n, turn in enumerate(turns, start=1):
                handle.write(encode_line(replace(turn, id=n, turn=n, parent=n - 1 or None).to_dict()))
            for control in pending_controls:
                handle.write(encode_line(control_line(control)))
    except FileExistsError as error:  # awl never overwrites a saved file
        raise cannot_write(path, error, kind=TrajectoryError) from None
    except OSError as error:
        raise cannot_write(path, error, after="; no file was left behind", kind=TrajectoryError) from None
    return path


def control_line(text: str) -> dict[str, Any]:
    """The line that records a control instruction for the next turn."""
    if not text.strip():
        raise ValueError("a control instruction needs a text")
    return {"type": CONTROL, "text": text.strip(), "created": utc_now()}


def fork_trajectory(src: str | Path, dst: str | Path, at_turn: int | None = None, *, overwrite: bool = False) -> Path:
    """Copy the current branch of `src` up to branch position `at_turn` (default: all of it) into a new file.

    Turns are renumbered as a straight line (id = turn, parent = turn - 1); `at_turn=0`
    keeps only the header, i.e. the same setup started afresh. The header's `forked_from`
    says where the copy came from. A damaged source gives its intact turns; an interrupted
    last line is left out. Control instructions pending at the fork point (those the next
    turn of the source received, or those still pending at its end) stay pending in the copy.
    """
    return fork_from(read_trajectory(src), dst, at_turn, overwrite=overwrite)


def fork_from(traj: Trajectory, dst: str | Path, at_turn: int | None = None, *, overwrite: bool = False) -> Path:
    """`fork_trajectory` for a file already read."""
    src, dst = traj.path, Path(dst)
    branch = traj.current_branch()
    at_turn = len(branch) if at_turn is None else at_turn
    if not 0 <= at_turn <= len(branch):
        raise TrajectoryError(
            f"cannot fork at turn {at_turn}: {src} has {count(len(branch), 'turn')} in its current branch.",
            f"Pick a turn from 0 to {len(branch)}.",
        )
    if dst.exists() and dst.resolve() == src.resolve():
        raise TrajectoryError(f"cannot fork {src} onto itself.", "Choose a different destination file.")
    # A fork is a new session written now, in the current schema; its setup is the source's.
    header = replace(
        traj.header, version=SCHEMA_VERSION, awl_version=__version__, created=utc_now(),
        forked_from={"file": str(src.resolve()), "turn": at_turn, "id": branch[at_turn - 1].id if at_turn else None},
    )
    turns = (replace(old, id=old.turn, parent=old.turn - 1 or None) for old in branch[:at_turn])
    pending = branch[at_turn].controls_added if at_turn < len(branch) else traj.pending_controls
    return write_new(dst, header, turns, overwrite=overwrite, pending_controls=pending)
