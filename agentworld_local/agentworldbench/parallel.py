"""Several benchmark rows at once, for a backend that serves them at once (a remote server).

The rows of one trajectory stay in order on one worker (the server's prefix cache then
reuses each row's prompt for the next), and trajectories are spread over `concurrency`
workers, each with its own view of the backend (`backend.for_session()`: the same server,
its own generation guard and close). Results are appended in the main thread as they arrive, so the file and
the resume rules are those of predict_rows: a rerun skips every row already written. A row
that finished while the run is being stopped (Ctrl+C, an error) is still written.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agentworld_local.agentworldbench.predict import PredictEvent, Progress, RowFailed, _predict_one, write_row
from agentworld_local.agentworldbench.predictions import PredictionsFile, RunSettings
from agentworld_local.agentworldbench.rows import BenchRow
from agentworld_local.agentworldbench.selection import trajectory_key
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.errors import AwlError

_DONE = object()


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
    results: queue.Queue = queue.Queue()
    stop = threading.Event()
    groups = trajectories(todo)
    workers = max(1, min(concurrency, len(groups)))
    views = [backend.for_session() for _ in range(workers)]
    backends: queue.Queue = queue.Queue()
    for view in views:
        backends.put(view)

    def run(group: list[BenchRow]) -> None:
        own = backends.get()
        try:
            for row in group:
                if stop.is_set():
                    return
                try:
                    results.put((row, *_predict_one(row, own, session)))
                except AwlError as error:
                    results.put((row, error, None))
        finally:
            backends.put(own)

    executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="awl-predict")
    futures = [executor.submit(run, group) for group in groups]
    waiting = len(todo)
    try:
        while waiting:
            try:
                row, gen, side = results.get(timeout=0.1)
            except queue.Empty:
                for future in futures:
                    if future.done() and future.exception() is not None:
                        raise future.exception()  # a defect in a worker: not a row's failure
                if all(f.done() for f in futures) and results.empty():
                    break  # every worker ended (stopped early): nothing more will come
                continue
            waiting -= 1
            if side is None:
                progress.failed += 1
                yield RowFailed(row, gen, progress)
            else:
                yield write_row(row, gen, side, base, out, progress)
    finally:
        stop.set()
        for view in views:
            view.close()  # its stream in flight closes now; that row is not written
        executor.shutdown(wait=True, cancel_futures=True)
        while not results.empty():  # rows that finished while stopping are kept
            row, gen, side = results.get()
            if side is not None:
                write_row(row, gen, side, base, out, progress)
