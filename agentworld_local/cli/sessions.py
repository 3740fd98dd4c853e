"""`awl sessions list`: the saved sessions, newest first (session/listing.py)."""

from __future__ import annotations

import json
import sys
from datetime import datetime

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agentworld_local.cli.main import app
from agentworld_local.session.listing import list_sessions
from agentworld_local.terminal_text import safe_for_terminal

sessions_app = typer.Typer(
    help="The sessions saved in the sessions dir.\n\n"
    "Example: `awl sessions list`, then `awl run --resume last` or `awl play --resume last` to go on with the newest.",
    no_args_is_help=True,
)
app.add_typer(sessions_app, name="sessions")


@sessions_app.command("list")
def list_command(
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list (file, domain, scenario, model, turns, changed, problem)."),
) -> None:
    """List the saved sessions, newest first: file, domain or scenario, model, turns, last change.

    Example: `awl sessions list`; continue the newest with `awl run --resume last`.
    """
    from agentworld_local.paths import sessions_dir

    folder = sessions_dir()
    summaries = list_sessions(folder)
    if as_json:
        typer.echo(json.dumps([summary.to_dict() for summary in summaries], ensure_ascii=True, indent=2))
        return
    if not sys.stdout.isatty():  # one tab-separated line per session, for scripts
        for s in summaries:
            turns = "?" if s.turns is None else str(s.turns)
            fields = (str(s.path), s.scenario or s.domain, s.model or "", turns, s.changed_text())
            typer.echo("\t".join(safe_for_terminal(field).replace("\t", " ") for field in fields))
        return
    console = Console(highlight=False)
    if not summaries:
        console.print(Text(f"No saved sessions in {folder} yet. Start one with `awl run` or `awl play`.", style="dim"))
        return
    table = Table(box=None, pad_edge=False)
    # The file name stays whole (it is what `awl run --resume` takes); the others give way.
    table.add_column("file", no_wrap=True, min_width=max(len(s.path.name) for s in summaries))
    table.add_column("world")
    table.add_column("model")
    table.add_column("turns", no_wrap=True, justify="right")
    table.add_column("changed", no_wrap=True)
    for s in summaries:
        world = (Text(safe_for_terminal(s.scenario or s.domain)) if s.problem is None
                 else Text(f"unreadable: {safe_for_terminal(s.problem)}", style="yellow"))
        changed = datetime.fromtimestamp(s.changed).strftime("%Y-%m-%d %H:%M")
        table.add_row(Text(safe_for_terminal(s.path.name), style="bold"), world, Text(safe_for_terminal(s.model or "")),
                      "?" if s.turns is None else str(s.turns), changed)
    console.print(table)
    console.print(Text(f"\nin {safe_for_terminal(str(folder))}   go on with the newest: awl run --resume last", style="dim"))
