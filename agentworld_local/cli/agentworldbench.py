"""`awl export` and `awl import`: trajectories <-> AgentWorldBench JSONL rows."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer
from rich.markup import escape

from agentworld_local.cli.main import app
from agentworld_local.cli.consoles import stderr_console
from agentworld_local.cli.interrupts import exit_code
from agentworld_local.cli.turn_output import ensure_new_file
from agentworld_local.errors import InputError
from agentworld_local.paths import sessions_dir
from agentworld_local.terminal_text import safe_for_terminal
from agentworld_local.agentworldbench.rows import FORMAT, import_bench
from agentworld_local.agentworldbench.export import ExportPlan
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.agentworldbench.predict import BENCH_SAMPLING, BENCH_THINK, Progress, RowFailed, RowPredicted, predict_rows
from agentworld_local.agentworldbench.predictions import PredictionsFile, RunSettings
from agentworld_local.agentworldbench.rows import read_bench_rows
from agentworld_local.agentworldbench.selection import lines_of, select_rows, work_order
from agentworld_local.defaults import CTX_HELP, MODEL_HELP
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.trajectory.jsonl import dumps

FORMATS = (FORMAT,)


def print_warnings(warnings: list[str]) -> None:
    """Each reader warning once, on stderr, safe for the terminal."""
    for warning in warnings:
        typer.echo(f"awl: warning: {safe_for_terminal(warning)}", err=True)


@app.command()
def export(
    file: Path = typer.Argument(..., metavar="FILE", help="A trajectory (.jsonl) written by `awl run`.", show_default=False),
    format: str = typer.Option(FORMAT, "--format", "-f", help=f"Output layout. One of: {', '.join(FORMATS)}, asciicast (a terminal session as an asciinema .cast recording)."),
    out: Path = typer.Option(None, "--out", "-o", help="Write here instead of stdout (never overwrites).", show_default=False),
) -> None:
    """Export a session: benchmark rows (one JSONL row per turn of its current branch), or a terminal session as an asciinema recording.

    Each row has `task`, `id`, `prompt` and `response` (every turn's prompt and observation), `current_prompt`, `system_str`, `turn_idx` and `total_turns`, as in AgentWorldBench. A file made by `awl import` gives back the rows it was imported from.

    Example: `awl export session.jsonl --format agentworldbench --out session-bench.jsonl`; `awl export session.jsonl --format asciicast --out session.cast` then `asciinema play session.cast`.
    """
    if format == "asciicast":  # a recording, not benchmark rows: cli/replay.py writes it
        from agentworld_local.cli.replay import export_asciicast

        export_asciicast(file, out)
        return
    if format not in FORMATS:
        raise InputError(f"Unknown export format `{format}`.", f"Use one of: {', '.join(FORMATS)}, asciicast.")
    if out is not None:
        ensure_new_file(out)
    traj = read_trajectory(file)
    print_warnings(traj.warnings)
    plan = ExportPlan(traj)  # checks everything before a byte is written
    if out is None:
        _to_stdout(plan)
        return
    _to_file(plan, out)
    stderr_console().print(f"[dim]wrote {len(plan)} {'row' if len(plan) == 1 else 'rows'} to {escape(str(out))}[/dim]")


def _to_stdout(plan: ExportPlan) -> None:
    stdout = sys.stdout.buffer  # JSONL is UTF-8 whatever the terminal's locale says
    try:
        for chunk in plan.chunks():
            stdout.write(chunk)
        stdout.flush()
    except BrokenPipeError:  # `awl export s.jsonl | head -1`
        # Point stdout at devnull so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _to_file(plan: ExportPlan, out: Path) -> None:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        handle = open(out, "xb")
    except FileExistsError:
        raise InputError(f"{out} already exists.", "Choose another `--out` file, or delete that one first.") from None
    except OSError as error:
        raise InputError(f"Cannot write {out} ({error.strerror}).", "Choose a writable location.") from None
    try:
        with handle:
            for chunk in plan.chunks():
                handle.write(chunk)
    except BaseException as error:
        out.unlink(missing_ok=True)  # no half-written file is left to mistake for a result
        if isinstance(error, OSError):
            raise InputError(f"Cannot write {out} ({error.strerror or error}); nothing was kept.", "Free disk space or choose another location.") from None
        raise


@app.command("import")
def import_command(
    bench: Path = typer.Argument(..., metavar="BENCH.jsonl", help="AgentWorldBench rows (any domain).", show_default=False),
    out_dir: Path = typer.Option(None, "--out-dir", help="Where the trajectories go (default: the sessions dir, `bench-<file name>`).", show_default=False),
) -> None:
    """Turn benchmark rows into trajectories that `awl replay` shows.

    Rows of the same trajectory (same task, id and turns) become one file; its observations are the benchmark's ground truth. Existing files are never overwritten.

    Example: `awl import AgentWorldBench/terminal_test.jsonl --out-dir bench/` then `awl replay bench/terminal-<id>.jsonl`
    """
    target = out_dir or sessions_dir() / f"bench-{bench.stem}"
    written = import_bench(bench, target)
    for path in written:
        typer.echo(str(path))
    stderr_console().print(
        f"[dim]imported {len(written)} trajectories into {escape(str(target))}  (replay one: awl replay {escape(str(written[0]))})[/dim]"
    )


# -- awl bench predict ------------------------------------------------------------------

bench_app = typer.Typer(help="Run a world model over AgentWorldBench files.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")


@bench_app.command("predict")
def bench_predict(
    file: Path = typer.Argument(..., metavar="FILE", help="AgentWorldBench rows (JSONL, any domain).", show_default=False),
    model: str = typer.Option(..., "--model", "-m", help=MODEL_HELP, show_default=False),
    out: Path = typer.Option(..., "--out", "-o", help="The predictions file; run again with the same one to go on after an interruption.", show_default=False),
    rows: str = typer.Option(None, "--rows", help="Only these lines of FILE, e.g. `1-50` or `1-10,15`.", show_default=False),
    domain: str = typer.Option(None, "--domain", "-d", help="Only rows of this domain (terminal, swe, mcp, search, web, os, android).", show_default=False),
    temperature: float = typer.Option(BENCH_SAMPLING.temperature, "--temperature", help="Sampling temperature (the official evaluation's)."),
    top_p: float = typer.Option(BENCH_SAMPLING.top_p, "--top-p", help="Nucleus sampling (the model card's)."),
    top_k: int = typer.Option(BENCH_SAMPLING.top_k, "--top-k", help="Sample among this many likeliest tokens (the model card's)."),
    max_tokens: int = typer.Option(BENCH_SAMPLING.max_tokens, "--max-tokens", help="Most tokens for one answer after thinking (the official evaluation allows 32,768 new tokens in all; here thinking is bounded by --think and the context)."),
    think: str = typer.Option(None, "--think", help=f"Thinking: `full` (the model decides, as the official evaluation), `off`, or a budget in tokens. Default: {BENCH_THINK.label()}.", show_default=False),
    seed: int = typer.Option(0, "--seed", help="Sampling seed; each row samples with seed + its turn number."),
    ctx: int = typer.Option(None, "--ctx", help=CTX_HELP + " Long trajectories and long thinking need more.", show_default=False),
    gpu_layers: str = typer.Option("auto", "--gpu-layers", help="Layers to offload: auto, all, or N."),
    threads: int = typer.Option(None, "--threads", help="CPU threads (default: llama.cpp's choice).", show_default=False),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per finished row on stdout, and a summary at the end."),
    verbose: bool = typer.Option(False, "--verbose", help="Show llama.cpp's own log."),
) -> None:
    """Predict every selected row of a benchmark file, in the official evaluation's output format.

    Each output line is the input row, every field kept, with `gen` (the model's answer after thinking) and `awl_predict` (the row's line, the settings, the prompt tokens it evaluated). Rows are appended as they finish; run the same command again to go on after Ctrl+C or a crash: finished rows are skipped. Consecutive turns of one trajectory reuse the context, so each costs only its new tokens.

    Example: `awl bench predict terminal_test.jsonl -m qwen-agentworld-35b-a3b --out predictions.jsonl --rows 1-50`
    """
    from agentworld_local.cli.preflight import check_ctx_value, check_sampling, check_threads, check_writable
    from agentworld_local.cli.run import load_backend, say_model_limits

    budget = ThinkBudget.parse(think) if think is not None else BENCH_THINK
    check_sampling(max_tokens=max_tokens, temperature=temperature, top_p=top_p, top_k=top_k)
    check_ctx_value(ctx)
    threads = check_threads(threads)
    all_rows = read_bench_rows(file)
    chosen = select_rows(all_rows, spec=rows, domain=domain)
    sampling = SamplingConfig(temperature=temperature, top_p=top_p, top_k=top_k, min_p=BENCH_SAMPLING.min_p, max_tokens=max_tokens)
    settings = RunSettings(model_label(model), sampling, budget, seed)
    predictions = PredictionsFile.open(out, lines_of(all_rows), settings, source=file)
    err = stderr_console()
    if predictions.cut_bytes:
        err.print(f"awl: {out} ended in an unfinished line ({predictions.cut_bytes:,} bytes, cut off); its row is predicted again.", markup=False)
    order = work_order(chosen)
    todo = [row for row in order if row.line not in predictions.done]
    if not todo:
        err.print(f"awl: all {len(order)} selected rows are already in {out}; nothing to do.", markup=False)
        return
    if len(todo) < len(order):
        err.print(f"awl: going on in {out}: {len(order) - len(todo)} of {len(order)} selected rows are done, {len(todo)} to go.", markup=False)
    check_writable(out)
    backend = load_backend(model, gpu_layers=gpu_layers, ctx=ctx, threads=threads, verbose=verbose, quiet=as_json)
    failed: list[RowFailed] = []
    shown = _ProgressLine(as_json=as_json)
    last = None
    try:
        say_model_limits(backend, think)  # only a --think given: the default is the official evaluation's
        for event in predict_rows(order, backend, settings, predictions):
            shown.show(event)
            last = event.progress
            if isinstance(event, RowFailed):
                failed.append(event)
    except KeyboardInterrupt as interrupt:
        shown.end()
        done = last.done if last else 0
        err.print(f"awl: interrupted; {done} new {'row is' if done == 1 else 'rows are'} saved in {out}. "
                  "Run the same command again to go on.", markup=False)
        raise typer.Exit(exit_code(interrupt)) from None
    finally:
        predictions.close()
        backend.close()
    shown.end()
    _summary(last, out, failed, skipped=len(order) - len(todo), as_json=as_json)
    if failed:
        raise typer.Exit(1)


def model_label(spec: str) -> str:
    """The name the loaded backend will carry (recorded on every row), known before the load."""
    from agentworld_local.cli.run import SCRIPTED
    from agentworld_local.models.resolve import resolve_model

    if spec.startswith(SCRIPTED):
        return f"{SCRIPTED}{Path(spec[len(SCRIPTED):]).name}"
    return resolve_model(spec).name


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


class _ProgressLine:
    """Progress on stderr: one line kept up to date on a terminal, JSON lines with --json,
    nothing in between when stderr is not a terminal (the summary still comes)."""

    def __init__(self, *, as_json: bool) -> None:
        self.as_json = as_json
        self.live = not as_json and sys.stderr.isatty()
        self._drawn = False

    def show(self, event: RowPredicted | RowFailed) -> None:
        progress, row = event.progress, event.row
        if self.as_json:
            payload: dict = {"event": "row" if isinstance(event, RowPredicted) else "row_failed", "line": row.line,
                             "task": row.task, "id": row.id, "turn_idx": row.turn_idx,
                             "done": progress.done, "failed": progress.failed, "total": progress.total}
            if isinstance(event, RowPredicted):
                payload.update(tokens=event.side["tokens"], finish=event.side["finish"])
            else:
                payload["error"] = event.error.one_line()
            payload.update(tokens_per_s=round(progress.tokens_per_s, 2), eta_s=None if progress.eta_s is None else round(progress.eta_s, 1))
            sys.stdout.write(dumps(payload) + "\n")
            sys.stdout.flush()
            return
        if isinstance(event, RowFailed) and not self.as_json:
            self.end()
            typer.echo(f"awl: warning: row {row.line} was not predicted: {safe_for_terminal(event.error.one_line())}", err=True)
        if self.live:
            finished = progress.done + progress.failed
            text = (f"rows {finished}/{progress.total}  {progress.tokens_per_s:.1f} tok/s  ETA {_duration(progress.eta_s)}"
                    f"  (last: row {row.line}, {safe_for_terminal(row.domain)} turn {row.turn_idx})")
            sys.stderr.write(f"\r\x1b[K{text}")
            sys.stderr.flush()
            self._drawn = True

    def end(self) -> None:
        if self._drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._drawn = False


def _summary(progress: Progress | None, out: Path, failed: list[RowFailed], *, skipped: int, as_json: bool) -> None:
    done = progress.done if progress else 0
    total, evaluated = (progress.prompt_tokens_total, progress.prompt_tokens_evaluated) if progress else (0, 0)
    if as_json:
        sys.stdout.write(dumps({
            "event": "done", "out": str(out), "predicted": done, "failed": [event.row.line for event in failed],
            "skipped": skipped, "prompt_tokens_evaluated": evaluated, "prompt_tokens_total": total,
        }) + "\n")
        sys.stdout.flush()
        return
    reuse = f"; prompt tokens evaluated: {evaluated:,} of {total:,} ({total / evaluated:.1f}x fewer than from scratch)" if evaluated else ""
    stderr_console().print(f"awl: predicted {done} {'row' if done == 1 else 'rows'} into {out}{reuse}", markup=False)
    if failed:
        lines = ", ".join(str(event.row.line) for event in failed[:10]) + (" ..." if len(failed) > 10 else "")
        stderr_console().print(
            f"awl: {len(failed)} {'row was' if len(failed) == 1 else 'rows were'} not predicted (lines {lines}); "
            "fix the cause (e.g. a larger --ctx) and run the same command again: only they are done.", markup=False)
