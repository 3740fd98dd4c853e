"""`awl run` and `awl demo` drive their session through the runner (session/runner/runner.py).

The main thread only sends commands and prints the events that come back, so it stays free
for Ctrl+C and SIGTERM: the model and the file are touched by the runner's thread alone. A
turn in flight stops at its next token when the user cancels or quits; `runner.close()`
waits for it, then closes the file with every finished turn in it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from agentworld_local.cli.consoles import stderr_console
from agentworld_local.cli.interrupts import SessionSignals, exit_code
from agentworld_local.cli.turn_output import TurnPrinter, count
from agentworld_local.engine import events
from agentworld_local.errors import AwlError, InputError
from agentworld_local.engine.loading import SCRIPTED
from agentworld_local.session.runner import SessionRunner
from agentworld_local.session.runner.outcome import Sent, raise_failure
from agentworld_local.session.script import CONTROL, REGENERATE, UNDO, ScriptLine
from agentworld_local.terminal_text import safe_for_terminal

#: Events the runner says about itself, not about the session: never printed.
_RUNNER_ONLY = (events.Ready, events.SessionOpened, events.LoadProgress, events.ModelLoaded, events.LoadCancelled,
                events.Saved, events.Discarded)


def say_notice(text: str, console: Console | None = None) -> None:
    """A notice from the session core (loading, model limits), on stderr."""
    # A styled Text, not print(style=): under a progress bar the style must not carry over to it.
    (console or stderr_console()).print(Text(f"awl: {safe_for_terminal(text)}", style="yellow"), soft_wrap=True)


def model_label(model: str) -> str:
    """The name the progress bar shows: a path's file name, a registry name as given."""
    return Path(model).name if ("/" in model or model.endswith(".gguf")) else model


@contextmanager
def load_display(model: str, *, quiet: bool, console: Console | None = None, bar: bool = True
                 ) -> Iterator[tuple[Callable[[float], None], Callable[[str], None]]]:
    """(progress, notice) for a model load at a terminal: a bar that pulses (with the time so
    far) until llama.cpp says how far it is, and notices above it, each on its own line.

    llama.cpp only reports progress while it places the weights, which with mmap is the last
    moment of a load. `quiet` (--json, or no terminal) or no `bar` (a server, a scripted
    model): no bar; notices are still said on stderr.
    """
    console = console or Console(stderr=True)
    if quiet or not bar or not console.is_terminal:
        yield (lambda fraction: None), say_notice
        return
    columns = (TextColumn("loading {task.description}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(model_label(model), total=None)  # a pulse until llama.cpp says how far

        def advance(fraction: float) -> None:
            progress.update(task, total=1.0, completed=fraction)

        yield advance, lambda text: say_notice(text, progress.console)


def start_runner(**options: Any) -> SessionRunner:
    """The runner of one CLI command: it waits on each command's own events (its Sent).
    `options`: SessionRunner's (reward_timeout)."""
    return SessionRunner(**options)


def load_model(runner: SessionRunner, model: str | None, *, quiet: bool, bar: bool = True,
               console: Console | None = None, **options: Any) -> Any:
    """Load `model` on the runner, showing its progress; the loaded model's ModelInfo.
    A failure is raised here (AwlError, one line); Ctrl+C reaches the caller, whose
    `runner.close()` stops the load."""
    sent = runner.load(model, **options)
    info = None
    remote = options.get("remote")
    label = model or (remote.api_model if remote is not None else "")  # None: a server's model
    bar = bar and remote is None and not label.startswith(SCRIPTED)
    with load_display(label, quiet=quiet, console=console, bar=bar) as (progress, notice):
        for _, event in sent.events():
            if isinstance(event, events.LoadProgress):
                progress(event.fraction)
            elif isinstance(event, events.Notice):
                notice(event.text)
            elif isinstance(event, events.ModelLoaded):
                info = event.info
            else:
                raise_failure(event)
    assert info is not None, "a load ends with ModelLoaded or an error"
    return info


class SessionEnd:
    """How many turns a session keeps and where: kept up to date from the events alone."""

    def __init__(self) -> None:
        self.session: str | None = None
        self.path: Path | None = None
        self.turns = 0
        self.kept = True

    def follow(self, session: str | None, event: events.SessionEvent) -> None:
        if isinstance(event, events.SessionOpened):
            self.session, self.path = session, Path(event.path)
        turns = getattr(event, "turns", None)
        if session == self.session and isinstance(turns, int) and not isinstance(event, events.Ready):
            self.turns = turns
        if isinstance(event, events.Discarded) and session == self.session:
            self.kept = False  # the runner dropped the file of a session that never got a turn


def play_lines(
    runner: SessionRunner,
    open_session: Callable[[], Sent],
    lines: Iterable[ScriptLine],
    *,
    printer: TurnPrinter,
    interactive: bool = False,
    on_event: Callable[[events.SessionEvent], None] | None = None,
) -> int:
    """Open the session (`open_session` sends runner.open or runner.resume), play every line,
    then close it; however it ends, the completed turns are kept and the user is told how
    many and where (`--json`: a last `saved` event). A new session that never got a turn
    leaves no file.

    `on_event` sees every event of the session (the agent loop reads its observations there).

    Ctrl+C and SIGTERM: cli/interrupts.SessionSignals decides between cancelling the turn and
    quitting. A failing turn (a full disk, a full context) ends the session with one error
    line that says what is saved; at an interactive prompt a mistake (`:undo` with nothing to
    undo) is said and the session goes on.
    """
    signals = SessionSignals(interactive=interactive)
    end = SessionEnd()
    actions = 0

    def forward_cancel() -> None:
        if signals.cancel.is_set():
            runner.cancel()

    def run(submit: Callable[[], Sent], *, tolerate: bool) -> None:
        for session, event in submit().events(on_wait=forward_cancel):
            forward_cancel()
            end.follow(session, event)
            if on_event is not None:
                on_event(event)
            if isinstance(event, (events.ErrorEvent, events.Refused)):
                if tolerate and isinstance(event.error if isinstance(event, events.ErrorEvent) else None, InputError):
                    stderr_console().print(f"awl: {safe_for_terminal(event.message)} {event.hint}".rstrip(), markup=False)
                    continue
                raise_failure(event)
            if not isinstance(event, _RUNNER_ONLY):
                printer.show(event)

    # However the session ends, closing it and its last words (`saved`) run in signals.closing():
    # a signal then (a SIGTERM after a Ctrl+C, a second Ctrl+C) no longer cuts them short.
    with signals.installed():
        try:
            run(open_session, tolerate=False)
            for line in lines:
                actions += line.action is not None
                with signals.turn():
                    run(lambda: _send(runner, end.session or "", line), tolerate=interactive)
        except KeyboardInterrupt as interrupt:
            with signals.closing():
                _close(runner, end)
                if end.path is not None:
                    note = _saved_in(end) + f" (replay: awl replay {end.path})" if end.kept and end.turns else _saved_note(end)
                    stderr_console().print(Text.assemble(("\ninterrupted", "yellow"), f": {note}"))
                    _say_saved(printer, end)
            return exit_code(interrupt)
        except AwlError as error:
            with signals.closing():
                _close(runner, end)
                if end.path is not None:
                    message = error.message.rstrip()
                    note = _saved_in(end) + "." if "awl fork" in f"{message} {error.hint}" and end.turns else _saved_note(end)
                    error.message = f"{message}{'' if message.endswith('.') else '.'} {note}"
                    if printer.as_json:  # a program reads why the session ended, then where its turns are
                        printer.show(events.ErrorEvent(error.message, error.hint or ""))
                    _say_saved(printer, end)
            raise
        except BaseException:
            runner.close()
            raise
        with signals.closing():
            _close(runner, end)
            _say_ended(printer, end, actions)
    # A signal that came while the session closed: the session was complete, the exit says it came.
    return exit_code(signals.quit) if signals.quit is not None else 0


def _say_ended(printer: TurnPrinter, end: SessionEnd, actions: int) -> None:
    """The last words of a session that ran to the end of its input."""
    if not actions:
        printer.notice("no actions were given, so no turn was run" + ("." if end.kept else "; no file was written."))
    elif not end.kept:
        printer.notice("no turn was completed, so no session file was kept.")
    _say_saved(printer, end)
    if end.kept and not printer.as_json and end.path is not None:
        stderr_console().print(Text(f"saved {count(end.turns, 'turn')} to {end.path}  (replay: awl replay {end.path})",
                                    style="dim"))


def _send(runner: SessionRunner, session: str, line: ScriptLine) -> Sent:
    if line.command == CONTROL:
        return runner.control(session, line.text)
    if line.command == UNDO:
        return runner.undo(session)
    if line.command == REGENERATE:
        return runner.regenerate(session)
    return runner.step(session, line.action, agent=line.agent, final=line.final)


def _close(runner: SessionRunner, end: SessionEnd) -> None:
    """Cancel, wait, close: the turn in flight (if any) stops and every finished one is in the
    file. What the runner says while it closes (the file dropped, or kept) is followed."""
    for session, event in runner.close().events():
        end.follow(session, event)


def _say_saved(printer: TurnPrinter, end: SessionEnd) -> None:
    """--json's last event: `saved`, or `discarded` for a new session that kept no file."""
    if end.path is not None:
        printer.saved(end.path, end.turns, kept=end.kept)


def _saved_note(end: SessionEnd) -> str:
    if not end.kept:
        return "No turn was completed, so no session file was kept."
    if not end.turns:
        return f"No turn was completed; {end.path} holds the session's setup."
    # The file is whole (a writer that failed says so itself, with `awl fork`): go on in it.
    return f"{_saved_in(end)}; continue with `awl run --resume {end.path}`."


def _saved_in(end: SessionEnd) -> str:
    return f"{count(end.turns, 'completed turn')} {'is' if end.turns == 1 else 'are'} saved in {end.path}"
