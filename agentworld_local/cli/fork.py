"""`awl fork FILE --out NEW`: a clean copy of a saved session, to continue or to branch from."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from agentworld_local.cli.agentworldbench import print_warnings
from agentworld_local.cli.consoles import stderr_console
from agentworld_local.cli.main import app
from agentworld_local.session.forking import fork_file
from agentworld_local.files import user_path_option


@app.command()
def fork(
    file: Path = typer.Argument(..., metavar="FILE", help="A trajectory (.jsonl) written by `awl run`.", show_default=False, callback=user_path_option),
    out: Path = typer.Option(..., "--out", "-o", help="The new trajectory file (never overwrites).", show_default=False, callback=user_path_option),
    turn: int = typer.Option(
        None, "--turn", help="Keep the current branch up to this turn (0 keeps only the setup). Default: every intact turn.",
        show_default=False,
    ),
) -> None:
    """Copy a session's current branch, up to a turn, into a new clean file.

    Undone turns are left out and the turns are renumbered. A file whose last line was cut off, or that is damaged part-way, gives its intact turns.

    Example: `awl fork session.jsonl --turn 3 --out session-from-3.jsonl`
    """
    forked, warnings = fork_file(file, out, turn)
    # Said after the copy is made (an error stays one line). The damage warning ends by
    # suggesting this very command; the rest still matters.
    print_warnings([warning.split(" To keep going")[0] for warning in warnings])
    count = forked.turn
    stderr_console().print(
        f"[dim]wrote {count} {'turn' if count == 1 else 'turns'} to {escape(str(out))}  (replay: awl replay {escape(str(out))})[/dim]"
    )
