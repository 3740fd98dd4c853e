"""`awl export` and `awl import`: trajectories <-> AgentWorldBench JSONL rows."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape

from agentworld_local.cli.main import app
from agentworld_local.cli.consoles import stderr_console
from agentworld_local.cli.session import ensure_new_file
from agentworld_local.errors import InputError
from agentworld_local.paths import sessions_dir
from agentworld_local.trajectory.agentworldbench import FORMAT, import_bench, trajectory_to_rows
from agentworld_local.trajectory.reader import read_trajectory

FORMATS = (FORMAT,)


@app.command()
def export(
    file: Path = typer.Argument(..., metavar="FILE", help="A trajectory (.jsonl) written by `awl run`.", show_default=False),
    format: str = typer.Option(FORMAT, "--format", "-f", help=f"Output layout. One of: {', '.join(FORMATS)}."),
    out: Path = typer.Option(None, "--out", "-o", help="Write here instead of stdout (never overwrites).", show_default=False),
) -> None:
    """Export a session as benchmark rows: one JSONL row per turn of its current branch.

    Each row has `task`, `id`, `prompt` and `response` (every turn's prompt and observation), `current_prompt`, `system_str`, `turn_idx` and `total_turns`, as in AgentWorldBench.

    Example: `awl export session.jsonl --format agentworldbench --out session-bench.jsonl`
    """
    if format not in FORMATS:
        raise InputError(f"Unknown export format `{format}`.", f"Use one of: {', '.join(FORMATS)}.")
    if out is not None:
        ensure_new_file(out)
    rows = trajectory_to_rows(read_trajectory(file))
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    if out is None:
        typer.echo(text, nl=False)
        return
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "x", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:
        raise InputError(f"Cannot write {out} ({error.strerror}).", "Choose a writable location.") from None
    stderr_console().print(f"[dim]wrote {len(rows)} rows to {escape(str(out))}[/dim]")


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
