"""The session screen: the world view, thinking, timeline, file tree, action line, status.

Turns run in a thread worker (`@work(thread=True, exclusive=True)`); the worker only posts
messages (tui/messages.py) and the handlers here update the widgets. Keys keep working
while a turn streams; Escape cancels it through the event the session checks between tokens.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Collapsible, Footer, Static
from textual.worker import get_current_worker

from agentworld_local.errors import AwlError, InputError
from agentworld_local.session import events
from agentworld_local.session.script import CONTROL, REGENERATE, UNDO, parse_script_line
from agentworld_local.terminal_text import safe_for_terminal, shorten
from agentworld_local.tui import messages
from agentworld_local.tui.browser import open_web_page
from agentworld_local.tui.dialogs import ElementPicker, HelpScreen, PromptDialog
from agentworld_local.tui.render import render_state
from agentworld_local.tui.widgets import ActionInput, FilePanel, StatusBar, Timeline
from agentworld_local.trajectory.reader import Trajectory, read_trajectory
from agentworld_local.trajectory.schema import TurnRecord
from agentworld_local.views.file_tree import probe_file_tree

if TYPE_CHECKING:
    from agentworld_local.session.core import Session
    from agentworld_local.tui.app import AwlApp

#: The shortest time between two stream updates (about one frame at 60 Hz).
FRAME_S = 1 / 60

#: Produces a turn's events given the cancel event (a step, or a regenerate).
TurnRun = Callable[[threading.Event], Iterator[events.SessionEvent]]

def placeholder(domain: str) -> str:
    """The domain's action forms (domains/forms.py, each tested to parse) and the session commands."""
    from agentworld_local.domains.forms import ACTION_FORMS

    friendly = ACTION_FORMS.get(domain, ((), "", ""))[0]
    return " · ".join([*friendly, ":undo", ":regenerate", ":control TEXT"])


class SessionScreen(Screen[None]):
    CSS_PATH = "session.tcss"
    BINDINGS = [
        Binding("escape", "cancel_turn", "Cancel turn"),
        Binding("ctrl+z", "undo", "Undo", priority=True),
        Binding("ctrl+r", "regenerate", "Regenerate", priority=True),
        Binding("ctrl+f", "fork", "Fork at turn", priority=True),
        Binding("ctrl+n", "control", "Control", priority=True),
        Binding("ctrl+t", "files", "Files", priority=True),
        Binding("ctrl+e", "pick_element", "Elements", show=False, priority=True),
        Binding("ctrl+b", "open_in_browser", "Open page in browser", show=False, priority=True),
        Binding("ctrl+y", "files_each_turn", "Files each turn", show=False, priority=True),
        Binding("ctrl+g", "toggle_thinking", "Thinking", show=False, priority=True),
        Binding("ctrl+s", "save_as", "Save as", show=False, priority=True),
        Binding("ctrl+o", "open", "Open", show=False, priority=True),
        Binding("f1", "help", "Help"),
    ]

    def __init__(self, session: Session, *, timings: bool = True, files_each_turn: bool = False) -> None:
        super().__init__()
        self.session = session
        self.timings = timings
        self.files_each_turn = files_each_turn
        self.busy = ""  # what the worker is doing ("turn", "files"), "" when idle
        self._cancel: threading.Event | None = None
        self._live: messages.StreamUpdated | None = None
        self._turn_action = ""
        self._timeline_traj: Trajectory | None = None  # the file as read once, then kept up to date

    @property
    def awl_app(self) -> AwlApp:
        return self.app  # type: ignore[return-value]

    @property
    def domain_name(self) -> str:
        return self.session.world.domain.name

    @property
    def has_files(self) -> bool:
        return bool(getattr(self.session.world.domain, "shows_file_system", False))

    # -- layout ------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="left"):
                with VerticalScroll(id="world-scroll"):
                    yield Static(id="world")
                with Collapsible(title="Thinking", id="thinking-box", collapsed=False):
                    with VerticalScroll(id="thinking-scroll"):
                        yield Static(id="thinking")
            with Vertical(id="right"):
                yield Timeline(id="timeline")
                if self.has_files:
                    yield FilePanel(id="files")
        yield Static(id="action-error")
        yield ActionInput(placeholder=placeholder(self.domain_name), id="action")
        yield StatusBar(id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#world-scroll").border_title = self.session.world.domain.title or self.domain_name
        self.query_one("#timeline").border_title = "Timeline"
        if self.has_files:
            self.query_one("#files").border_title = "Files"
        self.query_one(Timeline).timings = self.timings
        self.query_one(ActionInput).cursor_blink = self.timings  # no blinking in snapshots
        self._show_state()
        self._refresh_timeline()
        self._refresh_status()
        self.query_one("#action-error", Static).display = False
        self.query_one(ActionInput).focus()

    # -- what the widgets show ---------------------------------------------------------

    def _state_text(self) -> str:
        history = self.session.history
        return history[-1].observation if history else self.session.world.initial_state

    def _show_world(self, text: str, title: str) -> None:
        domain = self.session.world.domain
        self.query_one("#world", Static).update(render_state(domain.name, domain.state_lexer, text))
        self.query_one("#world-scroll").border_subtitle = title

    def _show_state(self) -> None:
        history = self.session.history
        title = f"turn {len(history)}: {history[-1].action}" if history else "initial state"
        self._show_world(self._state_text(), _safe_title(title))
        self.query_one("#thinking", Static).update(Text(history[-1].thinking if history else "", style="dim"))

    def _refresh_timeline(self, saved: TurnRecord | None = None, *, reread: bool = False) -> None:
        """The file is read once; after that the timeline follows what the session saves
        (`saved`, a new turn) and its current branch, so a very large session file is not
        read again after every turn. After a failure it is read again (a cut-back write)."""
        traj = self._timeline_traj
        if traj is None or reread:
            traj = self._timeline_traj = read_trajectory(self.session.path)
        else:
            if saved is not None and saved.id not in {turn.id for turn in traj.turns[-1:]}:
                traj.turns.append(saved)
            history = self.session.history
            traj.head = history[-1].id if history else 0
        self.query_one(Timeline).show(traj)

    def _refresh_status(self, live: messages.StreamUpdated | None = None) -> None:
        info = self.session.world.backend.info
        history = self.session.history
        last = history[-1] if history else None
        speed = None
        used = None
        if last is not None:
            used = (last.token_count("prompt_total") or 0) + (last.token_count("generated") or 0)
            speed = last.timing("tokens_per_s")
        if live is not None:
            speed = live.chunks / live.elapsed_s if live.elapsed_s > 0 else None
        busy = {"turn": "generating… (esc cancels)", "files": "listing files…"}.get(self.busy, "")
        self.query_one(StatusBar).show(
            model=info.name, gpu_layers=info.gpu_layers, tokens_per_s=speed if self.timings else None,
            # Context use moves with the prompts' wording: hidden with the timings (snapshots).
            context_used=used if self.timings else None, n_ctx=info.n_ctx, think=str(self.session.header.think or "default"),
            turn=len(history), path=self.session.path.name, busy=busy)

    def _say_inline(self, text: str) -> None:
        error = self.query_one("#action-error", Static)
        error.update(Text(text, style="bold red"))
        error.display = bool(text)

    # -- the action line -----------------------------------------------------------------

    @on(ActionInput.Submitted, "#action")
    def _submitted(self, event: ActionInput.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        if self.busy:
            self._say_inline("A turn is running: wait for it, or press Escape to cancel it.")
            return
        field = self.query_one(ActionInput)
        try:
            if text.startswith(":"):
                line = parse_script_line(self.session.world.domain, text, 1, "action")
                action = line.action if line is not None else None  # `: > build.log` is an action
            else:
                action = self.session.world.domain.parse_action(text)
                line = None
        except AwlError as error:
            self._say_inline(_inline(error))  # the session is untouched
            return
        self._say_inline("")
        field.remember(text)
        field.value = ""
        if action is not None:
            self._start_turn(lambda cancel: self.session.step(action, cancel))
        elif line is not None and line.command == UNDO:
            self.action_undo()
        elif line is not None and line.command == REGENERATE:
            self.action_regenerate()
        elif line is not None and line.command == CONTROL:
            self._add_control(line.text)

    # -- turns in a worker -------------------------------------------------------------

    def _start_turn(self, run: TurnRun) -> None:
        self.busy = "turn"
        self._cancel = threading.Event()
        self._refresh_status()
        self._run_turn(run, self._cancel)

    @work(thread=True, exclusive=True, group="session", exit_on_error=False)
    def _run_turn(self, run: TurnRun, cancel: threading.Event) -> None:
        worker = get_current_worker()
        turn, thinking, observation, chunks = 0, "", "", 0
        started = posted = time.monotonic()
        pending = False

        def flush() -> None:
            nonlocal posted, pending
            if pending:
                self.post_message(messages.StreamUpdated(turn, thinking, observation, chunks, time.monotonic() - started))
                posted, pending = time.monotonic(), False

        try:
            for event in run(cancel):
                if worker.is_cancelled:
                    cancel.set()
                if isinstance(event, events.ThinkingDelta):
                    thinking += event.text
                    chunks += 1
                elif isinstance(event, events.AnswerDelta):
                    chunks += 1
                elif isinstance(event, events.ObservationDelta):
                    observation += event.text
                elif isinstance(event, events.ObservationReplaced):
                    observation = event.text
                else:
                    flush()
                    self.post_message(self._message_for(event))
                    if isinstance(event, events.TurnStarted):
                        turn, thinking, observation, chunks = event.turn, "", "", 0
                        started = time.monotonic()
                    continue
                pending = True
                # At most one update a frame: a queue that never empties would starve the
                # repaint (a fast model posts thousands a second); can_replace merges the rest.
                if time.monotonic() - posted >= FRAME_S:
                    flush()
        except Exception as error:  # shown by the app's error boundary; the file is intact
            self.post_message(messages.WorkFailed(error))
        finally:
            self.post_message(messages.WorkFinished())

    @staticmethod
    def _message_for(event: events.SessionEvent) -> Any:
        if isinstance(event, events.TurnStarted):
            return messages.TurnBegan(event.turn, event.action)
        if isinstance(event, events.TurnFinished):
            return messages.TurnSaved(event.record)
        if isinstance(event, events.TurnCancelled):
            return messages.TurnStopped(event.turn)
        return messages.SessionNotice(event)

    def on_turn_began(self, message: messages.TurnBegan) -> None:
        self._turn_action = message.action
        self._live = None
        self.query_one("#thinking", Static).update("")
        self.query_one("#world-scroll").border_subtitle = _safe_title(f"turn {message.turn}: {message.action} · thinking…")

    def on_stream_updated(self, message: messages.StreamUpdated) -> None:
        self._live = message
        self.query_one("#thinking", Static).update(Text(message.thinking, style="dim"))
        self.query_one("#thinking-scroll", VerticalScroll).scroll_end(animate=False)
        if message.observation:
            # The observation so far replaces the previous state: it is shown once.
            self._show_world(message.observation, _safe_title(f"turn {message.turn}: {self._turn_action} · streaming"))
        self._refresh_status(message)

    def on_turn_saved(self, message: messages.TurnSaved) -> None:
        self._live = None
        self._show_state()
        self._refresh_timeline(message.record)
        if self.files_each_turn and self.has_files:
            self.call_after_refresh(self.action_files)

    def on_turn_stopped(self, message: messages.TurnStopped) -> None:
        self._show_state()
        self.notify(f"Turn {message.turn} cancelled; nothing was saved.", timeout=4)

    def on_session_notice(self, message: messages.SessionNotice) -> None:
        event = message.event
        if isinstance(event, events.ContextTrimmed):
            self.notify(f"The context is full: turns {event.first}-{event.last} leave the model's view "
                        "(the file keeps them).", severity="warning", timeout=8)
        elif isinstance(event, events.Undone):
            self._show_state()
            self._refresh_timeline()
        elif isinstance(event, events.Notice):
            self.notify(event.text)

    def on_work_finished(self, message: messages.WorkFinished) -> None:
        self.busy = ""
        self._cancel = None
        self._refresh_status()

    def on_work_failed(self, message: messages.WorkFailed) -> None:
        message.stop()  # shown once, here; not again by the app
        self._show_state()
        self._refresh_timeline(reread=True)
        self.awl_app.show_error(message.error)

    # -- actions ---------------------------------------------------------------------------

    def _refuse_while_busy(self) -> bool:
        if self.busy:
            self.notify("A turn is running: wait for it, or press Escape to cancel it.", severity="warning")
        return bool(self.busy)

    def action_cancel_turn(self) -> None:
        """The session stops at the next token and the worker ends normally (TurnStopped).
        A worker cancelled by Textual (the app closing) sets the same event from its loop."""
        if self._cancel is not None:
            self._cancel.set()

    def action_undo(self) -> None:
        if self._refuse_while_busy():
            return
        with self.awl_app.guarded():
            self.session.undo()
            self._show_state()
            self._refresh_timeline()
            self._refresh_status()

    def action_regenerate(self) -> None:
        if self._refuse_while_busy():
            return
        if not self.session.history:
            self.awl_app.show_error(InputError("There is no turn to regenerate yet.", "Run an action first."))
            return
        self._start_turn(lambda cancel: self.session.regenerate(cancel))

    def action_control(self) -> None:
        def added(text: str | None) -> None:
            if text:
                self._add_control(text)

        self.app.push_screen(PromptDialog("Control instruction for the next turn",
                                          "e.g. the disk is full"), added)

    def _add_control(self, text: str) -> None:
        with self.awl_app.guarded():
            event = self.session.add_control(text)
            self.notify(f"Control for the next turn: {event.text}")

    def action_fork(self) -> None:
        if self._refuse_while_busy():
            return
        node = self.query_one(Timeline).cursor_node
        turn = node.data if node is not None else None
        if not turn:
            self.notify("Select a turn of the current branch in the timeline first.", severity="warning")
            return
        self._ask_path(f"Fork at turn {turn} into a new file", lambda path: self.awl_app.fork_session(self, turn, path))

    def action_save_as(self) -> None:
        if self._refuse_while_busy():
            return
        turns = len(self.session.history)
        self._ask_path("Save as (the session goes on in the new file)",
                       lambda path: self.awl_app.fork_session(self, turns, path))

    def action_open(self) -> None:
        if self._refuse_while_busy():
            return
        self._ask_path("Open a saved session (it goes on in that file)", self.awl_app.open_saved, suggest=False)

    def _ask_path(self, title: str, then: Callable[[Path], Any], *, suggest: bool = True) -> None:
        value = str(self.session.path.with_name(self.session.path.stem + "-fork.jsonl")) if suggest else ""

        def chosen(text: str | None) -> None:
            if text:
                with self.awl_app.guarded():
                    then(Path(text).expanduser())

        self.app.push_screen(PromptDialog(title, "path/to/session.jsonl", value), chosen)

    def action_files(self) -> None:
        if not self.has_files:
            self.notify(f"The {self.domain_name} domain has no file system to list.", severity="warning")
            return
        if self._refuse_while_busy():
            return
        self.busy = "files"
        self._cancel = threading.Event()
        self._refresh_status()
        self._probe_files(self._cancel)

    @work(thread=True, exclusive=True, group="session", exit_on_error=False)
    def _probe_files(self, cancel: threading.Event) -> None:
        try:
            # A hidden turn on a throwaway fork: never in the history or the file.
            self.post_message(messages.FileTreeReady(probe_file_tree(self.session.world, cancel=cancel)))
        except Exception as error:
            self.post_message(messages.WorkFailed(error))
        finally:
            self.post_message(messages.WorkFinished())

    def on_file_tree_ready(self, message: messages.FileTreeReady) -> None:
        self.query_one(FilePanel).show_tree(message.tree)

    def action_pick_element(self) -> None:
        """Web: choose an element of the page; `click ID` (or `fill ID `) goes to the action line."""
        from agentworld_local.tui.render import web_elements

        if self.domain_name != "web":
            self.notify("Elements can be chosen in the web domain.", severity="warning")
            return
        elements = web_elements(self._state_text(), self.session.world.domain.state_lexer)
        if not elements:
            self.notify("The page shows no element ids.", severity="warning")
            return

        def chosen(action: str | None) -> None:
            if action:
                field = self.query_one(ActionInput)
                field.value = action
                field.cursor_position = len(action)
                field.focus()

        self.app.push_screen(ElementPicker(elements), chosen)

    def action_open_in_browser(self) -> None:
        """Web: the current page as the browser draws it (written to a private temporary folder)."""
        if self.domain_name != "web":
            self.notify("Only web sessions have a page to open in the browser.", severity="warning")
            return
        history = self.session.history
        title = f"turn {len(history)}: {history[-1].action}" if history else "initial state"
        page = open_web_page(self._state_text(), f"awl session {self.session.path.name}, {title}")
        self.notify(page.message(), severity="information" if page.opened else "warning", timeout=4 if page.opened else 15)

    def action_files_each_turn(self) -> None:
        self.files_each_turn = not self.files_each_turn
        self.notify(f"File list after each turn: {'on' if self.files_each_turn else 'off'}")

    def action_toggle_thinking(self) -> None:
        box = self.query_one("#thinking-box", Collapsible)
        box.collapsed = not box.collapsed

    def action_help(self) -> None:
        rows = [(binding.key, binding.description) for binding in self.BINDINGS if isinstance(binding, Binding)]
        rows += [("ctrl+p", "Command palette"), ("ctrl+q", "Quit (every finished turn is saved)")]
        self.app.push_screen(HelpScreen(rows))


def _inline(error: AwlError) -> str:
    message = error.message.removeprefix("action:1: ")
    return f"{message} {error.hint}".strip()


def _safe_title(text: str) -> str:
    """A border title: model or user text, one line, no control bytes, no markup."""
    return shorten(safe_for_terminal(text, keep_colour=False), 70).replace("[", r"\[")
