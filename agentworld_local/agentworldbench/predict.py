"""Batch prediction over a benchmark file (`awl bench predict`): the core, without a face.

Each selected row is re-simulated as `awl run --from-bench` does it (the official message
list, agentworldbench/resimulate.py) on one backend, in the work order of selection.py, so
that consecutive rows of a trajectory share their prefix: the llama backend restores the
checkpoint at the end of the previous row's prompt and evaluates only the ground-truth
turn and the new action. Every row records the prompt tokens it evaluated and the prompt's
whole size (what evaluating it from scratch costs).

Sampling defaults follow the official evaluation (eval/eval.py: temperature 0.6 and up to
32,768 new tokens; top-p and top-k left to the server, i.e. the model card's 0.95 and 20)
with thinking left to the model.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from agentworld_local.agentworldbench.predictions import PredictionsFile, RunSettings, prediction_row
from agentworld_local.agentworldbench.resimulate import bench_world, resimulate
from agentworld_local.agentworldbench.rows import BenchRow
from agentworld_local.contract.parse import THINK_CLOSE
from agentworld_local.defaults import DEFAULT_MIN_P, DEFAULT_TEMPERATURE, DEFAULT_TOP_K, DEFAULT_TOP_P
from agentworld_local.engine.base import Backend
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.world import TurnCancelled, TurnFinished
from agentworld_local.errors import AwlError

#: The official evaluation's sampling: temperature 0.6, at most 32,768 new tokens; the model
#: card's top-p 0.95 and top-k 20 (the server defaults the official script relies on).
BENCH_SAMPLING = SamplingConfig(
    temperature=DEFAULT_TEMPERATURE, top_p=DEFAULT_TOP_P, top_k=DEFAULT_TOP_K, min_p=DEFAULT_MIN_P, max_tokens=32768
)
#: The official evaluation lets the model think as long as it wants.
BENCH_THINK = ThinkBudget("full")


def gen_text(raw_output: str, parse_method: str) -> str:
    """What the official evaluation stores as `gen` for this raw answer: the answer after
    thinking, tags included, as a server with a reasoning parser returns the content (it
    splits at the first `</think>`). Thinking that never closed leaves no answer: ""."""
    if parse_method == "unclosed-think":
        return ""
    before, closed, after = raw_output.partition(THINK_CLOSE)
    return after if closed else before


@dataclass
class Progress:
    """Counts for a progress line: rows, generated tokens per second, time left."""

    total: int
    done: int = 0
    failed: int = 0
    generated_tokens: int = 0
    generate_s: float = 0.0
    prompt_tokens_total: int = 0
    prompt_tokens_evaluated: int = 0
    started: float = field(default_factory=time.perf_counter)

    @property
    def tokens_per_s(self) -> float:
        return self.generated_tokens / self.generate_s if self.generate_s > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at this run's pace so far; None before the first row ends."""
        finished = self.done + self.failed
        if finished == 0:
            return None
        return (time.perf_counter() - self.started) / finished * (self.total - finished)


@dataclass(frozen=True)
class RowPredicted:
    """A row's prediction, written to the predictions file before this event."""

    row: BenchRow
    gen: str
    side: dict
    progress: Progress


@dataclass(frozen=True)
class RowFailed:
    """A row that could not be predicted (e.g. it does not fit the context); nothing was written,
    so a rerun with the same `--out` tries it again."""

    row: BenchRow
    error: AwlError
    progress: Progress


PredictEvent = RowPredicted | RowFailed


def predict_rows(
    rows: list[BenchRow], backend: Backend, settings: RunSettings, out: PredictionsFile
) -> Iterator[PredictEvent]:
    """Predict `rows` in this order (skipping those `out` already holds), appending each.

    A KeyboardInterrupt ends it between or inside rows: every finished row is on disk.
    """
    todo = [row for row in rows if row.line not in out.done]
    progress = Progress(total=len(todo))
    session = SessionSettings(sampling=settings.sampling, think=settings.think, seed=settings.seed)
    base = settings.to_dict()
    for row in todo:
        try:
            record = _predict_one(row, backend, session)
        except AwlError as error:
            progress.failed += 1
            yield RowFailed(row, error, progress)
            continue
        tokens = record.tokens
        side = {"line": row.line, **base, "tokens": tokens, "finish": record.finish,
                "seconds": record.timings.get("total_s")}
        if record.context:
            side["context"] = record.context  # turns the model did not see: the row outgrew --ctx
        gen = gen_text(record.raw_output, record.parse_method)
        out.append(prediction_row(row, gen, side))
        progress.done += 1
        progress.generated_tokens += tokens.get("generated", 0)
        progress.generate_s += record.timings.get("generate_s", 0.0)
        progress.prompt_tokens_total += tokens.get("prompt_total", 0)
        progress.prompt_tokens_evaluated += tokens.get("prompt_evaluated", 0)
        yield RowPredicted(row, gen, side, progress)


def _predict_one(row: BenchRow, backend: Backend, session: SessionSettings):  # -> TurnRecord
    world = bench_world(row, backend, session)
    for event in resimulate(world, row):
        if isinstance(event, TurnFinished):
            return event.record
        if isinstance(event, TurnCancelled):  # no cancel flag is passed: only a backend's own stop
            raise AwlError(f"row {row.line}: the generation was cancelled.", "Run the same command again.")
    raise AwlError(f"row {row.line}: the model gave no answer.", "Run the same command again.")

