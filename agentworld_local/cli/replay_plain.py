"""`awl replay --plain` and `awl demo`: print a saved trajectory to a rich Console (tests
capture it with `Console(file=io.StringIO())`). What a replay shows, and in which order,
comes from the core (trajectory/replay.py); this module only renders it."""

from __future__ import annotations

import time
from typing import Callable

from rich.console import Console
from rich.syntax import Syntax
from rich.text import Text

from agentworld_local.terminal_text import safe_for_terminal
from agentworld_local.trajectory.reader import Trajectory
from agentworld_local.trajectory.replay import (
    HAND_WRITTEN_LINE,
    action_lexer,
    header_lines,
    observation_lexer,
    replay_turns,
    turn_notes,
    turn_stats,
)
from agentworld_local.trajectory.schema import TurnRecord

__all__ = ["HAND_WRITTEN_LINE", "render_header", "render_turn", "replay"]

_SYNTAX_THEME = "ansi_dark"  # uses the terminal's own palette, so it reads on light and dark backgrounds


def replay(
    traj: Trajectory,
    console: Console,
    *,
    plain: bool = False,
    show_thinking: bool = False,
    speed: float = 0.0,
    turn: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Print the header, then each turn of the current branch (or only branch position `turn`).

    `plain` prints text with no colour or box characters (pipes, tests). `speed` is the pause
    in seconds between turns; on a real terminal the observation is also typed out.
    """
    selected = replay_turns(traj, turn)
    render_header(traj, console, plain=plain, shown=len(traj.current_branch()))
    for index, record in enumerate(selected):
        if index and speed > 0:
            sleep(speed)
        render_turn(record, console, domain=traj.header.domain, plain=plain, show_thinking=show_thinking,
                    speed=speed, sleep=sleep)


def render_header(traj: Trajectory, console: Console, *, plain: bool = False, shown: int | None = None) -> None:
    # File content must not drive the terminal (escape sequences) nor crash the encoder (lone surrogates).
    lines = [safe_for_terminal(line, keep_colour=False) for line in header_lines(traj, len(traj.current_branch()) if shown is None else shown)]
    if plain:
        console.out("\n".join(lines), highlight=False)
        return
    for line in lines:
        style = "bold yellow" if line == HAND_WRITTEN_LINE else None
        console.print(Text(line, style=style or ""))


def render_turn(
    record: TurnRecord,
    console: Console,
    *,
    domain: str = "",
    plain: bool = False,
    show_thinking: bool = False,
    speed: float = 0.0,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    sep = ", " if plain else " · "  # plain output stays ASCII for pipes and logs
    stats = turn_stats(record, sep)
    title = f"Turn {record.turn}" + (f"{sep}{stats}" if stats else "")
    # Plain output has no colour, so colour sequences from the model are escaped too.
    safe = lambda text: safe_for_terminal(text, keep_colour=not plain)  # noqa: E731
    action = safe(record.action.rstrip("\n"))
    observation = safe(record.observation.rstrip("\n"))
    thinking = safe(record.thinking.strip("\n"))
    controls = [safe(f"control added: {c}") for c in record.controls_added] + turn_notes(record)
    if plain:
        out = [f"== {title} ==", *controls, "action:", action]
        if show_thinking and thinking.strip():
            out += ["thinking:", thinking]
        out += ["observation:", observation, ""]
        console.out("\n".join(out), highlight=False)
        return

    console.print()
    console.rule(Text.assemble(("── ", "cyan"), (title, "bold")), align="left", style="cyan")
    for line in controls:
        console.print(Text(line, style="bold yellow"))
    console.print(Text("action", style="bold cyan"))
    _print_code(console, action, action_lexer(record, domain))
    if show_thinking and thinking.strip():
        console.print(Text("thinking", style="bold magenta"))
        console.print(Text.from_ansi(thinking, style="dim italic"))
    console.print(Text("observation", style="bold green"))
    if speed > 0 and console.is_terminal:
        _typewrite(console, observation, speed, sleep)
    else:
        _print_code(console, observation, observation_lexer(observation))


def _print_code(console: Console, text: str, lexer: str | None) -> None:
    if lexer is None:
        # Text, not str: brackets in model output are not rich markup; from_ansi keeps the colours.
        console.print(Text.from_ansi(text))
    else:
        console.print(Syntax(text, lexer, theme=_SYNTAX_THEME, word_wrap=True, background_color="default"))


def _typewrite(console: Console, text: str, speed: float, sleep: Callable[[float], None]) -> None:
    """Type the text out, taking at most `speed` seconds however long it is."""
    chunk = max(1, len(text) // 200)  # about 200 writes per observation
    delay = min(0.02, speed / max(1, len(text) // chunk))
    for start in range(0, len(text), chunk):
        console.out(text[start:start + chunk], end="", highlight=False)
        console.file.flush()
        sleep(delay)
    console.out("", highlight=False)
