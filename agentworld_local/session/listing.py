"""The saved sessions, newest first: those in a folder and, with `everywhere`, every session
file awl wrote elsewhere (`--out`), from the index session/files.py appends to. What
`awl sessions list`, `--resume last` and the TUI's recent list show."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentworld_local.errors import AwlError, InputError
from agentworld_local.files import writing_whole
from agentworld_local.session.resume_rules import last_model
from agentworld_local.trajectory.reader import read_trajectory

#: `--resume last`: the session changed most recently.
LAST = "last"
#: An indexed file not there yet this long after awl was asked to write it is dropped from the
#: index (a session that ended before its first turn keeps no file; one may still be loading).
FORGET_MISSING_S = 3600.0


def _folder(folder: Path | None) -> Path:
    if folder is not None:
        return folder
    from agentworld_local.paths import sessions_dir

    return sessions_dir()


def indexed_paths() -> list[Path]:
    """The session files in the index that are there; entries for files long gone are pruned."""
    from agentworld_local.session.files import sessions_index

    index = sessions_index()
    try:
        lines = index.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    kept: dict[str, str] = {}
    dropped, now = False, time.time()
    for line in lines:
        try:
            entry = json.loads(line)
            name, at = str(entry["file"]), float(entry.get("at", 0))
        except (ValueError, TypeError, KeyError):
            dropped = True
            continue
        if not os.path.lexists(name) and now - at > FORGET_MISSING_S:
            dropped = True
            continue
        dropped = dropped or name in kept
        kept[name] = line
    if dropped:
        try:
            with writing_whole(index, overwrite=True) as handle:
                handle.write("".join(f"{line}\n" for line in kept.values()).encode("utf-8"))
        except OSError:
            pass  # read again next time
    return [Path(name) for name in kept if os.path.isfile(name)]


def session_paths(folder: Path | None = None, limit: int | None = None, *, everywhere: bool = False) -> list[Path]:
    """The `.jsonl` files in `folder` (default: the sessions dir), last changed first; with
    `everywhere`, also the session files awl wrote elsewhere (indexed_paths)."""
    candidates: list[Path] = []
    try:
        candidates.extend(_folder(folder).glob("*.jsonl"))
    except OSError:
        pass
    if everywhere:
        candidates.extend(indexed_paths())
    dated, seen = [], set()
    for path in candidates:
        try:
            key = os.path.realpath(path)
            if key not in seen and path.is_file():
                seen.add(key)
                dated.append((path.stat().st_mtime, path.name, path))
        except OSError:
            continue  # removed meanwhile
    dated.sort(reverse=True)
    return [path for _, _, path in dated[:limit]]


@dataclass(frozen=True)
class SessionSummary:
    """One saved session, as a list shows it."""

    path: Path
    changed: float  # the file's last change (seconds since the epoch)
    domain: str = ""
    scenario: str | None = None
    model: str | None = None  # the model of the last turn (the header's, unless a turn records another)
    turns: int | None = None  # on the branch the session is on; None when the file cannot be read
    problem: str | None = None  # why the file cannot be read

    def changed_text(self) -> str:
        return datetime.fromtimestamp(self.changed, timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")

    def to_dict(self) -> dict[str, Any]:
        return {"file": str(self.path), "domain": self.domain, "scenario": self.scenario, "model": self.model,
                "turns": self.turns, "changed": self.changed_text(), "problem": self.problem}


def summarize(path: Path) -> SessionSummary:
    """A session file's summary; a file that cannot be read says why instead of failing the list."""
    try:
        changed = path.stat().st_mtime
    except OSError as error:
        return SessionSummary(path, 0.0, problem=error.strerror or str(error))
    try:
        traj = read_trajectory(path)
    except AwlError as error:
        return SessionSummary(path, changed, problem=error.message)
    header = traj.header
    made_with = last_model(traj)
    scenario = header.scenario.get("name") if isinstance(header.scenario, dict) else None
    return SessionSummary(path, changed, domain=header.domain, scenario=scenario if isinstance(scenario, str) else None,
                          model=made_with.name if made_with else None, turns=len(traj.current_branch()))


def list_sessions(folder: Path | None = None, *, everywhere: bool = False) -> list[SessionSummary]:
    """Every saved session in `folder` (default: the sessions dir), last changed first; with
    `everywhere`, also those awl wrote elsewhere."""
    return [summarize(path) for path in session_paths(folder, everywhere=everywhere)]


def latest_session(folder: Path | None = None) -> Path:
    """The session changed most recently, wherever awl wrote it (in `folder` only, when one
    is given); InputError when there is none."""
    paths = session_paths(folder, limit=1, everywhere=folder is None)
    if not paths:
        raise InputError(f"There is no saved session in {_folder(folder)} yet.",
                         "Start one with `awl run` or `awl`, or give the file's path.")
    return paths[0]


def resolve_session_file(value: str | Path, folder: Path | None = None) -> Path:
    """A `--resume` value: `last` is the newest session (a file named so: `./last`), else a path."""
    return latest_session(folder) if str(value) == LAST else Path(value)
