"""Read a trajectory file: validate the header, upgrade old versions, tolerate an interrupted last line."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld_local.errors import TrajectoryError
from agentworld_local.trajectory.schema import SCHEMA_NAME, SCHEMA_VERSION, Header, TurnRecord, migrate

_NOT_OURS_HINT = "Check the path; `awl replay` reads files written by `awl run`."


@dataclass
class Trajectory:
    """A parsed file. `turns` holds every turn line in file order, abandoned branches included."""

    header: Header
    turns: list[TurnRecord]
    path: Path
    warnings: list[str] = field(default_factory=list)
    file_version: int = SCHEMA_VERSION  # version on disk, before migration
    good_bytes: int = 0  # length of the file prefix that parsed; the writer cuts an interrupted tail here

    def by_id(self, turn_id: int) -> TurnRecord:
        for turn in self.turns:
            if turn.id == turn_id:
                return turn
        raise TrajectoryError(
            f"{self.path} has no turn with id {turn_id}.",
            f"Ids run from 1 to {len(self.turns)}." if self.turns else "It has no turns yet.",
        )

    def branch(self, last_id: int | None = None) -> list[TurnRecord]:
        """The chain of turns ending at `last_id` (default: the last turn in the file), first turn first."""
        if not self.turns:
            return []
        ids = {t.id: t for t in self.turns}
        chain: list[TurnRecord] = []
        current: TurnRecord | None = self.by_id(last_id) if last_id is not None else self.turns[-1]
        while current is not None:
            chain.append(current)
            # The reader guarantees parents point backwards, so this ends.
            current = ids[current.parent] if current.parent is not None else None
        chain.reverse()
        return chain

    def current_branch(self) -> list[TurnRecord]:
        """The branch the session was on when it was last written."""
        return self.branch()


def _fail(path: Path, line_no: int, why: str) -> TrajectoryError:
    return TrajectoryError(
        f"{path}: line {line_no} is damaged ({why}).",
        f"Fix or delete line {line_no} in an editor, or fork the turns before it with `awl fork`.",
    )


def read_trajectory(path: str | Path) -> Trajectory:
    """Parse `path`. Raises TrajectoryError (one line, with a next step) for anything unreadable."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TrajectoryError(f"{path} does not exist.", "Check the path; sessions are saved by `awl run`.") from None
    except IsADirectoryError:
        raise TrajectoryError(f"{path} is a directory, not a trajectory file.", "Pass a .jsonl file inside it.") from None
    except OSError as error:
        raise TrajectoryError(f"cannot read {path}: {error.strerror}.", "Check the file's permissions.") from None
    if not data.strip():
        raise TrajectoryError(f"{path} is empty.", "It holds no session; delete it or pick another file.")

    lines = data.split(b"\n")
    # Without a final newline the last piece is a line the writer may not have finished.
    tail_open = not data.endswith(b"\n")
    if not tail_open:
        lines.pop()
    header, version = _read_header(path, lines[0], tail_open and len(lines) == 1)
    traj = Trajectory(header=header, turns=[], path=path, file_version=version, good_bytes=len(data))
    turn_of: dict[int, int] = {}  # id -> position in its branch, to check parent links

    for index in range(1, len(lines)):
        raw, line_no = lines[index], index + 1
        is_tail = tail_open and index == len(lines) - 1
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            if is_tail:
                traj.warnings.append(
                    f"line {line_no} is incomplete (the session was interrupted while writing); it was skipped"
                )
                traj.good_bytes = len(data) - len(raw)
                break
            raise _fail(path, line_no, "not valid JSON" if isinstance(error, json.JSONDecodeError) else "not UTF-8") from None
        kind = record.get("type") if isinstance(record, dict) else None
        if isinstance(record, dict) and kind not in ("turn", "header"):
            # Forward compatibility within a version: a newer awl may add line types.
            traj.warnings.append(f"line {line_no} has unknown type {kind!r}; it was skipped")
        else:
            traj.turns.append(_read_turn(path, line_no, record, version, turn_of))
    return traj


def _read_header(path: Path, raw: bytes, unfinished: bool) -> tuple[Header, int]:
    not_ours = TrajectoryError(f"{path} is not an awl trajectory (no header line).", _NOT_OURS_HINT)
    try:
        record: Any = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        if unfinished and SCHEMA_NAME.encode() in raw:
            raise TrajectoryError(
                f"{path} was interrupted while its header was written; it holds no turns.", "Delete it and start again."
            ) from None
        raise not_ours from None
    if not isinstance(record, dict) or record.get("type") != "header" or record.get("schema") != SCHEMA_NAME:
        raise not_ours
    version = record.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _fail(path, 1, f"the header's version is {version!r}, not a positive whole number")
    if version > SCHEMA_VERSION:
        raise TrajectoryError(
            f"{path} was written by a newer awl (schema v{version}; this awl reads up to v{SCHEMA_VERSION}).",
            "Upgrade with `pip install -U agentworld-local`.",
        )
    try:
        header = Header.from_dict(migrate(record, version))
    except (ValueError, TypeError, KeyError, IndexError) as error:
        raise _fail(path, 1, str(error)) from None
    return header, version


def _read_turn(path: Path, line_no: int, record: Any, version: int, turn_of: dict[int, int]) -> TurnRecord:
    try:
        turn = TurnRecord.from_dict(migrate(record, version))
    except (ValueError, TypeError, KeyError, IndexError) as error:
        raise _fail(path, line_no, str(error)) from None
    # Ids follow line order, so "next id = last id + 1" never collides.
    if turn.id <= next(reversed(turn_of), 0):
        raise _fail(path, line_no, f"turn id {turn.id} is not greater than the ids before it")
    if turn.parent is not None and turn.parent not in turn_of:
        raise _fail(path, line_no, f"parent {turn.parent} is not an earlier turn")
    expected = 1 if turn.parent is None else turn_of[turn.parent] + 1
    if turn.turn != expected:
        raise _fail(path, line_no, f"turn position {turn.turn} should be {expected} after its parent")
    turn_of[turn.id] = turn.turn
    return turn
