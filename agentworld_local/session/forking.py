"""Forking a saved session: a new file with the first N turns of its current branch.

The copy's header says where it came from (`forked_from`: the source file, the turns kept
and the source's turn id there), so replay and resume can tell. Works on a file whose last
line was cut off, or that is damaged part-way (its intact turns are copied).
"""

from __future__ import annotations

from pathlib import Path

from agentworld_local.errors import InputError
from agentworld_local.engine import events
from agentworld_local.files import remove_stale_temporaries
from agentworld_local.session.files import ensure_new_file
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.trajectory.writer import fork_from


def fork_file(source: str | Path, out: str | Path, turn: int | None = None) -> tuple[events.Forked, list[str]]:
    """Write `out` with the first `turn` turns of `source`'s current branch (default: all).

    Returns the Forked event and the source's reading warnings (damage, a cut-off line),
    for the face to say. An existing `out` is refused; nothing is ever overwritten.
    """
    if turn is not None and turn < 0:
        raise InputError(f"--turn counts from 0 (the setup only), not {turn}.", "Use --turn 0 to keep only the setup.")
    out = Path(out)
    ensure_new_file(out)
    remove_stale_temporaries(out.parent)  # a killed fork's hidden `.NAME.PID-HEX.part` (files.writing_whole)
    traj = read_trajectory(source)
    fork_from(traj, out, turn)
    branch = traj.current_branch()
    kept = len(branch) if turn is None else turn
    forked = events.Forked(source=str(traj.path), turn=kept, path=str(out), source_id=branch[kept - 1].id if kept else None)
    return forked, list(traj.warnings)
