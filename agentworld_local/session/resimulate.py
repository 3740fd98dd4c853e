"""Re-simulating one AgentWorldBench row as a session (`awl run --from-bench`), for any face.

The trajectory holds the row's ground-truth turns, then the model's prediction with the
benchmark's answer beside it (`extra["ground_truth"]`). The engine side (the World built
from the row, the verbatim prompt) is agentworldbench/resimulate.py.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from agentworld_local.agentworldbench.context import unfit_reason
from agentworld_local.agentworldbench.resimulate import bench_world, resimulate, sendable
from agentworld_local.agentworldbench.rows import FORMAT, BenchRow, bench_messages, bench_ref
from agentworld_local.engine import world as engine
from agentworld_local.engine.base import Backend
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine import events
from agentworld_local.errors import InputError
from agentworld_local.session.header import header_for
from agentworld_local.trajectory.schema import TurnRecord
from agentworld_local.trajectory.writer import TrajectoryWriter

#: TurnRecord.extra key of the benchmark's own observation for the predicted turn.
GROUND_TRUTH = "ground_truth"


class RowResimulation:
    """One row's re-simulation in the new file `out`: `start`, then `predict` once."""

    def __init__(self, row: BenchRow, world: engine.World, writer: TrajectoryWriter) -> None:
        self.row = row
        self.world = world
        self.writer = writer
        #: The prediction, once `predict` has finished it (None before, or when cancelled).
        self.record: TurnRecord | None = None

    @classmethod
    def start(
        cls, row: BenchRow, source: Path, backend: Backend, settings: SessionSettings, *, out: Path
    ) -> RowResimulation:
        """Write the header and the ground-truth turns to `out` (a new file; refused if it exists).
        A row that does not fit is refused before anything is written: its history is never
        cut (the official evaluation fails such a row)."""
        prompt = backend.count_tokens(bench_messages(sendable(row)), settings.think)
        reason = unfit_reason(prompt, backend.info.n_ctx, settings.sampling, settings.think)
        if reason is not None:
            raise InputError(f"Row {row.line} does not fit: {reason}; the official evaluation fails such a row.",
                             "Give a larger `--ctx`, or a smaller `--max-tokens`.")
        world = bench_world(row, backend, settings)
        note = (
            f"re-simulated AgentWorldBench row {row.line} of {source}: the turns before it are the benchmark's "
            "ground truth, the last turn is the model's prediction"
        )
        header = header_for(world, note=note)
        header.extra[FORMAT] = bench_ref(row, source)
        writer = TrajectoryWriter.create(out, header)
        try:
            for turn in world.history:
                writer.append(turn)
        except BaseException:
            writer.discard()
            raise
        return cls(row, world, writer)

    @property
    def path(self) -> Path:
        return self.writer.path

    @property
    def ground_truth_turns(self) -> int:
        return len(self.world.history)

    def predict(self, cancel: threading.Event | None = None) -> Iterator[events.SessionEvent]:
        """Stream the model's prediction of the row's turn; it is saved before TurnFinished.

        Cancelled or interrupted (Ctrl+C), the ground-truth turns stay saved; any other
        failure removes the file (nothing of the user's is lost: the ground truth is in the
        benchmark file, and a retry with the same `out` must not be blocked).
        """
        turn = self.ground_truth_turns + 1
        try:
            for event in resimulate(self.world, self.row, cancel):
                if isinstance(event, events.TurnFinished):
                    self.record = replace(event.record, extra={**event.record.extra, GROUND_TRUTH: self.row.ground_truth})
                    self.writer.append(self.record)
                    yield events.TurnFinished(turn, self.record)
                else:
                    yield event
        except (KeyboardInterrupt, GeneratorExit):
            self.writer.close()
            raise
        except BaseException:
            self.writer.discard()
            raise
        self.writer.close()


def resimulate_row(backend: Backend | None, row: BenchRow, source: Path, settings: SessionSettings, out: Path,
                   cancel: threading.Event) -> Iterator[events.SessionEvent]:
    """Re-simulating `row` in the new file `out`, as the runner says it: SessionOpened (no
    view: no face goes on in it), then the prediction's events."""
    if backend is None:
        raise InputError("No model is loaded.", "Give one with `--model`.")
    run = RowResimulation.start(row, source, backend, settings, out=out)
    yield events.SessionOpened(str(out), row.domain, run.ground_truth_turns, run.world.head)
    yield from run.predict(cancel)
