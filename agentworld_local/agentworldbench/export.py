"""Trajectory -> AgentWorldBench rows, streamed.

Each row carries every turn of the trajectory (`prompt`, `response`), so a session of N
turns exports N rows of N turns each: the output itself grows with N². What must not grow
with it is the work per byte and the memory: the two lists are encoded once and every row
reuses those bytes, and rows are produced one at a time.

An imported trajectory exports the rows it was imported from (unknown fields included),
so import then export gives back the same rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agentworld_local.contract.turns import history_observation
from agentworld_local.errors import TrajectoryError
from agentworld_local.agentworldbench.rows import FORMAT, trajectory_id
from agentworld_local.trajectory.jsonl import dumps
from agentworld_local.trajectory.reader import Trajectory
from agentworld_local.trajectory.schema import TurnRecord

# Stand-ins in a row template for the trajectory's lists, which every row shares.
ALL_PROMPTS = object()
ALL_RESPONSES = object()


class ExportPlan:
    """The shared lists and a template per row; built (and checked) before anything is written."""

    def __init__(self, traj: Trajectory) -> None:
        branch = traj.current_branch()
        if not branch:
            raise TrajectoryError(f"{traj.path} has no turns to export.", "Run a session with `awl run` first.")
        self.prompts = [record.prompt for record in branch]
        self._imported = _imported_rows(traj, branch)
        # An imported turn's prompt is the row's, an empty one included (a benchmark may leave one
        # empty); a session's turn without one was never sent to a model (a hand-written file).
        if self._imported is None and not all(self.prompts):
            raise TrajectoryError(
                f"{traj.path} does not record the prompts of its turns.",
                "Export needs files written by `awl run` (hand-written examples have no prompts).",
            )
        self.responses = [_history_message(record) for record in branch]
        self._traj = traj

    def __len__(self) -> int:
        return len(self._imported) if self._imported is not None else len(self.prompts)

    def templates(self) -> Iterator[dict[str, Any]]:
        if self._imported is not None:
            for fields in self._imported:
                yield {
                    key: (ALL_PROMPTS if key == "prompt" else ALL_RESPONSES if key == "response" else value)
                    if value is None and key in ("prompt", "response") else value
                    for key, value in fields.items()
                }
            return
        ref = self._traj.header.extra.get(FORMAT)
        task = ref["task"] if isinstance(ref, dict) and isinstance(ref.get("task"), str) else self._traj.header.domain
        row_id, total = trajectory_id(self._traj), len(self.prompts)
        for index, prompt in enumerate(self.prompts):
            yield {
                "task": task, "id": row_id, "prompt": ALL_PROMPTS, "response": ALL_RESPONSES, "current_prompt": prompt,
                "system_str": self._traj.header.system_prompt, "turn_idx": index + 1, "total_turns": total,
            }

    def rows(self) -> Iterator[dict[str, Any]]:
        """Row dicts; they share the two list objects (read them, do not change them)."""
        shared = {id(ALL_PROMPTS): self.prompts, id(ALL_RESPONSES): self.responses}
        for template in self.templates():
            yield {key: shared.get(id(value), value) for key, value in template.items()}

    def chunks(self) -> Iterator[bytes]:
        """The JSONL bytes, row by row; a row ends with a newline. Same JSON as `dumps(row)`."""
        shared = {id(ALL_PROMPTS): dumps(self.prompts).encode(), id(ALL_RESPONSES): dumps(self.responses).encode()}
        for template in self.templates():
            pending: list[str] = []
            opening = "{"
            for key, value in template.items():
                encoded = shared.get(id(value))
                if encoded is None:
                    pending.append(f"{opening}{dumps(key)}: {dumps(value)}")
                else:
                    pending.append(f"{opening}{dumps(key)}: ")
                    yield "".join(pending).encode()
                    yield encoded
                    pending = []
                opening = ", "
            pending.append("}\n" if template else "{}\n")
            yield "".join(pending).encode()


def _history_message(record: TurnRecord) -> str:
    return record.history_message if record.history_message is not None else history_observation(record.observation)


def _imported_rows(traj: Trajectory, branch: list[TurnRecord]) -> list[dict[str, Any]] | None:
    """The rows an imported trajectory came from, while its turns are still exactly the imported ones."""
    ref = traj.header.extra.get(FORMAT)
    if not isinstance(ref, dict):
        return None
    fields, count = ref.get("row_fields"), ref.get("turns")
    if not isinstance(fields, list) or not fields or not all(isinstance(f, dict) for f in fields):
        return None
    if count != len(branch) or any(record.parse_method != FORMAT for record in branch):
        return None  # turns were added or undone since the import: export the session as it is now
    return fields


def trajectory_to_rows(traj: Trajectory) -> list[dict[str, Any]]:
    """Every row at once (tests, small files); `ExportPlan(traj).chunks()` streams."""
    return list(ExportPlan(traj).rows())
