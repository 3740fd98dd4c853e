"""`awl replay FILE`: show a saved session. Loads no model.

On a terminal it opens the TUI replay (tui/replay.py); `--plain`, or output that is not a
terminal (a pipe, a file, a test), prints it instead (cli/replay_plain.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.console import Console

from agentworld_local.cli.agentworldbench import print_warnings
from agentworld_local.cli.main import app
from agentworld_local.cli.screens import run_screen
from agentworld_local.session.files import ensure_new_file, write_whole
from agentworld_local.errors import InputError
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.cli.replay_plain import replay as render_replay
from agentworld_local.trajectory.reader import Trajectory
from agentworld_local.trajectory.replay import DEFAULT_TURN_S, SPEEDS
from agentworld_local.trajectory.replay import replay_turns as replay_branch
from agentworld_local.files import user_path_option


@app.command()
def replay(
    file: Path = typer.Argument(
        ..., help="A trajectory file (.jsonl) written by `awl run`.", metavar="FILE", show_default=False,
        callback=user_path_option,
    ),
    speed: float = typer.Option(
        0.0, "--speed", help="Seconds to pause between turns (0: no pause). The TUI starts playing at this pace; printed, the observations are typed out."
    ),
    turn: int | None = typer.Option(
        None, "--turn", help="Show only this turn (1-based position in the current branch); the TUI starts there.", show_default=False
    ),
    plain: bool = typer.Option(
        False, "--plain", help="Print the replay as text instead of opening the TUI. Automatic when output is not a terminal."
    ),
    thinking: bool = typer.Option(False, "--thinking/--no-thinking", help="Also show the model's thinking."),
) -> None:
    """Replay a saved session turn by turn, without loading a model.

    On a terminal: the replay screen (space play/pause, left/right step, +/- speed, g go to turn, b switch branch, q quit). With --plain or in a pipe: the session's setup, then each action and the observation the model predicted, following the current branch (turns undone during the session are skipped).

    Example:  awl replay ~/sessions/demo.jsonl --speed 1 --thinking
    """
    # Checked here, not with typer's min=, so a bad value is one `awl: error:` line.
    if speed < 0:
        raise InputError(f"--speed must be 0 or more seconds, not {speed}.", "Use --speed 0 for no pause.")
    if turn is not None and turn < 1:
        raise InputError(f"--turn counts from 1, not {turn}.", "Use --turn 1 for the first turn.")
    traj = read_trajectory(file)
    print_warnings(traj.warnings)
    if not plain and sys.stdout.isatty() and sys.stdin.isatty():
        replay_branch(traj, turn)  # an out-of-range --turn is the same one-line error as in print mode
        open_replay_screen(traj, speed=speed, turn=turn, show_thinking=thinking)
        return
    plain = plain or not sys.stdout.isatty()
    console = Console(highlight=False)
    # A closed pipe (`awl replay x | head`) is handled by rich: quiet exit, status 1.
    render_replay(traj, console, plain=plain, show_thinking=thinking, speed=speed, turn=turn)


def open_replay_screen(traj: Trajectory, *, speed: float, turn: int | None, show_thinking: bool) -> None:
    """The TUI replay. `--speed S` plays at once, a turn about every S seconds (the TUI's
    speeds are multiples of its own pace, so the nearest one is chosen)."""
    from agentworld_local.tui.replay import ReplayApp  # textual loads only when the screen opens

    multiple = 1.0
    if speed > 0:
        multiple = min(SPEEDS, key=lambda s: abs(s - DEFAULT_TURN_S / speed))
    run_screen(ReplayApp(traj, speed=multiple, playing=speed > 0, turn=turn, show_thinking=show_thinking))


ASCIICAST_FORMAT = "asciicast"


def export_asciicast(file: Path, out: Path | None) -> None:
    """`awl export FILE --format asciicast [--out x.cast]`: a terminal session as an asciinema
    recording (stdout without --out; an existing file is never overwritten)."""
    from agentworld_local.trajectory.asciicast import asciicast_text

    if out is not None:
        ensure_new_file(out, session=False, suffix=".cast")  # a recording, not a session
    traj = read_trajectory(file)
    print_warnings(traj.warnings)
    text = asciicast_text(traj)  # a non-terminal session is refused before anything is written
    if out is None:
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.flush()
        return
    write_whole(out, [text.encode("utf-8")])
    Console(stderr=True, highlight=False).print(
        f"wrote {out}: play it with `asciinema play {out}`", markup=False, style="dim", soft_wrap=True)
