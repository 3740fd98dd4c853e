"""Saved sessions: versioned, append-only JSONL trajectories.

What a replay shows is decided in `agentworld_local.trajectory.replay`; the faces render it
(cli/replay_plain.py, tui/replay.py). No module here imports a UI library.
"""

from agentworld_local.trajectory.reader import Trajectory, read_trajectory
from agentworld_local.trajectory.schema import (
    MIGRATIONS,
    SCHEMA_NAME,
    SCHEMA_VERSION,
    Header,
    ModelRef,
    TurnRecord,
    migrate,
    utc_now,
)
from agentworld_local.trajectory.writer import TrajectoryWriter, fork_from, fork_trajectory, write_new

__all__ = [
    "MIGRATIONS",
    "SCHEMA_NAME",
    "SCHEMA_VERSION",
    "Header",
    "ModelRef",
    "Trajectory",
    "TrajectoryWriter",
    "TurnRecord",
    "fork_from",
    "fork_trajectory",
    "migrate",
    "read_trajectory",
    "utc_now",
    "write_new",
]
