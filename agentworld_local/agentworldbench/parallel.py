"""Several benchmark rows at once, for a backend that serves them at once (a remote server).

The rows of one trajectory stay in order on one worker (the server's prefix cache then
reuses each row's prompt for the next), and trajectories are spread over `concurrency`
workers, each with its own view of the backend (`backend.for_session()`: the same server,
its own generation guard and close). Results are appended in the main thread as they
arrive, so the file and the resume rules are those of predict_rows: a rerun skips every
row already written, and a run that ends puts the file in the input's order. A row that
finished while the run is being stopped (Ctrl+C, an error) is still written; one that
failed then is not (the stop failed it, not the server).
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any

from agentworld_local.agentworldbench.predict import PredictEvent, Progress, _predict_one, write_failed, write_row
from agentworld_local.agentworldbench.predictions import PredictionsFile, RunSettings
from agentworld_local.agentworldbench.rows import BenchRow
from agentworld_local.agentworldbench.selection import trajectory_key
from agentworld_local.concurrency import stream_at_once
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.errors import AwlError


def trajectories(rows: list[BenchRow]) -> list[list[BenchRow]]:
    """`rows` (in work order) cut into their trajectories, each in its order."""
    groups: dict[Any, list[BenchRow]] = {}
    for row in rows:
        groups.setdefault(trajectory_key(row), []).append(row)
    return list(groups.values())


def predict_rows_at_once(
    rows: list[BenchRow], backend: Any, settings: RunSettings, out: PredictionsFile, *, concurrency: int
) -> Iterator[PredictEvent]:
    """predict_rows with `concurrency` trajectories in flight; the same events, the same file."""
    todo = [row for row in rows if row.line not in out.done]
    progress = Progress(total=len(todo))
    session = SessionSettings(sampling=settings.sampling, think=settings.think, seed=settings.seed)
    base = settings.to_dict()
    groups = trajectories(todo)
    workers = max(1, min(concurrency, len(groups)))
    views = [backend.for_session() for _ in range(workers)]
    backends: queue.Queue = queue.Queue()  # a free view for each trajectory in flight
    for view in views:
        backends.put(view)

    def run(group: list[BenchRow]) -> Iterator[tuple[BenchRow, Any, dict | None]]:
        own = backends.get()
        try:
            for row in group:  # the map takes no next row once it stops
                try:
                    result = (row, *_predict_one(row, own, session))
                except AwlError as error:  # this row's failure; anything else is a defect
                    result = (row, error, None)
                yield result
        finally:
            backends.put(own)

    running = stream_at_once(run, groups, at_once=workers, name="awl-predict")
    try:
        for done in running:
            row, gen, side = done.result()  # a defect in a worker ends the run
            if side is None:
                yield write_failed(row, gen, backend, base, out, progress)
            else:
                yield write_row(row, gen, side, base, out, progress)
        out.in_input_order()
    finally:
        running.stop.set()
        for view in views:
            view.close()  # its stream in flight closes now; that row is not written
        for done in running.close():  # rows that finished while stopping are kept
            if done.error is None and done.value[2] is not None:
                row, gen, side = done.value
                write_row(row, gen, side, base, out, progress)
