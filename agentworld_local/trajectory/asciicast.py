"""A terminal session as an asciinema recording (asciicast v2), for `asciinema play` and the
asciinema web player: the starting screen, each action typed out, each predicted screen.

asciicast v2 (docs.asciinema.org/manual/asciicast/v2): newline-delimited JSON; the first line
is a header object (`version` 2, `width`, `height`, optional `timestamp`, `duration`,
`idle_time_limit`, `title`, `env`); every other line is an event `[time, code, data]`, with
`time` in seconds from the start (never decreasing), `"o"` for output, `"m"` for a marker.

Everything written comes from the model or the file, so it goes through `safe_for_terminal`
first: only SGR colour reaches the terminal that plays the recording.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentworld_local.errors import InputError, a_or_an
from agentworld_local.terminal_text import safe_for_terminal
from agentworld_local.trajectory.reader import Trajectory
from agentworld_local.trajectory.schema import TurnRecord

ASCIICAST_VERSION = 2
TERMINAL_DOMAINS = ("terminal", "shell", "bash", "sh")
CLEAR_SCREEN = "\x1b[H\x1b[2J"
#: The terminal domain shows about the last 40 lines of the screen.
DEFAULT_HEIGHT = 40


@dataclass(frozen=True)
class CastPace:
    """How the recording moves. Fixed numbers, so the same file gives the same recording."""

    key_s: float = 0.045  # per typed character
    before_output_s: float = 0.4  # after Enter, before the screen changes (when no time was recorded)
    max_output_wait_s: float = 2.5  # the longest wait for a screen, whatever was recorded
    after_turn_s: float = 1.2  # time to read a screen before the next action
    idle_time_limit: float = 2.0  # players shorten longer pauses to this


def to_asciicast(traj: Trajectory, *, width: int | None = None, height: int = DEFAULT_HEIGHT,
                 pace: CastPace = CastPace()) -> list[str]:
    """The recording's lines (header first), without newlines. Refuses a non-terminal session."""
    domain = traj.header.domain.lower()
    if domain not in TERMINAL_DOMAINS:
        raise InputError(
            f"{traj.path} is {a_or_an(traj.header.domain or 'unknown')} session; an asciicast recording is made from terminal sessions only.",
            "Replay it with `awl replay`, or export benchmark rows with `--format agentworldbench`.",
        )
    events: list[tuple[float, str, str]] = []
    clock = 0.0
    screen = _starting_screen(traj.header.initial_state)
    if screen:
        events.append((clock, "o", _crlf(screen)))
        clock += pace.after_turn_s
    for record in traj.current_branch():
        events.append((clock, "m", f"Turn {record.turn}: {_one_line(_safe(record.action, colour=False))}"))
        for text in _typed(record):
            events.append((clock, "o", text))
            clock += pace.key_s
        clock += _output_wait(record, pace)
        observation = _safe(record.observation)
        if _is_whole_screen(observation, record):
            events.append((clock, "o", CLEAR_SCREEN + _crlf(observation)))
        else:
            events.append((clock, "o", _crlf(observation)))
        clock += pace.after_turn_s
    texts = [_safe(traj.header.initial_state)] + [_safe(r.observation) for r in traj.current_branch()]
    header = _header(traj, width or _width(texts), height, clock, pace)
    return [json.dumps(header, ensure_ascii=False)] + [
        json.dumps([round(at, 6), code, data], ensure_ascii=False) for at, code, data in events
    ]


def asciicast_text(traj: Trajectory, **options: Any) -> str:
    return "\n".join(to_asciicast(traj, **options)) + "\n"


def _header(traj: Trajectory, width: int, height: int, duration: float, pace: CastPace) -> dict[str, Any]:
    h = traj.header
    scenario = h.scenario.get("title") if isinstance(h.scenario, dict) else None
    title = str(scenario or h.task or traj.path.name)
    if h.hand_written:
        title += " (hand-written example, not model output)"
    header: dict[str, Any] = {"version": ASCIICAST_VERSION, "width": width, "height": height}
    timestamp = _unix_time(h.created)
    if timestamp is not None:
        header["timestamp"] = timestamp
    header.update(duration=round(duration, 6), idle_time_limit=pace.idle_time_limit,
                  title=_one_line(_safe(title, colour=False)), env={"TERM": "xterm-256color", "SHELL": "/bin/bash"})
    return header


def _unix_time(created: str) -> int | None:
    try:
        return int(datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp())
    except (ValueError, TypeError):
        return None


def _safe(text: str, *, colour: bool = True) -> str:
    return safe_for_terminal(text, keep_colour=colour)


def _crlf(text: str) -> str:
    """A terminal needs CR LF to start the next line at column 0."""
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _one_line(text: str) -> str:
    return " ".join(text.split())[:120]


def _starting_screen(initial_state: str) -> str:
    """What the terminal shows before turn 1: the part after a `Screen:` line when the
    initial state describes the machine first, else the last line when it is a prompt."""
    lines = initial_state.splitlines()
    for index, line in enumerate(lines):
        if line.strip().lower() == "screen:":
            return _safe("\n".join(lines[index + 1:]))
    last = lines[-1] if lines else ""
    return _safe(last) if last.rstrip().endswith(("$", "#", ">", "%")) else ""


def _typed(record: TurnRecord) -> list[str]:
    """The action as the user would see it typed: one chunk per character; Enter as a new line,
    tmux-style control keys (C-c) as the caret form the terminal echoes (^C)."""
    payload = record.action_payload
    keys: list[str] = []
    if isinstance(payload, list) and all(isinstance(p, dict) for p in payload):
        keys = [p["keystrokes"] for p in payload if isinstance(p.get("keystrokes"), str)]
    if not keys:
        keys = [record.action + "\n"]
    typed: list[str] = []
    for key in keys:
        control = key.strip()
        if len(control) == 3 and control[:2] in ("C-", "c-") and control[2].isalpha():
            typed.append(f"^{control[2].upper()}\r\n")
            continue
        typed.extend("\r\n" if char == "\n" else _safe(char, colour=False) for char in key)
    return [text for text in typed if text]


def _output_wait(record: TurnRecord, pace: CastPace) -> float:
    recorded = record.timing("total_s")
    return min(pace.max_output_wait_s, recorded) if recorded else pace.before_output_s


def _is_whole_screen(observation: str, record: TurnRecord) -> bool:
    """Does the prediction redraw the whole screen (a prompt line ending with the typed
    command above its output) rather than show only what follows the command?"""
    command = record.action.strip()
    if not command or "\n" in command:
        return False
    return any(line.rstrip().endswith(command) and len(line.rstrip()) > len(command)
               for line in observation.splitlines()[:-1])


def _width(texts: list[str]) -> int:
    longest = max((len(line) for text in texts for line in text.splitlines()), default=80)
    return max(80, min(200, longest))
