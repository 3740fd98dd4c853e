"""`awl run --from-bench FILE --row N`: re-simulate one benchmark turn, show it beside the truth;
and what both benchmark commands share: the official evaluation's settings, the context size."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.markup import escape

from agentworld_local.cli.consoles import stderr_console
from agentworld_local.cli.interrupts import exit_code
from agentworld_local.session.runner.outcome import raise_failure
from agentworld_local.terminal_text import safe_for_terminal
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import ThinkBudget
from agentworld_local.agentworldbench.context import choose_ctx
from agentworld_local.agentworldbench.predict import BENCH_SAMPLING, BENCH_THINK
from agentworld_local.agentworldbench.resimulate import sendable
from agentworld_local.agentworldbench.rows import BenchRow, bench_messages, same_turns
from agentworld_local.engine import events
from agentworld_local.engine.events import Saved
from agentworld_local.session.runner import SessionRunner
from agentworld_local.trajectory.jsonl import dumps


def bench_settings(*, think: str | None, temperature: float | None, max_tokens: int | None, seed: int,
                   stop_at_observation: bool = False, repetition_guard: bool = False) -> SessionSettings:
    """Settings for a benchmark command: the official evaluation's generation (BENCH_SAMPLING,
    BENCH_THINK) where an option was not given; `max_tokens` counts thinking and answer."""
    sampling = replace(
        BENCH_SAMPLING,
        temperature=BENCH_SAMPLING.temperature if temperature is None else temperature,
        max_tokens=BENCH_SAMPLING.max_tokens if max_tokens is None else max_tokens,
        stop_at_observation=stop_at_observation, repetition_guard=repetition_guard,
    )
    return SessionSettings(sampling=sampling, think=BENCH_THINK if think is None else ThinkBudget.parse(think), seed=seed)


def bench_context(model: str | None, rows: list[BenchRow], settings: SessionSettings, ctx: int | None) -> int | None:
    """The context to load for these rows: `--ctx` as given, or the size choose_ctx picks for
    the longest row (its prompt counted with the model's own tokenizer before the load), said
    on stderr with why. A remote server (no `model`) has its own context."""
    if ctx is not None or model is None:
        return ctx
    from agentworld_local.engine.loading import ctx_ceiling, prompt_counter

    # A trajectory's later turns carry its earlier ones: only each trajectory's last selected row can be the longest.
    last = {same_turns(row): row for row in sorted(rows, key=lambda row: row.turn_idx)}
    counter = prompt_counter(model)
    try:
        longest = max(counter.count_tokens(bench_messages(sendable(row)), settings.think) for row in last.values())
    finally:
        counter.close()
    ceiling, why = ctx_ceiling(model)
    choice = choose_ctx(longest, settings.sampling, settings.think, ceiling=ceiling, ceiling_reason=why)
    stderr_console().print(f"awl: context {choice.n_ctx:,} tokens: {choice.reason}.", markup=False, style="dim")
    return choice.n_ctx


def run_bench_row(
    runner: SessionRunner, row: BenchRow, source: Path, settings: SessionSettings, *, out: Path,
    as_json: bool, show_thinking: bool,
) -> int:
    """Predict the row's turn on the runner (session/resimulate.py saves it after the
    ground-truth turns); print both. A row whose prompt and generation room do not fit the
    context is refused before anything is written: its history is never cut."""
    err = stderr_console()
    sent = runner.resimulate(row, source, settings, out)
    ground_truth, record, cancelled = 0, None, False
    try:
        for _, event in sent.events():
            if isinstance(event, events.SessionOpened):
                ground_truth = event.turns
                if not as_json:
                    err.print(f"[dim]── row {row.line}: {_shown(row.task)} id {_shown(str(row.id))}, turn {row.turn_idx} "
                              f"(after {ground_truth} ground-truth {'turn' if ground_truth == 1 else 'turns'})[/dim]")
            elif isinstance(event, events.ThinkingDelta) and show_thinking:
                sys.stderr.write(safe_for_terminal(event.text))
                sys.stderr.flush()
            elif isinstance(event, events.TurnFinished):
                record = event.record
            elif isinstance(event, events.TurnCancelled):
                cancelled = True
            else:
                raise_failure(event)
    except KeyboardInterrupt as interrupt:  # Ctrl+C or SIGTERM (exit 130 or 143)
        runner.close()  # the prediction stops at its next token; the ground truth stays saved
        err.print(f"\n[yellow]interrupted[/yellow]: the ground-truth turns are saved in {_shown(str(out))}")
        _say_saved(out, ground_truth, as_json=as_json)
        return exit_code(interrupt)
    if cancelled or record is None:
        err.print("\n[yellow]cancelled; the prediction was not saved[/yellow]")
        return 130
    if show_thinking:
        sys.stderr.write("\n")
    if as_json:
        payload = {
            "row": row.line, "task": row.task, "id": row.id, "turn_idx": row.turn_idx,
            "prediction": record.observation, "ground_truth": row.ground_truth, "record": record.to_dict(),
        }
        sys.stdout.write(dumps(payload) + "\n")
        _say_saved(out, ground_truth + 1, as_json=True)  # the ground truth and the prediction
    else:
        show_comparison(Console(highlight=False), record.observation, row.ground_truth, plain=not sys.stdout.isatty())
        err.print(f"[dim]saved to {_shown(str(out))}  (replay: awl replay {_shown(str(out))})[/dim]")
    return 0


def _shown(text: str) -> str:
    """A row's field (or a path) inside rich markup: control characters, ANSI escapes and lone
    surrogates shown escaped, brackets never read as markup."""
    return escape(safe_for_terminal(text, keep_colour=False))


def _say_saved(out: Path, turns: int, *, as_json: bool) -> None:
    """With --json the last line says where the trajectory went, as `awl run --json` does."""
    if as_json:
        sys.stdout.write(dumps(Saved(str(out), turns).to_dict()) + "\n")  # as awl run --json ends
        sys.stdout.flush()


def show_comparison(console: Console, prediction: str, truth: str, *, plain: bool) -> None:
    """Prediction and ground truth side by side; stacked plain text in a pipe."""
    if plain:  # exact text (rich would wrap long lines); only what cannot be encoded is replaced
        prediction, truth = _encodable(prediction), _encodable(truth)
        console.file.write(f"== prediction (model) ==\n{prediction}\n\n== ground truth (benchmark) ==\n{truth}\n")
        console.file.flush()
        return
    table = Table(expand=True, show_lines=False)
    table.add_column("prediction (model)", ratio=1, overflow="fold")
    table.add_column("ground truth (benchmark)", ratio=1, overflow="fold")
    # Text, not str: brackets in observations are not rich markup.
    table.add_row(Text(safe_for_terminal(prediction, keep_colour=False)), Text(safe_for_terminal(truth, keep_colour=False)))
    console.print(table)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _encodable(text: str) -> str:
    """Lone surrogates (from a damaged row) become U+FFFD; nothing else changes."""
    return _SURROGATE.sub("\ufffd", text)
