"""Show a saved trajectory in a terminal. Independent of the CLI framework: it prints to
the rich Console it is given, so tests capture it with `Console(file=io.StringIO())`."""

from __future__ import annotations

import re
import time
from typing import Callable

from rich.console import Console
from rich.syntax import Syntax
from rich.text import Text

from agentworld_local.errors import TrajectoryError
from agentworld_local.safe_parse import SyntaxProblem, load_json
from agentworld_local.terminal_text import safe_for_terminal
from agentworld_local.trajectory.reader import Trajectory, count
from agentworld_local.trajectory.schema import TurnRecord

HAND_WRITTEN_LINE = "hand-written example, not model output"
_SHELL_DOMAINS = {"shell", "terminal", "bash", "sh"}
_MARKUP = re.compile(r"^\s*<(?:!doctype\s+html|html|head|body|div|\?xml|[A-Za-z][\w:.-]*[\s/>])", re.IGNORECASE)
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
    branch = traj.current_branch()
    if turn is not None and not 1 <= turn <= len(branch):
        raise TrajectoryError(
            f"turn {turn} is out of range: {traj.path} has {count(len(branch), 'turn')} in its current branch.",
            f"Pick a turn from 1 to {len(branch)}." if branch else "Replay it without --turn.",
        )
    render_header(traj, console, plain=plain, shown=len(branch))
    selected = [branch[turn - 1]] if turn is not None else branch
    for index, record in enumerate(selected):
        if index and speed > 0:
            sleep(speed)
        render_turn(record, console, domain=traj.header.domain, plain=plain, show_thinking=show_thinking,
                    speed=speed, sleep=sleep)


def header_lines(traj: Trajectory, shown: int) -> list[str]:
    """The header block as plain lines (shared by both modes)."""
    h = traj.header
    lines = [f"trajectory: {traj.path}"]
    if h.hand_written:
        lines.append(HAND_WRITTEN_LINE)
    if h.model is not None:
        arch = f" ({h.model.architecture})" if h.model.architecture else ""
        lines.append(f"model: {h.model.name}{arch}")
    elif not h.hand_written:
        lines.append("model: not recorded")
    scenario = f" - scenario: {h.scenario.get('title') or h.scenario.get('name')}" if h.scenario else ""
    lines.append(f"domain: {h.domain or 'unknown'}{scenario}")
    if h.task:
        lines.append(f"task: {h.task}")
    for control in h.controls:
        lines.append(f"control: {control}")
    if h.forked_from:
        lines.append(f"forked from {h.forked_from.get('file')} at turn {h.forked_from.get('turn')}")
    if h.note:
        lines.append(f"note: {h.note}")
    extra = len(traj.turns) - shown
    abandoned = f" (plus {extra} undone)" if extra else ""
    lines.append(f"turns: {shown}{abandoned}")
    return lines


def render_header(traj: Trajectory, console: Console, *, plain: bool = False, shown: int | None = None) -> None:
    # File content must not drive the terminal (escape sequences) nor crash the encoder (lone surrogates).
    lines = [safe_for_terminal(line, keep_colour=False) for line in header_lines(traj, len(traj.current_branch()) if shown is None else shown)]
    if plain:
        console.out("\n".join(lines), highlight=False)
        return
    for line in lines:
        style = "bold yellow" if line == HAND_WRITTEN_LINE else None
        console.print(Text(line, style=style or ""))


def turn_stats(record: TurnRecord, sep: str = " · ") -> str:
    """`prompt 812 tok · generated 64 tok · 1.9 s · 33.1 tok/s`, from whatever was recorded."""
    parts = []
    tokens, timings = record.tokens or {}, record.timings or {}
    if isinstance(tokens.get("prompt_total"), int):
        parts.append(f"prompt {tokens['prompt_total']} tok")
    if tokens.get("thinking"):
        parts.append(f"thinking {tokens['thinking']} tok")
    if isinstance(tokens.get("generated"), int):
        parts.append(f"generated {tokens['generated']} tok")
    if isinstance(timings.get("total_s"), (int, float)):
        parts.append(f"{timings['total_s']:.1f} s")
    if isinstance(timings.get("tokens_per_s"), (int, float)) and timings["tokens_per_s"]:
        parts.append(f"{timings['tokens_per_s']:.1f} tok/s")
    if record.finish == "length":
        parts.append("cut off at max_tokens")
    elif record.finish == "cancelled":
        parts.append("cancelled")
    return sep.join(parts)


def action_lexer(record: TurnRecord, domain: str) -> str | None:
    if _looks_like_json(record.action):
        return "json"
    payload = record.action_payload
    keystrokes = isinstance(payload, list) and any(isinstance(p, dict) and "keystrokes" in p for p in payload)
    return "bash" if domain.lower() in _SHELL_DOMAINS or keystrokes else None


def observation_lexer(text: str) -> str | None:
    if _looks_like_json(text):
        return "json"
    if _MARKUP.match(text):
        return "xml" if text.lstrip().startswith("<?xml") else "html"
    return None


def _looks_like_json(text: str) -> bool:
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return False
    try:
        load_json(stripped)
    except SyntaxProblem:
        return False
    return True


def turn_notes(record: TurnRecord) -> list[str]:
    """What else shaped this turn: a context cut made here, a regenerated sample."""
    notes = []
    context = record.context if isinstance(record.context, dict) else {}
    omitted = context.get("omitted_turns")
    if isinstance(context.get("cut"), dict) and isinstance(omitted, dict):
        first, last = omitted.get("first"), omitted.get("last")
        if isinstance(first, int) and isinstance(last, int) and last >= first:
            span = f"turn {first}" if first == last else f"turns {first}-{last}"
            notes.append(f"context cut: from here the model no longer sees {span}")
    attempt = record.extra.get("attempt") if isinstance(record.extra, dict) else None
    if isinstance(attempt, int) and not isinstance(attempt, bool) and attempt > 0:
        notes.append(f"regenerated: sample {attempt + 1} of this turn")
    return notes


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
