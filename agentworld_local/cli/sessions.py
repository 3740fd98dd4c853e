"""`awl sessions list`: the saved sessions, newest first, wherever awl wrote them (session/listing.py)."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agentworld_local.cli.consoles import stderr_console
from agentworld_local.cli.main import app
from agentworld_local.session.listing import list_sessions
from agentworld_local.terminal_text import safe_for_terminal

sessions_app = typer.Typer(
    help="The sessions awl saved: in the sessions dir, and wherever `--out` put them.\n\n"
    "Example: `awl sessions list`, then `awl run --resume last` or `awl play --resume last` to go on with the newest.",
    no_args_is_help=True,
)
app.add_typer(sessions_app, name="sessions")

HEADER = ("file", "world", "model", "turns", "changed")


@sessions_app.command("list")
def list_command(
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list (file, domain, scenario, model, turns, changed, problem)."),
) -> None:
    """List the saved sessions, newest first: file, domain or scenario, model, turns, last change.

    Sessions written elsewhere with `--out` are listed too (awl keeps an index of the files it wrote).

    Example: `awl sessions list`; continue the newest with `awl run --resume last`.
    """
    from agentworld_local.paths import sessions_dir

    folder = sessions_dir()
    summaries = list_sessions(folder, everywhere=True)
    if as_json:
        typer.echo(json.dumps([summary.to_dict() for summary in summaries], ensure_ascii=True, indent=2))
        return
    if not summaries:  # on stderr: a script reading stdout gets no line at all
        stderr_console().print(Text(f"No sessions yet in {safe_for_terminal(str(folder))}; start one with `awl run` or `awl`.",
                                    style="dim"))
        return
    if not sys.stdout.isatty():  # a header, then one tab-separated line per session, for scripts
        typer.echo("\t".join(HEADER))
        for s in summaries:
            turns = "?" if s.turns is None else str(s.turns)
            fields = (str(s.path), s.scenario or s.domain, s.model or "", turns, s.changed_text())
            typer.echo("\t".join(safe_for_terminal(field).replace("\t", " ") for field in fields))
        return
    console = Console(highlight=False)
    table = Table(box=None, pad_edge=False)
    shown = {s.path: _shown_name(s.path, folder) for s in summaries}
    # The file name stays whole (it is what `awl run --resume` takes); the others give way.
    table.add_column(HEADER[0], no_wrap=True, min_width=max(len(name) for name in shown.values()))
    table.add_column(HEADER[1])
    table.add_column(HEADER[2])
    table.add_column(HEADER[3], no_wrap=True, justify="right")
    table.add_column(HEADER[4], no_wrap=True)
    for s in summaries:
        world = (Text(safe_for_terminal(s.scenario or s.domain)) if s.problem is None
                 else Text(f"unreadable: {safe_for_terminal(s.problem)}", style="yellow"))
        changed = datetime.fromtimestamp(s.changed).strftime("%Y-%m-%d %H:%M")
        table.add_row(Text(safe_for_terminal(shown[s.path]), style="bold"), world, Text(safe_for_terminal(s.model or "")),
                      "?" if s.turns is None else str(s.turns), changed)
    console.print(table)
    console.print(Text(f"\nnames alone are in {safe_for_terminal(str(folder))}   go on with the newest: awl run --resume last",
                       style="dim"))


def _shown_name(path: Path, folder: Path) -> str:
    """The name alone in the sessions dir; the whole path elsewhere (what `--resume` takes)."""
    return path.name if path.parent == folder else str(path)
