"""What `awl run` and `awl demo` share: action scripts, model loading, the turn loop."""

from __future__ import annotations

import re
import sys
import threading
from pathlib import Path
from typing import IO, Any

from rich.text import Text

from agentworld_local.cli.consoles import stderr_console
from agentworld_local.session import events
from agentworld_local.session.core import Session
# The script language, file policy and header live in the session core; faces import them here too.
from agentworld_local.session.files import default_session_path, ensure_new_file  # noqa: F401
from agentworld_local.session.header import header_for  # noqa: F401
from agentworld_local.session.script import (  # noqa: F401
    CONTROL, REGENERATE, UNDO, ScriptLine, parse_script_line, read_script,
)
from agentworld_local.terminal_text import safe_for_terminal, shorten
from agentworld_local.trajectory.jsonl import dumps
from agentworld_local.trajectory.schema import TurnRecord


def count(n: int, noun: str) -> str:
    """`1 turn`, `2 turns`: counts people read."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


class TerminalStream:
    """Streamed text made safe for a terminal. An escape sequence cut between two chunks is
    held back until it is complete, so colour split across tokens still shows as colour."""

    _OPEN_ESCAPE = re.compile(r"\x1b(\[[0-9;:]*)?\Z")

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self._held = ""

    def write(self, text: str) -> None:
        text = self._held + text
        cut = self._OPEN_ESCAPE.search(text[-32:])
        self._held = cut.group() if cut else ""
        self.out.write(safe_for_terminal(text[: len(text) - len(self._held)]))
        self.out.flush()

    def end(self) -> None:
        """The stream is over: what was held back is shown as it is (escaped)."""
        if self._held:
            self.out.write(safe_for_terminal(self._held))
            self._held = ""
        self.out.flush()


class TurnPrinter:
    """Writes a turn's events: plain text for people, or JSON lines for programs.

    Text for people goes through `safe_for_terminal`: a simulated screen must not be able
    to drive the user's real terminal (colour may stay). `--json` stays exact.
    """

    def __init__(self, *, as_json: bool, show_thinking: bool, out: IO[str] | None = None) -> None:
        self.as_json = as_json
        self.show_thinking = show_thinking
        self.out = out or sys.stdout
        self.err = stderr_console()
        self._thinking_open = False
        self._screen = TerminalStream(self.out)
        self._thoughts = TerminalStream(sys.stderr)
        self._said: set[str] = set()

    def _emit(self, event: events.SessionEvent) -> None:
        """`--json`: the session event's wire form, exactly."""
        self.out.write(json_line(event.to_dict()))
        self.out.flush()

    def notice(self, text: str) -> None:
        """Something the user should know, said once, plainly (stderr, in both modes)."""
        self.err.print(Text(f"awl: {text}", style="yellow"))

    def show(self, event: events.SessionEvent) -> None:
        """One session event: `--json` prints its wire form; people get text."""
        if self.as_json:
            self._emit(event)
        elif isinstance(event, events.TurnStarted):
            self.err.print(Text(f"── turn {event.turn} ── {safe_for_terminal(shorten(event.action))}", style="dim"))
        elif isinstance(event, events.ThinkingDelta):
            if self.show_thinking:
                self._thoughts.write(event.text)
                self._thinking_open = True
        elif isinstance(event, (events.ObservationDelta, events.ObservationReplaced)):
            self._observation(event)
        elif isinstance(event, events.ContextTrimmed):
            self.notice(f"turn {event.turn}: the conversation outgrew the context ({event.n_ctx:,} tokens); "
                        f"turns {event.first}-{event.last} are left out of the model's view (the file keeps them).")
        elif isinstance(event, events.TurnCancelled):
            self._screen.end()
            self.err.print("\n[yellow]turn cancelled; it was not saved[/yellow]")
        elif isinstance(event, events.ControlAdded):
            # Text, not markup: the user's words may contain brackets.
            self.err.print(Text(f"── control for the next turn: {safe_for_terminal(event.text)}", style="dim"))
        elif isinstance(event, events.Undone):
            self.err.print(f"[dim]── undo: back to turn {event.turns}[/dim]")
        if isinstance(event, events.TurnFinished):
            self._finished(event.turn, event.record)
        # AnswerDelta: raw model text for programs; people read the observation instead.

    def _observation(self, event: events.ObservationDelta | events.ObservationReplaced) -> None:
        if self._thinking_open:
            self._thoughts.end()
            sys.stderr.write("\n")
            self._thinking_open = False
        if isinstance(event, events.ObservationReplaced):
            self._screen.end()
            self.out.write("\n[the final observation differs from the streamed text]\n")
        self._screen.write(event.text)

    def _finished(self, turn: int, record: TurnRecord) -> None:
        if not self.as_json:
            self._screen.end()
            self.out.write("\n")
            self.out.flush()
            tokens, timings = record.tokens, record.timings
            self.err.print(
                f"[dim]   {count(tokens.get('prompt_evaluated', 0), 'prompt token')} evaluated, "
                f"{tokens.get('generated', 0):,} generated ({tokens.get('thinking', 0):,} thinking), "
                f"{timings.get('total_s', 0):.2f}s, {record.finish}[/dim]"
            )
        if not record.observation.strip():
            self._once("empty", f"turn {turn}: the model predicted an empty observation.")
        if record.finish in FINISH_NOTES:
            self._once(record.finish, f"turn {turn}: {FINISH_NOTES[record.finish]}")

    def _once(self, kind: str, text: str) -> None:
        """Said the first time only; the turn lines still show each turn's finish."""
        if kind not in self._said:
            self._said.add(kind)
            self.notice(text)

    def saved(self, path: Path, turns: int) -> None:
        """The last word of a session, whatever ended it: where the turns are."""
        if self.as_json:
            self._emit(events.Saved(str(path), turns))


#: What a turn's finish means, when it is not a plain stop.
FINISH_NOTES = {
    "length": "the observation was cut off at --max-tokens or the end of the context (finish: length); "
              "raise --max-tokens for longer ones.",
    "repetition": "the model was repeating itself, so the turn was stopped (finish: repetition).",
}


def json_line(fields: dict[str, Any]) -> str:
    """One JSON line, encoded as the trajectory writer encodes its lines (trajectory/jsonl.py):
    readable UTF-8, every control character escaped (C1 ones too, so a printed line cannot
    drive a terminal), a lone surrogate from damaged input written as an escape."""
    return dumps(fields) + "\n"


def play(session: Session, line: ScriptLine, printer: TurnPrinter, cancel: threading.Event) -> bool:
    """Run one script line; False when the turn was cancelled."""
    if line.command == CONTROL:
        printer.show(session.add_control(line.text))
        return True
    if line.command == UNDO:
        printer.show(session.undo())
        return True
    turn = session.regenerate(cancel) if line.command == REGENERATE else session.step(line.action, cancel)
    for event in turn:
        printer.show(event)
        if isinstance(event, events.TurnCancelled):
            return False
    return True
