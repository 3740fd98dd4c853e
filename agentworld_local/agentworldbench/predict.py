"""Batch prediction over a benchmark file (`awl bench predict`): the core, without a face.

Each selected row is re-simulated as `awl run --from-bench` does it (the official message
list, agentworldbench/resimulate.py) on one backend, in the work order of selection.py, so
that consecutive rows of a trajectory share their prefix: the llama backend restores the
checkpoint at the end of the previous row's prompt and evaluates only the ground-truth
turn and the new action; a trajectory that starts with the same system prompt as the one
before starts from the checkpoint after it. Every row records the prompt tokens it
evaluated and the prompt's whole size (what evaluating it from scratch costs).

Generation follows the official evaluation (eval/eval.py: temperature 0.6, up to 32,768
new tokens counting thinking and answer, to the end of the turn; top-p and top-k left to
the server, i.e. the model card's 0.95 and 20) with thinking left to the model. A row whose
prompt and generation do not fit the context, or whose request keeps failing, is written
as the official run writes it: an empty `gen`, with the reason in the side record
(agentworldbench/context.py). A run that ends puts the file in the input's order.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from agentworld_local.agentworldbench.context import unfit_reason
from agentworld_local.agentworldbench.predictions import REQUEST_FAILED, PredictionsFile, RunSettings, prediction_row
from agentworld_local.agentworldbench.resimulate import bench_world, predict_turn, sendable
from agentworld_local.agentworldbench.rows import BenchRow, bench_messages
from agentworld_local.contract.parse import THINK_CLOSE
from agentworld_local.defaults import DEFAULT_MIN_P, DEFAULT_TEMPERATURE, DEFAULT_TOP_K, DEFAULT_TOP_P
from agentworld_local.engine.base import Backend
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.errors import AwlError

#: The official evaluation's generation: temperature 0.6, at most 32,768 new tokens counting
#: thinking and answer, to the end of the turn (no stop at the first observation block, no
#: repetition guard); the model card's top-p 0.95 and top-k 20 (the server defaults the
#: official script relies on).
BENCH_SAMPLING = SamplingConfig(
    temperature=DEFAULT_TEMPERATURE, top_p=DEFAULT_TOP_P, top_k=DEFAULT_TOP_K, min_p=DEFAULT_MIN_P, max_tokens=32768,
    max_tokens_counts_thinking=True, stop_at_observation=False, repetition_guard=False,
)
#: The official evaluation lets the model think as long as it wants.
BENCH_THINK = ThinkBudget("full")


#: What awl's stream reader puts between a server's separate thinking and its content
#: (engine/remote/stream.py): awl's, not the server's, so `gen` leaves it out.
_SERVER_JOIN = THINK_CLOSE + "\n\n"


def gen_text(raw_output: str, parse_method: str, *, served: bool | None = None) -> str:
    """What the official evaluation stores as `gen`: the message content the server returned.

    A local model (`served` None): the answer after thinking, tags included, as a server
    with a reasoning parser returns it (it splits at the first `</think>`); thinking that
    never closed leaves no answer: "". A server that sent its thinking in a field of its own
    (`served` True): the content exactly as it came. One that sent it in the text (False):
    that text, thinking included (the judge step removes it)."""
    if served is False:
        return raw_output
    if parse_method == "unclosed-think":
        return ""
    if served:
        _, joined, content = raw_output.partition(_SERVER_JOIN)
        return content if joined else raw_output
    before, closed, after = raw_output.partition(THINK_CLOSE)
    return after if closed else before


@dataclass
class Progress:
    """Counts for a progress line: rows, generated tokens per second, time left."""

    total: int
    #: Rows written (failed ones too).
    done: int = 0
    #: Rows written as failed because their request kept failing (counted in `done` too).
    failed: int = 0
    #: Rows written as failed because they do not fit the context (counted in `done` too).
    unfit: int = 0
    generated_tokens: int = 0
    generate_s: float = 0.0
    prompt_tokens_total: int = 0
    prompt_tokens_evaluated: int = 0
    #: Rows whose prompt counts are awl's estimates (a server that did not report them).
    estimated_rows: int = 0
    started: float = field(default_factory=time.perf_counter)

    @property
    def tokens_per_s(self) -> float:
        return self.generated_tokens / self.generate_s if self.generate_s > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at this run's pace so far; None before the first row ends."""
        if self.done == 0:
            return None
        return (time.perf_counter() - self.started) / self.done * (self.total - self.done)


@dataclass(frozen=True)
class RowPredicted:
    """A row's prediction, written to the predictions file before this event. A row that did
    not fit the context is written too, as the official run fails it: `failed` says why."""

    row: BenchRow
    gen: str
    side: dict
    progress: Progress

    @property
    def failed(self) -> str | None:
        return self.side.get("failed")


@dataclass(frozen=True)
class RowFailed:
    """A row whose request kept failing: written as the official run writes it, an empty
    `gen` (a rerun skips it; `--retry-failed` predicts it again)."""

    row: BenchRow
    error: AwlError
    progress: Progress


PredictEvent = RowPredicted | RowFailed


def predict_rows(
    rows: list[BenchRow], backend: Backend, settings: RunSettings, out: PredictionsFile
) -> Iterator[PredictEvent]:
    """Predict `rows` in this order (skipping those `out` already holds), appending each,
    then put `out` in the input's order.

    A KeyboardInterrupt ends it between or inside rows: every finished row is on disk. A
    failed write to `out` ends it with that error (the rows before it are intact).
    """
    todo = [row for row in rows if row.line not in out.done]
    progress = Progress(total=len(todo))
    session = SessionSettings(sampling=settings.sampling, think=settings.think, seed=settings.seed)
    base = settings.to_dict()
    share_system_prompts(backend)
    for row in todo:
        try:
            gen, side = _predict_one(row, backend, session)
        except AwlError as error:
            yield write_failed(row, error, backend, base, out, progress)
            continue
        yield write_row(row, gen, side, base, out, progress)
    out.in_input_order()


def write_failed(row: BenchRow, error: AwlError, backend: Backend, base: dict, out: PredictionsFile,
                 progress: Progress) -> RowFailed:
    """Append a row whose request kept failing as the official run writes it (an empty `gen`)."""
    side = {"ctx": backend.info.n_ctx, "tokens": {}, "failed": error.one_line(), "cause": REQUEST_FAILED}
    write_row(row, "", side, base, out, progress)
    progress.failed += 1
    return RowFailed(row, error, progress)


def write_row(row: BenchRow, gen: str, side: dict, base: dict, out: PredictionsFile, progress: Progress) -> RowPredicted:
    """Append a predicted row (its side record completed with `base`, the run's settings) and count it."""
    side = {"line": row.line, **base, **side}
    out.append(prediction_row(row, gen, side))
    progress.done += 1
    progress.unfit += side.get("cause") == "context"
    tokens = side["tokens"]
    progress.generated_tokens += tokens.get("generated", 0)
    progress.generate_s += side.get("generate_s", 0.0)
    progress.prompt_tokens_total += tokens.get("prompt_total", 0)
    progress.prompt_tokens_evaluated += tokens.get("prompt_evaluated", 0)
    progress.estimated_rows += any(key.startswith("prompt") for key in tokens.get("estimated", ()))
    return RowPredicted(row, gen, side, progress)


def share_system_prompts(backend: Backend) -> None:
    """Backends with checkpoints keep one after the system message: trajectories of a benchmark
    file share their domain's system prompt (thousands of tokens of tool definitions)."""
    backend.checkpoint_system_prompt = True


def _predict_one(row: BenchRow, backend: Backend, session: SessionSettings) -> tuple[str, dict]:
    """(gen, the side record's row facts); AwlError when the row could not be predicted."""
    n_ctx = backend.info.n_ctx
    prompt = backend.count_tokens(bench_messages(sendable(row)), session.think)
    reason = unfit_reason(prompt, n_ctx, session.sampling, session.think)
    if reason is not None:
        tokens = {"prompt_total": prompt, **({} if backend.counts_exactly else {"estimated": ["prompt_total"]})}
        return "", {"ctx": n_ctx, "tokens": tokens, "failed": reason, "cause": "context"}
    world = bench_world(row, backend, session)
    record = predict_turn(world, row)
    if record is None:  # no cancel flag is passed: only a backend's own stop
        raise AwlError(f"row {row.line}: the generation was cancelled.", "Run the same command again.")
    side = {"ctx": n_ctx, "tokens": record.tokens, "finish": record.finish, "seconds": record.timings.get("total_s"),
            "generate_s": record.timings.get("generate_s", 0.0)}
    if record.context:  # never expected (the row fit): a history cut would change what the model saw
        return "", {**side, "failed": "history turns would have been left out to fit the context", "cause": "context"}
    # The World generates through a view of its own, which learns how the server sent this answer.
    return gen_text(record.raw_output, record.parse_method, served=world.backend.server_separates), side
