"""`awl replay FILE`: show a saved session. Loads no model."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.console import Console

from agentworld_local.cli.agentworldbench import print_warnings
from agentworld_local.cli.main import app
from agentworld_local.errors import InputError
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.cli.replay_plain import replay as render_replay


@app.command()
def replay(
    file: Path = typer.Argument(
        ..., help="A trajectory file (.jsonl) written by `awl run`.", metavar="FILE", show_default=False
    ),
    speed: float = typer.Option(
        0.0, "--speed", help="Seconds to pause between turns; on a terminal the observations are typed out."
    ),
    turn: int | None = typer.Option(
        None, "--turn", help="Show only this turn (1-based position in the current branch).", show_default=False
    ),
    plain: bool = typer.Option(
        False, "--plain", help="Plain text: no colours or box characters. Automatic when output is not a terminal."
    ),
    thinking: bool = typer.Option(False, "--thinking/--no-thinking", help="Also show the model's thinking."),
) -> None:
    """Replay a saved session turn by turn, without loading a model.

    Shows the session's setup, then each action and the observation the model predicted, following the current branch (turns undone during the session are skipped).

    Example:  awl replay ~/sessions/demo.jsonl --speed 1 --thinking
    """
    # Checked here, not with typer's min=, so a bad value is one `awl: error:` line.
    if speed < 0:
        raise InputError(f"--speed must be 0 or more seconds, not {speed}.", "Use --speed 0 for no pause.")
    if turn is not None and turn < 1:
        raise InputError(f"--turn counts from 1, not {turn}.", "Use --turn 1 for the first turn.")
    traj = read_trajectory(file)
    print_warnings(traj.warnings)
    plain = plain or not sys.stdout.isatty()
    console = Console(highlight=False)
    # A closed pipe (`awl replay x | head`) is handled by rich: quiet exit, status 1.
    render_replay(traj, console, plain=plain, show_thinking=thinking, speed=speed, turn=turn)
