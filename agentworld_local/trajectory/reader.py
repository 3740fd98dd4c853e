"""Read a trajectory file: validate the header, upgrade old versions, keep what is intact.

Damage never costs the turns before it: an interrupted last line is skipped, and a damaged
line in the middle ends the reading there, with a warning that names the line and says how
to get a clean copy (`awl fork`). Only a file whose header cannot be read is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from agentworld_local.errors import TrajectoryError
from agentworld_local.files import check_regular_file
from agentworld_local.safe_parse import SyntaxProblem, load_json
from agentworld_local.trajectory.schema import SCHEMA_NAME, SCHEMA_VERSION, Header, TurnRecord, migrate

_NOT_OURS_HINT = "Check the path; `awl replay` reads files written by `awl run`."
#: Far above any real session (a 20,000-turn session is tens of MB).
MAX_TRAJECTORY_BYTES = 4 * 1024**3
_BOM = b"\xef\xbb\xbf"
UNDO = "undo"  # a line type added within v1: `{"type": "undo", "kept": N}` ends the branch at turn N
#: Added within v1: `{"type": "control", "text": ...}`, a control instruction for the next turn
#: (given after the last turn, it is still pending when the file is resumed).
CONTROL = "control"
#: Added within v1: `{"type": "fork", "turn": N, "file": NEW}`, a fork written from this session.
FORK = "fork"
#: Added within v1: `{"type": "reward", "id": TURN_ID, "value": 1.0, "source": ..., "verdict": ...}`,
#: what a reward hook gave the turn with that id (session/rewards/).
REWARD = "reward"


@dataclass
class Trajectory:
    """A parsed file. `turns` holds every turn line in file order, abandoned branches included."""

    header: Header
    turns: list[TurnRecord]
    path: Path
    warnings: list[str] = field(default_factory=list)
    file_version: int = SCHEMA_VERSION  # version on disk, before migration
    good_bytes: int = 0  # length of the file prefix that was read; the writer cuts an interrupted tail here
    #: Id of the current branch's last turn: None means the last turn in the file, 0 that every turn was undone.
    head: int | None = None
    damaged_line: int | None = None  # first damaged line (1-based); nothing from it on was read
    #: Control instructions given but not yet sent with a turn (control lines after the last turn,
    #: and those of turns undone since): the next turn receives them.
    pending_controls: list[str] = field(default_factory=list)
    #: The fork lines: forks written from this session (`{"turn": N, "file": ...}`).
    forks: list[dict[str, Any]] = field(default_factory=list)
    #: The reward lines, in file order (`{"id": TURN_ID, "value": ..., "source": ..., "verdict": ...}`).
    rewards: list[dict[str, Any]] = field(default_factory=list)

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
        """The branch the session was on when it was last written (undo lines included)."""
        return [] if self.head == 0 else self.branch(self.head)

    def fork_command(self) -> str:
        """The command that writes a clean copy of the current branch."""
        return f"awl fork {self.path} --turn {len(self.current_branch())} --out NEW.jsonl"


def count(n: int, noun: str) -> str:
    """`1 turn`, `2 turns`: messages count things the way people do."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _damage_warning(traj: Trajectory, line_no: int, why: str, last_line: int) -> str:
    kept = len(traj.current_branch())
    skipped = f"line {line_no}" if last_line <= line_no else f"lines {line_no}-{last_line}"
    return (
        f"line {line_no} is damaged ({why}); kept the {count(kept, 'intact turn')} before it, skipped {skipped}. "
        f"To keep going, write a clean copy: `{traj.fork_command()}`"
    )


def read_trajectory(path: str | Path) -> Trajectory:
    """Parse `path`. Raises TrajectoryError (one line, with a next step) only when nothing can be kept.

    The file is read line by line (a 20,000-turn session is tens of MB): memory holds the
    turns, never a second copy of the file, and the time is linear in its size.
    """
    path = Path(path)
    size = check_regular_file(path, "trajectory", TrajectoryError)
    if size > MAX_TRAJECTORY_BYTES:
        raise TrajectoryError(f"The trajectory {path} is {size:,} bytes; awl reads at most {MAX_TRAJECTORY_BYTES:,}.",
                              "Pass a smaller file.")
    try:
        with open(path, "rb") as handle:
            return _read(path, handle)
    except OSError as problem:
        raise TrajectoryError(f"Cannot read the trajectory {path}: {problem.strerror}.", "Check its permissions.") from None


def _read(path: Path, handle: BinaryIO) -> Trajectory:
    lines = iter(handle)  # each piece ends with b"\n", but for an unfinished last line
    first = next(lines, b"")
    start = len(_BOM) if first.startswith(_BOM) else 0  # an editor may have added one
    if not first.strip() and all(not line.strip() for line in lines):
        raise TrajectoryError(f"{path} is empty.", "It holds no session; delete it or pick another file.")
    # A piece without its final newline is a line the writer may not have finished.
    header, version = _read_header(path, first[start:].rstrip(b"\n"), not first.endswith(b"\n"))
    traj = Trajectory(header=header, turns=[], path=path, file_version=version, head=0)
    state = _BranchState()
    unknown: dict[str, int] = {}
    offset = len(first)
    line_no = 1
    for line in lines:
        line_no += 1
        line_start, offset = offset, offset + len(line)
        raw = line[:-1] if line.endswith(b"\n") else line
        if not raw.strip():
            continue
        is_tail = raw is line  # no newline: the last piece, maybe unfinished
        try:
            record = _decode(raw)
        except SyntaxProblem as problem:
            if is_tail:
                traj.warnings.append(
                    f"line {line_no} is incomplete (the session was interrupted while writing); it was skipped"
                )
                offset = line_start
                break
            why = problem.reason
        else:
            kind = record.get("type", "turn") if isinstance(record, dict) else None
            if isinstance(kind, str) and kind not in ("turn", "header", UNDO, CONTROL, FORK, REWARD):
                # Forward compatibility within a version: a newer awl may add line types.
                unknown[kind] = unknown.get(kind, 0) + 1
                continue
            try:
                if kind == UNDO:
                    state.undo(record)
                elif kind == CONTROL:
                    state.control(record)
                elif kind == FORK:
                    traj.forks.append(_fork_line(record))
                elif kind == REWARD:
                    traj.rewards.append(_reward_line(record))
                else:
                    traj.turns.append(state.add_turn(record, version))
                continue
            except ValueError as error:
                why = str(error)
        traj.head = state.head
        traj.pending_controls = list(state.pending)
        traj.damaged_line = line_no
        offset = line_start
        last_line = line_no + sum(1 for _ in lines)  # the lines skipped, counted without parsing them
        traj.warnings.append(_damage_warning(traj, line_no, why, last_line))
        break
    traj.good_bytes = offset
    traj.head = state.head
    traj.pending_controls = list(state.pending)
    if unknown:
        kinds = ", ".join(f"'{kind}'" for kind in sorted(unknown))
        traj.warnings.append(
            f"{count(sum(unknown.values()), 'line')} of a type this awl does not know ({kinds}) were skipped; "
            "a newer awl may have written them"
        )
    return traj


def _decode(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SyntaxProblem(f"not UTF-8: byte 0x{raw[error.start]:02x} at column {error.start + 1}") from None
    try:
        return load_json(text)
    except SyntaxProblem as problem:
        raise SyntaxProblem(f"not valid JSON: {problem.reason}") from None


class _BranchState:
    """What the turn and undo lines read so far say: each turn's position and parent, and the branch tip."""

    def __init__(self) -> None:
        self.turn_of: dict[int, int] = {}  # id -> position in its branch
        self.parent_of: dict[int, int | None] = {}
        self.head = 0  # id of the current branch's last turn, 0 for none
        self.controls_of: dict[int, list[str]] = {}  # id -> the control instructions it was sent
        self.pending: list[str] = []  # control instructions the next turn receives

    def add_turn(self, record: Any, version: int) -> TurnRecord:
        if not isinstance(record, dict):
            raise ValueError(f"expected a JSON object, got {type(record).__name__}")
        try:
            turn = TurnRecord.from_dict(migrate(record, version))
        except (TypeError, KeyError, IndexError) as error:
            raise ValueError(str(error) or type(error).__name__) from None
        # Ids follow line order, so "next id = last id + 1" never collides.
        if turn.id <= next(reversed(self.turn_of), 0):
            raise ValueError(f"turn id {turn.id} is not greater than the ids before it")
        if turn.parent is not None and turn.parent not in self.turn_of:
            raise ValueError(f"parent {turn.parent} is not an earlier turn")
        expected = 1 if turn.parent is None else self.turn_of[turn.parent] + 1
        if turn.turn != expected:
            raise ValueError(f"turn position {turn.turn} should be {expected} after its parent")
        self.turn_of[turn.id] = turn.turn
        self.parent_of[turn.id] = turn.parent
        self.controls_of[turn.id] = turn.controls_added
        self.head = turn.id
        # The turn was sent the oldest pending controls (a re-simulated benchmark turn, none).
        del self.pending[: len(turn.controls_added)]
        return turn

    def control(self, record: dict[str, Any]) -> None:
        text = record.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"a control line should hold a text, not {_shown(text)}")
        self.pending.append(text.strip())

    def undo(self, record: dict[str, Any]) -> None:
        kept = record.get("kept")
        length = self.turn_of.get(self.head, 0)
        if not isinstance(kept, int) or isinstance(kept, bool) or not 0 <= kept <= length:
            raise ValueError(f"an undo line should keep a turn count from 0 to {length}, not {_shown(kept)}")
        dropped: list[int] = []
        for _ in range(length - kept):
            dropped.append(self.head)
            self.head = self.parent_of.get(self.head) or 0
        # An undo hands the dropped turns' controls back: the next turn receives them.
        self.pending[:0] = [control for turn_id in reversed(dropped) for control in self.controls_of[turn_id]]


def walk_back(head: int, steps: int, parent_of: dict[int, int | None]) -> int:
    """The turn `steps` turns before `head` on its branch (0 when that is before the first turn)."""
    for _ in range(steps):
        head = parent_of.get(head) or 0
    return head


def _fork_line(record: dict[str, Any]) -> dict[str, Any]:
    turn = record.get("turn")
    if not isinstance(turn, int) or isinstance(turn, bool) or turn < 0 or not isinstance(record.get("file"), str):
        raise ValueError("a fork line should hold a turn number and a file")
    return {key: value for key, value in record.items() if key != "type"}


def _reward_line(record: dict[str, Any]) -> dict[str, Any]:
    turn, value = record.get("id"), record.get("value")
    if not isinstance(turn, int) or isinstance(turn, bool) or turn < 1 \
            or not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ValueError("a reward line should hold a turn id and a number")
    return {key: item for key, item in record.items() if key != "type"}


def _shown(value: Any) -> str:
    text = "null" if value is None else repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


def _read_header(path: Path, raw: bytes, unfinished: bool) -> tuple[Header, int]:
    not_ours = TrajectoryError(f"{path} is not an awl trajectory (no header line).", _NOT_OURS_HINT)
    try:
        record: Any = _decode(raw)
    except SyntaxProblem:
        if unfinished and SCHEMA_NAME.encode() in raw:
            raise TrajectoryError(
                f"{path} was interrupted while its header was written; it holds no turns.", "Delete it and start again."
            ) from None
        raise not_ours from None
    if not isinstance(record, dict) or record.get("type") != "header" or record.get("schema") != SCHEMA_NAME:
        raise not_ours
    version = record.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _header_damaged(path, f"its version is {_shown(version)}, not a positive whole number")
    if version > SCHEMA_VERSION:
        raise TrajectoryError(
            f"{path} was written by a newer awl (schema v{version}; this awl reads up to v{SCHEMA_VERSION}).",
            "Upgrade with `pip install -U agentworld-local`.",
        )
    try:
        header = Header.from_dict(migrate(record, version))
    except (ValueError, TypeError, KeyError, IndexError) as error:
        raise _header_damaged(path, str(error)) from None
    return header, version


def _header_damaged(path: Path, why: str) -> TrajectoryError:
    return TrajectoryError(
        f"{path}: the header (line 1) is damaged ({why}); no turn can be read without it.",
        "Fix line 1 in an editor, or delete the file.",
    )
