"""How `awl run` and `awl demo` show a session: text for people (a live line while the model
thinks, the observation as it streams) or JSON lines for programs."""

from __future__ import annotations

import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from rich.text import Text

from agentworld_local.cli.consoles import stderr_console
from agentworld_local.engine import events
# The script language, file policy and header live in the session core; faces import them here too.
from agentworld_local.session.files import default_session_path, ensure_new_file  # noqa: F401
from agentworld_local.session.header import header_for  # noqa: F401
from agentworld_local.session.script import (  # noqa: F401
    CONTROL, REGENERATE, UNDO, ScriptLine, parse_script_line, read_script,
)
from agentworld_local.terminal_text import safe_for_terminal, shorten
from agentworld_local.trajectory.jsonl import dumps
from agentworld_local.trajectory.replay import thinking_cut_note
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


class LiveLine:
    """One line on a terminal's stderr, redrawn in place while a turn has shown nothing yet:
    the phase (reading the prompt, thinking, answering), the tokens so far and the speed. A
    model can read a long prompt and think for minutes before the first character of the
    observation; without this the terminal is silent all that time. It is erased before
    anything else is written."""

    #: The shortest time between two redraws.
    INTERVAL_S = 0.1
    #: While the prompt is read no token comes: the seconds still move, once a second.
    TICK_S = 1.0

    def __init__(self, stream: IO[str] | None) -> None:
        self.stream = stream
        self._active = False
        self._drawn = False
        self._tokens = 0
        self._started = self._first = self._drawn_at = 0.0
        self._lock = threading.Lock()  # the ticker and the printer draw on the same line
        self._ticker: threading.Thread | None = None
        self._turn = 0  # which start() the ticker belongs to

    def start(self) -> None:
        """A turn began: the line shows until text flows (`stop`)."""
        with self._lock:
            self._active = self.stream is not None
            self._tokens = 0
            self._started = time.monotonic()
            self._first = 0.0
            self._turn += 1
        self._draw(self._reading(), force=True)
        if self._active:
            self._ticker = threading.Thread(target=self._tick, args=(self._turn,), name="awl-live-line", daemon=True)
            self._ticker.start()

    def _reading(self) -> str:
        return f"reading the prompt… {time.monotonic() - self._started:.0f}s"

    def _tick(self, turn: int) -> None:
        while True:
            time.sleep(self.TICK_S)
            with self._lock:
                if not self._active or self._first or self._turn != turn:
                    return  # tokens come (each redraws), or the line is gone
            self._draw(self._reading(), force=True)

    def count(self, phase: str, *, shown: bool = False) -> None:
        """One more token in `phase`; `shown`: its text is on screen, so the line stays away."""
        now = time.monotonic()
        self._tokens += 1
        self._first = self._first or now
        if shown:
            return
        elapsed = now - self._first
        speed = f", {(self._tokens - 1) / elapsed:.1f} tok/s" if elapsed > 0 and self._tokens > 1 else ""
        self._draw(f"{phase}… {count(self._tokens, 'token')}{speed}, {now - self._started:.0f}s")

    def _draw(self, text: str, *, force: bool = False) -> None:
        with self._lock:
            now = time.monotonic()
            if not self._active or (not force and now - self._drawn_at < self.INTERVAL_S):
                return
            assert self.stream is not None
            width = shutil.get_terminal_size((80, 24)).columns - 1
            self.stream.write(f"\r\x1b[2K\x1b[2m  {text[:width - 2]}\x1b[0m")
            self.stream.flush()
            self._drawn, self._drawn_at = True, now

    def clear(self) -> None:
        """Erase the line (other output follows); it is drawn again on the next token."""
        with self._lock:
            if self._drawn and self.stream is not None:
                self.stream.write("\r\x1b[2K")
                self.stream.flush()
                self._drawn, self._drawn_at = False, 0.0

    def stop(self) -> None:
        """Text flows (or the turn ended): no live line until the next turn."""
        self.clear()
        with self._lock:
            self._active = False


class TurnPrinter:
    """Writes a turn's events: plain text for people, or JSON lines for programs.

    Text for people goes through `safe_for_terminal`: a simulated screen must not be able
    to drive the user's real terminal (colour may stay). `--json` stays exact.
    """

    def __init__(self, *, as_json: bool, show_thinking: bool, out: IO[str] | None = None,
                 thoughts: IO[str] | None = None, live: bool | None = None) -> None:
        """`thoughts`: where thinking and the live line go (default: stderr); `live`: whether the
        live line shows (default: when that stream is a terminal; never with --json)."""
        self.as_json = as_json
        self.show_thinking = show_thinking
        self.out = out or sys.stdout
        self.err = stderr_console()
        self._thinking_open = False
        self._untagged_open = False
        self._screen = TerminalStream(self.out)
        self._thoughts_out = thoughts or sys.stderr
        self._thoughts = TerminalStream(self._thoughts_out)
        self._said: set[str] = set()
        if live is None:
            live = self._thoughts_out.isatty()
        self.live = LiveLine(self._thoughts_out if live and not as_json else None)

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
            return
        if isinstance(event, (events.ThinkingDelta, events.AnswerDelta)):
            self._token(event)
            return
        if not isinstance(event, _SHOWN):
            return  # nothing is written for it: the live line stays
        self.live.clear()  # what is written goes where the live line was
        if isinstance(event, events.TurnStarted):
            self.err.print(Text(f"── turn {event.turn} ── {safe_for_terminal(shorten(event.action), keep_colour=False)}",
                                style="dim"))  # the action is the user's: its escapes never reach the terminal
            self.live.start()
        elif isinstance(event, (events.ObservationDelta, events.ObservationReplaced)):
            self.live.stop()  # text flows now: the turn is no longer silent
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
        elif isinstance(event, events.Regenerated):
            self.err.print(f"[dim]── regenerate turn {event.turn} (sample {event.attempt + 1})[/dim]")
        elif isinstance(event, events.UntaggedDelta):
            self._untagged(event.text)
        elif isinstance(event, events.Notice):
            self.notice(safe_for_terminal(event.text))
        elif isinstance(event, events.Rewarded):
            self._rewarded(event)
        elif isinstance(event, events.FromWorld):
            self.err.print(Text(from_world_line(event), style="dim"))
        if isinstance(event, events.TurnFinished):
            self.live.stop()
            self._finished(event.turn, event.record)

    def _rewarded(self, event: events.Rewarded) -> None:
        verdict = event.verdict or {}
        why = verdict.get("reason") or verdict.get("error") or ""
        why = f": {safe_for_terminal(shorten(str(why)))}" if why else ""
        self.err.print(Text(f"── reward {event.value:g} ({safe_for_terminal(event.source)}){why}", style="dim"))

    def _token(self, event: events.ThinkingDelta | events.AnswerDelta) -> None:
        """A token the user does not read as such: thinking (unless --show-thinking) and the raw
        answer (people read the observation) only move the live line."""
        thinking = isinstance(event, events.ThinkingDelta)
        if thinking and self.show_thinking:
            self.live.clear()
            self._thoughts.write(event.text)
            self._thinking_open = True
            self.live.count("thinking", shown=True)
            return
        if self._untagged_open:
            return  # the answer's own text is on screen
        self._end_thoughts()  # thinking was shown and is over: the live line goes below it
        self.live.count("thinking" if thinking else "answering")

    def _untagged(self, text: str) -> None:
        """Answer text without the observation tag (small models write none): shown as it
        streams, dim and marked, on stderr; the observation the turn records follows."""
        if not self._untagged_open and not text.strip():
            return  # the blank line between `</think>` and the observation tag is no untagged answer
        if self._thinking_open:
            self._end_thoughts()  # shown thinking is over; the untagged text goes on its own line
        if not self._untagged_open:
            self.live.stop()
            self._thoughts_out.write(f"{self._dim('on')}(untagged answer) ")
            self._untagged_open = True
            text = text.lstrip()
        self._thoughts.write(text)

    def _dim(self, state: str) -> str:
        """The escape that turns dim text on or off, only for a colour terminal (not a pipe, not NO_COLOR)."""
        colour = self._thoughts_out.isatty() and not os.environ.get("NO_COLOR")
        return ("\x1b[2m" if state == "on" else "\x1b[0m") if colour else ""

    def _end_thoughts(self) -> None:
        """Thinking or untagged text was shown and is over: what follows starts on its own line."""
        if self._thinking_open or self._untagged_open:
            self._thoughts.end()
            self._thoughts_out.write(f"{self._dim('off')}\n" if self._untagged_open else "\n")
            self._thoughts_out.flush()
            self._thinking_open = self._untagged_open = False

    def _observation(self, event: events.ObservationDelta | events.ObservationReplaced) -> None:
        self._end_thoughts()
        if isinstance(event, events.ObservationReplaced):
            self._screen.end()
            self.out.write("\n[the final observation differs from the streamed text]\n")
        self._screen.write(event.text)

    def _finished(self, turn: int, record: TurnRecord) -> None:
        if not self.as_json:
            self._end_thoughts()
            self._screen.end()
            self.out.write("\n")
            self.out.flush()
            tokens, timings = record.tokens, record.timings
            about = {key: "~" if record.estimated(key) else "" for key in ("prompt_evaluated", "generated", "thinking")}
            self.err.print(
                f"[dim]   {about['prompt_evaluated']}{count(tokens.get('prompt_evaluated', 0), 'prompt token')} evaluated, "
                f"{about['generated']}{tokens.get('generated', 0):,} generated "
                f"({about['thinking']}{tokens.get('thinking', 0):,} thinking), "
                f"{timings.get('total_s', 0):.2f}s, {record.finish}[/dim]"
            )
            if tokens.get("thinking_cut"):
                self.err.print(Text(f"── {thinking_cut_note(record)} (--think full to let it finish)", style="yellow"))
            if about["prompt_evaluated"] or about["generated"]:  # thinking: few servers ever count it
                self._once("estimated", f"turn {turn}: the server did not report every token count; "
                                        "those marked ~ are awl's estimates.")
        if not record.observation.strip():
            self._once("empty", f"turn {turn}: the model predicted an empty observation.")
        if record.finish in FINISH_NOTES:
            self._once(record.finish, f"turn {turn}: {FINISH_NOTES[record.finish]}")

    def _once(self, kind: str, text: str) -> None:
        """Said the first time only; the turn lines still show each turn's finish."""
        if kind not in self._said:
            self._said.add(kind)
            self.notice(text)

    def saved(self, path: Path, turns: int, *, kept: bool = True) -> None:
        """The last word of a session, whatever ended it: where the turns are (`saved`), or
        that a new session ended before its first turn and kept no file (`discarded`)."""
        if self.as_json:
            self._emit(events.Saved(str(path), turns) if kept else events.Discarded(str(path)))


#: The events TurnPrinter writes something for (people's text; --json writes every event).
_SHOWN = (events.TurnStarted, events.ObservationDelta, events.ObservationReplaced, events.ContextTrimmed,
          events.TurnCancelled, events.ControlAdded, events.Undone, events.Regenerated, events.UntaggedDelta,
          events.Notice, events.TurnFinished, events.Rewarded, events.FromWorld)


def from_world_line(event: events.FromWorld) -> str:
    """`── from the shared world grpo-1 (stored)`: the turn's answer is the world's, not the model's."""
    how = "stored" if event.source == "store" else "a read it answered before" if event.source == "read" else event.source
    return f"── from the shared world {safe_for_terminal(event.world, keep_colour=False)} ({how})"

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
