"""`awl export` and `awl import`: trajectories <-> AgentWorldBench JSONL rows."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer
from rich.markup import escape

from agentworld_local.cli.main import app
from agentworld_local.cli.consoles import stderr_console
from agentworld_local.cli.session import ensure_new_file
from agentworld_local.errors import InputError
from agentworld_local.paths import sessions_dir
from agentworld_local.terminal_text import safe_for_terminal
from agentworld_local.agentworldbench.rows import FORMAT, import_bench
from agentworld_local.agentworldbench.export import ExportPlan
from agentworld_local.trajectory.reader import read_trajectory

FORMATS = (FORMAT,)


def print_warnings(warnings: list[str]) -> None:
    """Each reader warning once, on stderr, safe for the terminal."""
    for warning in warnings:
        typer.echo(f"awl: warning: {safe_for_terminal(warning)}", err=True)


@app.command()
def export(
    file: Path = typer.Argument(..., metavar="FILE", help="A trajectory (.jsonl) written by `awl run`.", show_default=False),
    format: str = typer.Option(FORMAT, "--format", "-f", help=f"Output layout. One of: {', '.join(FORMATS)}."),
    out: Path = typer.Option(None, "--out", "-o", help="Write here instead of stdout (never overwrites).", show_default=False),
) -> None:
    """Export a session as benchmark rows: one JSONL row per turn of its current branch.

    Each row has `task`, `id`, `prompt` and `response` (every turn's prompt and observation), `current_prompt`, `system_str`, `turn_idx` and `total_turns`, as in AgentWorldBench. A file made by `awl import` gives back the rows it was imported from.

    Example: `awl export session.jsonl --format agentworldbench --out session-bench.jsonl`
    """
    if format not in FORMATS:
        raise InputError(f"Unknown export format `{format}`.", f"Use one of: {', '.join(FORMATS)}.")
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
