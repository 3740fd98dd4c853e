"""`awl export` and `awl import`: trajectories <-> AgentWorldBench JSONL rows."""

from __future__ import annotations

import os
import sys
from typing import Any
from dataclasses import replace
from pathlib import Path

import typer
from rich.markup import escape

from agentworld_local.cli.main import app
from agentworld_local.cli.consoles import stderr_console
from agentworld_local.cli.interrupts import exit_code
from agentworld_local.session.files import ensure_new_file, write_whole
from agentworld_local.errors import AwlError, InputError
from agentworld_local.files import check_name_length, fit_name, user_path_option
from agentworld_local.paths import sessions_dir
from agentworld_local.terminal_text import safe_for_terminal
from agentworld_local.agentworldbench.rows import FORMAT, import_bench
from agentworld_local.agentworldbench.export import ExportPlan
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.agentworldbench.predict import BENCH_SAMPLING, BENCH_THINK, Progress, RowFailed, RowPredicted, predict_rows
from agentworld_local.agentworldbench.predictions import PredictionsFile, RunSettings
from agentworld_local.agentworldbench.rows import BenchFile
from agentworld_local.agentworldbench.selection import Malformed, select_lines, work_order
from agentworld_local.agentworldbench.parallel import predict_rows_at_once
from agentworld_local.engine.remote.options import SERVER_PARALLEL_DEFAULTS
from agentworld_local.cli.model_options import check_concurrency, model_or_server, offload_model_options, remote_model_options
from agentworld_local.defaults import DEFAULT_THINK_TOKENS, MODEL_HELP
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.models.offload_options import OffloadOptions
from agentworld_local.trajectory.jsonl import dumps

FORMATS = (FORMAT,)
#: `--format html`: a session's pages in one file (web, os, android).
HTML = "html"


def print_warnings(warnings: list[str]) -> None:
    """Each reader warning once, on stderr, safe for the terminal."""
    for warning in warnings:
        typer.echo(f"awl: warning: {safe_for_terminal(warning)}", err=True)


@app.command()
def export(
    file: Path = typer.Argument(..., metavar="FILE", help="A trajectory (.jsonl) written by `awl run`.", show_default=False, callback=user_path_option),
    format: str = typer.Option(FORMAT, "--format", "-f", help=f"Output layout. One of: {', '.join(FORMATS)}, asciicast (a terminal session as an asciinema .cast recording), html (a web, os or android session's pages as one self-contained, inert HTML file)."),
    out: Path = typer.Option(None, "--out", "-o", help="Write here instead of stdout (never overwrites).", show_default=False, callback=user_path_option),
) -> None:
    """Export a session: benchmark rows (one JSONL row per turn of its current branch), a terminal session as an asciinema recording, or a web or desktop session's pages as one HTML file.

    Each row has `task`, `id`, `prompt` and `response` (every turn's prompt and observation), `current_prompt`, `system_str`, `turn_idx` and `total_turns`, as in AgentWorldBench. A file made by `awl import` gives back the rows it was imported from.

    The HTML file has a section per turn (its number, the action, the page), opens offline, and shows the model's markup as `o` does: sandboxed, with nothing loaded and no script run.

    Example: `awl export session.jsonl --format agentworldbench --out session-bench.jsonl`; `awl export session.jsonl --format asciicast --out session.cast` then `asciinema play session.cast`; `awl export shop.jsonl --format html --out shop.html`.
    """
    if format == "asciicast":  # a recording, not benchmark rows: cli/replay.py writes it
        from agentworld_local.cli.replay import export_asciicast

        export_asciicast(file, out)
        return
    if format == HTML:
        _export_html(file, out)
        return
    if format not in FORMATS:
        raise InputError(f"Unknown export format `{format}`.", f"Use one of: {', '.join(FORMATS)}, asciicast, {HTML}.")
    if out is not None:
        ensure_new_file(out)
    traj = read_trajectory(file)
    print_warnings(traj.warnings)
    plan = ExportPlan(traj)  # checks everything before a byte is written
    if out is None:
        _to_stdout(plan)
        return
    write_whole(out, plan.chunks())
    stderr_console().print(f"[dim]wrote {len(plan)} {'row' if len(plan) == 1 else 'rows'} to {escape(str(out))}[/dim]")


def _export_html(file: Path, out: Path | None) -> None:
    """`--format html`: the session's pages as one inert HTML file (views/session_page.py);
    stdout without --out, and an existing file is never overwritten."""
    from agentworld_local.views.session_page import session_html

    if out is not None:
        ensure_new_file(out, session=False, suffix=".html")  # a page, not a session
    traj = read_trajectory(file)
    print_warnings(traj.warnings)
    # Refused before a byte is written; lone surrogates were replaced on the way, this is a backstop.
    data = session_html(traj).encode("utf-8", "replace")
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    write_whole(out, [data])
    stderr_console().print(f"[dim]wrote {escape(str(out))}: open it in a browser (it loads nothing and runs no "
                           f"script)[/dim]")


def _to_stdout(plan: ExportPlan) -> None:
    stdout = sys.stdout.buffer  # JSONL is UTF-8 whatever the terminal's locale says
    try:
        for chunk in plan.chunks():
            stdout.write(chunk)
        stdout.flush()
    except BrokenPipeError:  # `awl export s.jsonl | head -1`
        # Point stdout at devnull so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


@app.command("import")
def import_command(
    bench: Path = typer.Argument(..., metavar="BENCH.jsonl", help="AgentWorldBench rows (any domain).", show_default=False, callback=user_path_option),
    out_dir: Path = typer.Option(None, "--out-dir", help="Where the trajectories go (default: the sessions dir, `bench-<file name>`).", show_default=False, callback=user_path_option),
) -> None:
    """Turn benchmark rows into trajectories that `awl replay` shows.

    Rows of the same trajectory (same task, id and turns) become one file; its observations are the benchmark's ground truth. Existing files are never overwritten.

    Example: `awl import AgentWorldBench/terminal_test.jsonl --out-dir bench/` then `awl replay bench/terminal-<id>.jsonl`
    """
    target = out_dir or sessions_dir() / fit_name(f"bench-{bench.stem}")
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
@remote_model_options
@offload_model_options
def bench_predict(
    file: Path = typer.Argument(..., metavar="FILE", help="AgentWorldBench rows (JSONL, any domain).", show_default=False, callback=user_path_option),
    model: str = typer.Option(None, "--model", "-m", help=MODEL_HELP + " Or a server: --backend openai.", show_default=False),
    out: Path = typer.Option(..., "--out", "-o", help="The predictions file; run again with the same one to go on after an interruption.", show_default=False, callback=user_path_option),
    rows: str = typer.Option(None, "--rows", help="Only these lines of FILE, e.g. `1-50` or `1-10,15`.", show_default=False),
    domain: str = typer.Option(None, "--domain", "-d", help="Only rows of this domain (terminal, swe, mcp, search, web, os, android).", show_default=False),
    temperature: float = typer.Option(BENCH_SAMPLING.temperature, "--temperature", help="Sampling temperature (the official evaluation's)."),
    top_p: float = typer.Option(BENCH_SAMPLING.top_p, "--top-p", help="Nucleus sampling (the model card's)."),
    top_k: int = typer.Option(BENCH_SAMPLING.top_k, "--top-k", help="Sample among this many likeliest tokens (the model card's)."),
    max_tokens: int = typer.Option(BENCH_SAMPLING.max_tokens, "--max-tokens", help="Most new tokens per row, thinking and answer together (the official evaluation's)."),
    think: str = typer.Option(None, "--think", help=f"Thinking: `full` (the model decides, as the official evaluation), `off`, or a budget in tokens. Default: {BENCH_THINK.label()}, the official evaluation's budget ({BENCH_SAMPLING.max_tokens:,} new tokens for thinking and answer, --max-tokens), not the {DEFAULT_THINK_TOKENS:,}-token thinking budget of `awl run`.", show_default=False),
    stop_at_observation: bool = typer.Option(False, "--stop-at-observation", help="End each answer at its first closed observation block (the official evaluation generates to the end of the turn)."),
    repetition_guard: bool = typer.Option(False, "--repetition-guard", help="End an answer that falls into a degenerate loop (the official evaluation has no such guard)."),
    seed: int = typer.Option(0, "--seed", help="Sampling seed; each row samples with seed + its turn number."),
    ctx: int = typer.Option(None, "--ctx", help="Context size in tokens (default: enough for the longest selected row and --max-tokens, within what the model and this machine take; with --backend openai, the server's own, which a server that does not say it needs given here). Rows that do not fit are written as failed, as the official run fails them.", show_default=False),
    gpu_layers: str = typer.Option("auto", "--gpu-layers", help="Layers to offload: auto, all, or N."),
    threads: int = typer.Option(None, "--threads", help="CPU threads (default: llama.cpp's choice).", show_default=False),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per finished row on stdout, and a summary at the end."),
    verbose: bool = typer.Option(False, "--verbose", help="Show llama.cpp's own log."),
    concurrency: int = typer.Option(None, "--concurrency", help=f"With --backend openai: trajectories predicted at once, each in its order (default: what the server says it decodes at once, else {SERVER_PARALLEL_DEFAULTS}; llama-cpp-python's server still gets one request at a time).", show_default=False),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Predict again the rows of --out whose request kept failing (without it a rerun keeps them: they are written as the official run writes them, with an empty gen)."),
    remote: RemoteOptions | None = None,
    offload: OffloadOptions | None = None,
) -> None:
    """Predict every selected row of a benchmark file as the official evaluation generates, in its output format.

    Each output line is the input row, every field kept, with `gen` (the model's answer after thinking) and `awl_predict` (the row's line, the model and its file's identity, the settings, the prompt tokens it evaluated). Rows are appended as they finish, and the file is put in the input's order at the end; run the same command again to go on after Ctrl+C or a crash: finished rows are skipped. A malformed row is named and skipped; a row too long for the context, or whose request keeps failing, is written with an empty `gen`, as the official run writes it. Consecutive turns of one trajectory reuse the context, so each costs only its new tokens.

    Example: `awl bench predict terminal_test.jsonl -m qwen-agentworld-35b-a3b --out predictions.jsonl --rows 1-50`
    """
    from agentworld_local.cli.preflight import check_ctx_value, check_sampling, check_threads, check_writable
    from agentworld_local.cli.resimulate import bench_context, bench_settings
    from agentworld_local.cli.run import load_backend, say_model_limits

    check_sampling(max_tokens=max_tokens, temperature=temperature, top_p=top_p, top_k=top_k)
    model_or_server(model, remote, "bench predict")
    check_concurrency(concurrency, remote)
    check_name_length(out, "--out")
    session = bench_settings(think=think, temperature=temperature, max_tokens=max_tokens, seed=seed,
                             stop_at_observation=stop_at_observation, repetition_guard=repetition_guard)
    session.sampling = replace(session.sampling, top_p=top_p, top_k=top_k)
    check_ctx_value(ctx)
    threads = check_threads(threads)
    bench = BenchFile(file)
    selection = select_lines(bench, spec=rows, domain=domain)
    PredictionsFile.check_path(out, file)
    if remote is None:
        settings = RunSettings(model_label(model), session.sampling, session.think, seed, model_file=model_file(model))
    else:  # a server's model: its name and where, compared on a rerun as a file's identity is
        identity = {"served": remote.api_model, "endpoint": remote.endpoint}
        settings = RunSettings(remote.spec, session.sampling, session.think, seed, model_file=identity)
    predictions = PredictionsFile.open(out, bench.fields(), settings, source=file, retry_failed=retry_failed)
    err = stderr_console()
    _say_malformed(selection.malformed, as_json=as_json)
    if predictions.cut_bytes:
        err.print(f"awl: {out} ended in an unfinished line ({predictions.cut_bytes:,} bytes, cut off); its row is predicted again.", markup=False)
    if predictions.retried:
        err.print(f"awl: {_count_rows(predictions.retried)} whose request had failed {'is' if predictions.retried == 1 else 'are'} "
                  "predicted again (--retry-failed).", markup=False)
    order = work_order(selection.rows)
    todo = [row for row in order if row.line not in predictions.done]
    if not todo:
        if order:
            err.print(f"awl: all {len(order)} selected rows are already in {out}; nothing to do.", markup=False)
        predictions.in_input_order()
        _summary(None, out, [], selection.malformed, skipped=len(order), as_json=as_json)
        raise typer.Exit(1 if selection.malformed else 0)
    if len(todo) < len(order):
        err.print(f"awl: going on in {out}: {len(order) - len(todo)} of {len(order)} selected rows are done, {len(todo)} to go.", markup=False)
    check_writable(out)
    ctx = bench_context(model, order, session, ctx)
    backend = load_backend(model, gpu_layers=gpu_layers, ctx=ctx, threads=threads, verbose=verbose, quiet=as_json,
                           remote=remote, offload=offload)
    failed: list[RowFailed] = []
    unfit: list[RowPredicted] = []
    shown = _ProgressLine(as_json=as_json)
    last = None
    events = None
    try:
        _check_server_context(backend, remote, ctx)
        say_model_limits(backend.info, think)  # only a --think given: the default is the official evaluation's
        if remote is None:
            events = predict_rows(order, backend, settings, predictions)
        else:
            at_once = concurrency or backend.parallel
            err.print(f"awl: up to {at_once} trajectories at once on {remote.endpoint}.", markup=False, style="dim")
            events = predict_rows_at_once(order, backend, settings, predictions, concurrency=at_once)
        for event in events:
            shown.show(event)
            last = event.progress
            if isinstance(event, RowFailed):
                failed.append(event)
            elif event.failed:
                unfit.append(event)
    except KeyboardInterrupt as interrupt:
        shown.end()
        if events is not None:
            events.close()  # now, so the rows that finish while it stops are written before the count
        done = last.done if last else 0
        err.print(f"awl: interrupted; {done} new {'row is' if done == 1 else 'rows are'} saved in {out}. "
                  "Run the same command again to go on.", markup=False)
        raise typer.Exit(exit_code(interrupt)) from None
    except AwlError:
        shown.end()  # the error line (a failed write: what is kept, what to do) starts a line of its own
        raise
    finally:
        predictions.close()
        backend.close()
    shown.end()
    _summary(last, out, failed, selection.malformed, skipped=len(order) - len(todo), unfit=unfit, as_json=as_json,
             ctx=backend.info.n_ctx)
    every_row_failed = last is not None and last.done > 0 and last.done == last.failed + last.unfit
    if every_row_failed:
        err.print(f"awl: every row of this run failed; {out} holds no prediction to judge.", markup=False)
    if failed or selection.malformed or every_row_failed:
        raise typer.Exit(1)


def _check_server_context(backend: Any, remote: RemoteOptions | None, ctx: int | None) -> None:
    """A server that does not say its context, with no --ctx: refused before any row. awl
    would plan with a guess and fail every row that the guess does not hold."""
    facts = getattr(backend, "facts", None)
    if remote is None or ctx is not None or facts is None or facts.n_ctx is not None:
        return
    raise InputError(f"The server at {remote.endpoint} does not say how large its context is, so awl cannot tell "
                     "which rows fit.", "Give the context it serves with --ctx, e.g. `--ctx 262144` "
                     "(vLLM --max-model-len, SGLang --context-length, llama-server -c).")


def model_label(spec: str) -> str:
    """The name the loaded backend will carry (recorded on every row), known before the load."""
    from agentworld_local.cli.run import SCRIPTED
    from agentworld_local.models.resolve import resolve_model

    if spec.startswith(SCRIPTED):
        return f"{SCRIPTED}{Path(spec[len(SCRIPTED):]).name}"
    return resolve_model(spec).name


def model_file(spec: str) -> dict:
    """The model file's identity (size and hash, as the loaded backend reports them), known
    before the load: a rerun in the same `--out` must use the same file, whatever its name."""
    from agentworld_local.cli.run import SCRIPTED
    from agentworld_local.models.gguf_file import file_identity
    from agentworld_local.models.resolve import resolve_model

    path = Path(spec[len(SCRIPTED):]) if spec.startswith(SCRIPTED) else resolve_model(spec).path
    try:
        identity = file_identity(Path(path))
    except OSError as error:
        raise InputError(f"Cannot read the model file {path} ({error.strerror}).", "Check the path given to `--model`.") from None
    return {"size": identity.size, "sha256": identity.sha256, "sha256_scope": identity.scope}


def _say_malformed(malformed: list[Malformed], *, as_json: bool) -> None:
    """Each malformed selected row, one line each, before the run: it is skipped, the rest goes on."""
    for problem in malformed:
        if as_json:
            sys.stdout.write(dumps({"event": "row_malformed", "line": problem.line, "error": problem.reason}) + "\n")
        else:
            typer.echo(f"awl: warning: {safe_for_terminal(problem.reason)} This row is skipped; the others are predicted.", err=True)
    sys.stdout.flush()


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
            kind = "row_failed" if isinstance(event, RowFailed) else "row_unfit" if event.failed else "row"
            payload: dict = {"event": kind, "line": row.line, "task": row.task, "id": row.id, "turn_idx": row.turn_idx,
                             "done": progress.done, "failed": progress.failed, "unfit": progress.unfit, "total": progress.total}
            if isinstance(event, RowPredicted):
                payload.update(tokens=event.side["tokens"], finish=event.side.get("finish"))
                if event.failed:
                    payload["error"] = event.failed
            else:
                payload["error"] = event.error.one_line()
            payload.update(tokens_per_s=round(progress.tokens_per_s, 2), eta_s=None if progress.eta_s is None else round(progress.eta_s, 1))
            sys.stdout.write(dumps(payload) + "\n")
            sys.stdout.flush()
            return
        if isinstance(event, RowFailed):
            self.end()
            typer.echo(f"awl: warning: row {row.line} failed: {safe_for_terminal(event.error.one_line())} It is written with an "
                       "empty gen, as the official run writes it.", err=True)
        elif event.failed:
            self.end()
            typer.echo(f"awl: warning: row {row.line} does not fit: {event.failed}; written with an empty gen, as the "
                       "official run fails it.", err=True)
        if self.live:
            finished = progress.done
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


def _summary(progress: Progress | None, out: Path, failed: list[RowFailed], malformed: list[Malformed], *,
             skipped: int, as_json: bool, unfit: list[RowPredicted] | None = None, ctx: int | None = None) -> None:
    unfit = unfit or []
    predicted = (progress.done if progress else 0) - len(unfit) - len(failed)
    total, evaluated = (progress.prompt_tokens_total, progress.prompt_tokens_evaluated) if progress else (0, 0)
    estimated = progress.estimated_rows if progress else 0
    if as_json:
        sys.stdout.write(dumps({
            "event": "done", "out": str(out), "predicted": predicted, "unfit": [event.row.line for event in unfit],
            "failed": [event.row.line for event in failed], "malformed": [problem.line for problem in malformed],
            "skipped": skipped, "prompt_tokens_evaluated": evaluated, "prompt_tokens_total": total,
            "prompt_tokens_estimated_rows": estimated, "ctx": ctx,
        }) + "\n")
        sys.stdout.flush()
        return
    err = stderr_console()
    about = "~" if estimated else ""
    reuse = (f"; prompt tokens evaluated: {about}{evaluated:,} of {about}{total:,} "
             f"({total / evaluated:.1f}x fewer than from scratch)") if evaluated else ""
    if estimated:
        reuse += (f" (~: awl's estimate for {_count_rows(estimated)}, whose counts the server did not report)")
    err.print(f"awl: predicted {_count_rows(predicted)} into {out}{reuse}", markup=False)
    if unfit:
        err.print(f"awl: {_count_rows(len(unfit))} did not fit the context and {_were(unfit)} written with an empty gen, "
                  f"as the official run fails them (lines {_lines(unfit)}); to predict them, run again with a larger "
                  "--ctx and another --out.", markup=False)
    if malformed:
        err.print(f"awl: {_count_rows(len(malformed))} of the file {_were(malformed)} malformed and skipped "
                  f"(lines {_lines(malformed)}); fix them and run the same command again: only they are done.", markup=False)
    if failed:
        err.print(f"awl: {_count_rows(len(failed))} failed (the request kept failing) and {_were(failed)} written with an "
                  f"empty gen, as the official run writes them (lines {_lines(failed)}); fix the cause and run the same "
                  "command with --retry-failed: only they are done again.", markup=False)


def _count_rows(number: int) -> str:
    return f"{number} {'row' if number == 1 else 'rows'}"


def _were(items: list) -> str:
    return "was" if len(items) == 1 else "were"


def _lines(items: list) -> str:
    """The first lines of rows (events carry `.row.line`, malformed rows `.line`)."""
    lines = [str(item.line if isinstance(item, Malformed) else item.row.line) for item in items]
    return ", ".join(lines[:10]) + (" ..." if len(lines) > 10 else "")
