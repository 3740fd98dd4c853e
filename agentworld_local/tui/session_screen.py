"""The session screen: the world view, thinking, timeline, file tree, action line, status.

The screen holds no Session: it sends commands to the app's runner and shows the events
that come back (tui/messages.py brings them to the UI thread, in order): the runner's snapshot
of the session when it opened (`SessionView`), kept current by the events (`turns`, `head`).
Keys keep working while a turn streams; Escape cancels it (the runner stops it at its next token).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.suggester import SuggestFromList
from textual.widgets import Collapsible, Footer, Static, Tree

from agentworld_local.engine import events
from agentworld_local.errors import AwlError, InputError
from agentworld_local.session.script import CONTROL, REGENERATE, UNDO, parse_script_line
from agentworld_local.session.sent import Sent
from agentworld_local.terminal_text import safe_for_terminal, shorten
from agentworld_local.tui import messages
from agentworld_local.tui.agent_loop import AgentHooks, ProposalLine
from agentworld_local.tui.session_files import SessionFileActions
from agentworld_local.tui.browser import open_web_page
from agentworld_local.tui.dialogs import ElementPicker, HelpScreen, PromptDialog
from agentworld_local.tui.render import render_state
from agentworld_local.tui.widgets import ActionInput, FilePanel, StatusBar, Timeline
from agentworld_local.trajectory.schema import TurnRecord
from agentworld_local.views.terminal_scrollback import scrollback, typed_text

if TYPE_CHECKING:
    from agentworld_local.session.runner import SessionRunner, SessionView
    from agentworld_local.tui.app import AwlApp

#: The action line's own commands (session/script.py).
SESSION_COMMANDS = (":undo", ":regenerate", ":control ")


def placeholder(domain: Any) -> str:
    """Action forms for the domain as this session built it (a tool-call domain names only its
    own tools; domains/forms.py) and the session commands."""
    from agentworld_local.domains.forms import session_action_examples

    return " · ".join([*session_action_examples(domain), ":undo", ":regenerate", ":control TEXT"])


def action_suggester(domain: Any) -> SuggestFromList:
    """Completion for the first word: the session's tool names and shortcuts, and the commands."""
    words = getattr(domain, "action_words", None)
    return SuggestFromList([*(words() if words else []), *SESSION_COMMANDS], case_sensitive=True)


class SessionScreen(AgentHooks, SessionFileActions, Screen[None]):
    CSS_PATH = "session.tcss"
    BINDINGS = [
        Binding("escape", "cancel_turn", "Cancel turn"),
        Binding("ctrl+z", "undo", "Undo", priority=True),
        Binding("ctrl+r", "regenerate", "Regenerate", priority=True),
        Binding("ctrl+f", "fork", "Fork at turn", priority=True),
        Binding("ctrl+n", "control", "Control", show=False, priority=True),  # F1 and :control TEXT say it; 80 columns are short
        Binding("ctrl+t", "files", "Files", priority=True),
        Binding("f2", "focus_timeline", "Timeline"),
        Binding("ctrl+e", "pick_element", "Elements", show=False, priority=True),
        Binding("ctrl+b", "open_in_browser", "Open page in browser", show=False, priority=True),
        Binding("ctrl+y", "files_each_turn", "Files each turn", show=False, priority=True),
        Binding("ctrl+g", "toggle_thinking", "Thinking", show=False, priority=True),
        Binding("ctrl+s", "save_as", "Save as", show=False, priority=True),
        Binding("ctrl+o", "open", "Open", show=False, priority=True),
        Binding("ctrl+l", "let_agent_run", "Let the agent run", show=False, priority=True),
        Binding("f1", "help", "Help"),
    ]

    def __init__(self, view: SessionView, *, timings: bool = True, files_each_turn: bool = False) -> None:
        super().__init__()
        self.view = view
        #: The current branch, as the runner's events tell it (never read from a Session or the file).
        self.branch: list[TurnRecord] = list(view.branch)
        self._replacing: list[TurnRecord] = []  # what a regenerate replaces until its new turn is done
        self.timings = timings
        self.files_each_turn = files_each_turn
        self.busy = ""  # what the runner does for this screen ("turn", "files"), "" when idle
        self._live: messages.StreamUpdated | None = None
        self._turn_action = ""
        self._timeline_traj = view.trajectory  # the file's turns as the runner read them at open
        self._stream_base: str | None = None  # a terminal's scrollback before the streaming observation
        self._picked_turn: int | None = None  # the timeline turn the user moved to (None: the last)

    @property
    def awl_app(self) -> AwlApp:
        return self.app  # type: ignore[return-value]

    @property
    def runner(self) -> SessionRunner:
        return self.awl_app.runner

    @property
    def domain_name(self) -> str:
        return self.view.domain.name

    @property
    def has_files(self) -> bool:
        return bool(getattr(self.view.domain, "shows_file_system", False))

    # -- layout ------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(self._title_text(), id="session-title")
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
        if getattr(self.app, "agent", None) is not None:
            yield ProposalLine(id="agent-proposal")
        yield ActionInput(placeholder=placeholder(self._domain()), suggester=action_suggester(self._domain()), id="action")
        yield StatusBar(id="status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#world-scroll").border_title = self.view.domain.title or self.domain_name
        self.query_one("#timeline").border_title = "Timeline"
        if self.has_files:
            self.query_one("#files").border_title = "Files"
        self.query_one(Timeline).timings = self.timings
        self.query_one(ActionInput).cursor_blink = self.timings  # no blinking in snapshots
        self._show_state()
        self._refresh_timeline()
        self._refresh_status()
        self.query_one("#action-error", Static).display = False
        self.query_one("#session-title", Static).display = bool(self._title_text().plain)
        self.query_one(ActionInput).focus()
        self.agent_start()

    # -- session facts (one helper each, so where they come from can change in one place) --

    def _domain(self) -> Any:
        """The domain as this session built it (its tools, its state format)."""
        return self.view.domain

    def _model_info(self) -> Any:
        return self.view.model

    def _thinking_on(self) -> bool:
        """Whether the model thinks in this session: not with `off`, nor with a template without thinking."""
        return self.view.settings.think.mode != "off" and bool(self._model_info().template_thinks)

    def _think_label(self) -> str:
        return self.view.settings.think.label() if self._thinking_on() else "off"

    def _title_text(self) -> Text:
        """The scenario's title, else the agent's task: what this session is about."""
        header = self.view.header
        scenario = header.scenario if isinstance(header.scenario, dict) else {}
        title = str(scenario.get("title") or "")
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        if title:
            text.append(f"◆ {_plain(title)}", style="bold")
        if header.task:
            text.append(("  task: " if title else "task: ") + _plain(header.task), style="dim")
        return text

    # -- what the widgets show ---------------------------------------------------------

    def _state_text(self) -> str:
        history = self.branch
        return history[-1].observation if history else self.view.initial_state

    def _show_world(self, text: str, title: str) -> None:
        domain = self.view.domain
        self.query_one("#world", Static).update(render_state(domain.name, domain.state_lexer, text))
        self.query_one("#world-scroll").border_subtitle = title
        if domain.name == "terminal":  # a scrollback: the newest lines are at the bottom
            self.query_one("#world-scroll", VerticalScroll).scroll_end(animate=False)

    def _world_text(self) -> str:
        """What the world view shows: the terminal's whole scrollback, else the latest state."""
        if self.domain_name != "terminal":
            return self._state_text()
        turns = [(record.action_payload, record.observation) for record in self.branch]
        return scrollback(self.view.initial_state, turns)

    def _show_state(self) -> None:
        history = self.branch
        title = f"turn {len(history)}: {history[-1].action}" if history else "initial state"
        self._show_world(self._world_text(), _safe_title(title))
        self.query_one("#thinking", Static).update(Text(history[-1].thinking if history else "", style="dim"))

    def _refresh_timeline(self, saved: TurnRecord | None = None) -> None:
        """The runner read the file once, when the session opened; after that the timeline
        follows the events: a saved turn is added, and the branch's head is the events' own."""
        traj = self._timeline_traj
        if saved is not None and saved.id not in {turn.id for turn in traj.turns[-1:]}:
            traj.turns.append(saved)
        traj.head = self.branch[-1].id if self.branch else 0
        self._picked_turn = None  # the timeline is rebuilt: Ctrl+F means the last turn again
        self.query_one(Timeline).show(traj)

    def _refresh_status(self, live: messages.StreamUpdated | None = None) -> None:
        info = self._model_info()
        history = self.branch
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
            context_used=used if self.timings else None, n_ctx=info.n_ctx, think=self._think_label(),
            turn=len(history), path=self.view.path.name, busy=busy, endpoint=info.endpoint)

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
                line = parse_script_line(self.view.domain, text, 1, "action")
                action = line.action if line is not None else None  # `: > build.log` is an action
            else:
                action = self.view.domain.parse_action(text)
                line = None
        except AwlError as error:
            self._say_inline(_inline(error))  # the session is untouched
            return
        self._say_inline("")
        field.remember(text)
        field.value = ""
        if action is not None and self.agent_take(action):
            return  # the answer to the agent's proposal: the agent loop sends it
        if action is not None:
            self._start("turn", lambda: self.runner.step(self.view.id, action))
        elif line is not None and line.command == UNDO:
            self.action_undo()
        elif line is not None and line.command == REGENERATE:
            self.action_regenerate()
        elif line is not None and line.command == CONTROL:
            self._add_control(line.text)

    # -- what the runner says --------------------------------------------------------------

    def _start(self, busy: str, send: Callable[[], Sent]) -> None:
        """Send a command that takes a while; the screen is busy until the runner's Ready."""
        if send():
            self.busy = busy
            self._refresh_status()

    def on_session_event(self, event: events.SessionEvent) -> None:
        """One event of this screen's session (the app routes them here, in order)."""
        if isinstance(event, events.TurnStarted):
            self._turn_began(event.turn, event.action)
        elif isinstance(event, events.TurnFinished):
            self.agent_turn_event(event.record.observation)
            self.branch = [*self.branch[: event.turns - 1], event.record]
            self._live = None
            self._show_state()
            self._refresh_timeline(event.record)
            if self.files_each_turn and self.has_files:
                self.call_after_refresh(self.action_files)
        elif isinstance(event, events.TurnCancelled):
            self.agent_turn_event(None)
            # A cancelled regenerate keeps the turn it was replacing: it comes back.
            self.branch = [*self.branch, *self._replacing][:event.turns]
            self._replacing = []
            self._live = None
            self._show_state()
            self._refresh_timeline()
            self.notify(f"Turn {event.turn} cancelled; nothing was saved.", timeout=4)
        elif isinstance(event, (events.Undone, events.Regenerated)):
            self._replacing = self.branch[event.turns:] if isinstance(event, events.Regenerated) else []
            del self.branch[event.turns:]
            self._show_state()
            self._refresh_timeline()
        elif isinstance(event, events.ControlAdded):
            self.notify(f"Control for the next turn: {event.text}")
        elif isinstance(event, events.ContextTrimmed):
            self.notify(f"The context is full: turns {event.first}-{event.last} leave the model's view "
                        "(the file keeps them).", severity="warning", timeout=8)
        elif isinstance(event, events.FilesListed):
            self.query_one(FilePanel).show_tree(event.tree)
        elif isinstance(event, events.Notice):
            self.notify(event.text)
        elif isinstance(event, events.ErrorEvent):
            self.agent_turn_event(None)
            self._live = None  # the app shows the error; the session is as it was before the command
            self._show_state()
        elif isinstance(event, events.Ready):
            self.busy = ""
        self._refresh_status(self._live)

    def _turn_began(self, turn: int, action: str) -> None:
        self._turn_action = action
        self._live = None
        self._stream_base = self._streaming_base(turn, action)
        self.query_one("#thinking", Static).update("")
        phase = "thinking…" if self._thinking_on() else "answering…"
        self.query_one("#world-scroll").border_subtitle = _safe_title(f"turn {turn}: {action} · {phase}")

    def _streaming_base(self, turn: int, action: str) -> str | None:
        """The terminal's scrollback up to the prompt of `turn` and the command typed there
        (the observation streams after it); None for other domains."""
        if self.domain_name != "terminal":
            return None
        earlier = [(record.action_payload, record.observation) for record in self.branch[: turn - 1]]
        try:
            payload = self._domain().parse_action(action).payload
        except AwlError:
            payload = [{"keystrokes": action}]
        return scrollback(self.view.initial_state, earlier) + typed_text(payload)

    def on_stream(self, message: messages.StreamUpdated) -> None:
        self._live = message
        self.query_one("#thinking", Static).update(Text(message.thinking, style="dim"))
        self.query_one("#thinking-scroll", VerticalScroll).scroll_end(animate=False)
        if message.observation:
            # The observation so far replaces the previous state (a terminal's follows its scrollback): shown once.
            self._show_world((self._stream_base or "") + message.observation,
                             _safe_title(f"turn {message.turn}: {self._turn_action} · streaming"))
        elif message.untagged.strip():  # a blank line before the tag is no untagged answer
            # No observation tag (yet): the model's text as it comes, marked; the turn's parse decides.
            self._show_world(message.untagged,
                             _safe_title(f"turn {message.turn}: {self._turn_action} · untagged answer (no observation tag)"))
        self._refresh_status(message)

    # -- actions ---------------------------------------------------------------------------

    def _refuse_while_busy(self) -> bool:
        if self.busy:
            self.notify("A turn is running: wait for it, or press Escape to cancel it.", severity="warning")
        return bool(self.busy)

    def action_cancel_turn(self) -> None:
        """The runner stops the turn at its next token (TurnCancelled, then Ready); an agent stops too."""
        self.agent_stop()
        if self.busy:
            self.runner.cancel()

    def action_undo(self) -> None:
        if not self._refuse_while_busy():
            self.runner.undo(self.view.id)  # a refusal (nothing to undo) comes back as an error

    def action_regenerate(self) -> None:
        if self._refuse_while_busy():
            return
        if not self.branch:
            self.awl_app.show_error(InputError("There is no turn to regenerate yet.", "Run an action first."))
            return
        self._start("turn", lambda: self.runner.regenerate(self.view.id))

    def action_control(self) -> None:
        if self._refuse_while_busy():
            return

        def added(text: str | None) -> None:
            if text:
                self._add_control(text)

        self.app.push_screen(PromptDialog("Control instruction for the next turn",
                                          "e.g. the disk is full"), added)

    def _add_control(self, text: str) -> None:
        # The runner refuses it while a turn runs (the dialog may outlive the idle moment it opened in).
        if not self._refuse_while_busy():
            self.runner.control(self.view.id, text)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[Any]) -> None:
        """A turn the user moves to in the timeline is the one Ctrl+F forks at."""
        if event.control.id == "timeline" and event.control.has_focus:
            self._picked_turn = event.node.data

    def action_focus_timeline(self) -> None:
        self.query_one(Timeline).focus()

    def action_files(self) -> None:
        if not self.has_files:
            self.notify(f"The {self.domain_name} domain has no file system to list.", severity="warning")
            return
        if self._refuse_while_busy():
            return
        # A hidden turn on a throwaway fork: never in the history or the file (FilesListed).
        self._start("files", lambda: self.runner.list_files(self.view.id))

    def action_pick_element(self) -> None:
        """Web: choose an element of the page; `click ID` (or `fill ID `) goes to the action line."""
        from agentworld_local.tui.render import web_elements

        if self.domain_name != "web":
            self.notify("Elements can be chosen in the web domain.", severity="warning")
            return
        elements = web_elements(self._state_text(), self.view.domain.state_lexer)
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
        history = self.branch
        title = f"turn {len(history)}: {history[-1].action}" if history else "initial state"
        page = open_web_page(self._state_text(), f"awl session {self.view.path.name}, {title}")
        self.notify(page.message(), severity="information" if page.opened else "warning", timeout=4 if page.opened else 15)

    def action_files_each_turn(self) -> None:
        self.files_each_turn = not self.files_each_turn
        self.notify(f"File list after each turn: {'on' if self.files_each_turn else 'off'}")

    def action_toggle_thinking(self) -> None:
        box = self.query_one("#thinking-box", Collapsible)
        box.collapsed = not box.collapsed

    def _applies(self, action: str) -> bool:
        """Whether this domain has what the action works on (F1 lists only those)."""
        if action in ("files", "files_each_turn"):
            return self.has_files
        if action in ("pick_element", "open_in_browser"):
            return self.domain_name == "web"
        if action == "let_agent_run":
            return getattr(self.app, "agent", None) is not None
        return True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys for what this domain lacks are not offered (footer, command palette); Escape
        shows in the footer while there is a turn to cancel (a narrow footer keeps its room)."""
        if action == "cancel_turn":
            return bool(self.busy) or self.agent_running
        if action == "let_agent_run":
            return self.agent_running
        return self._applies(action)

    @property
    def busy(self) -> str:
        return self._busy

    @busy.setter
    def busy(self, value: str) -> None:
        self._busy = value
        if self.is_mounted:
            self.refresh_bindings()  # the footer offers Escape only while busy

    def action_help(self) -> None:
        rows = [(binding.key, binding.description) for binding in self.BINDINGS
                if isinstance(binding, Binding) and self._applies(binding.action)]
        rows += [("ctrl+p", "Command palette"), ("ctrl+q", "Quit (every finished turn is saved)")]
        self.app.push_screen(HelpScreen(rows))


def _inline(error: AwlError) -> str:
    message = error.message.removeprefix("action:1: ")
    return f"{message} {error.hint}".strip()


def _plain(text: str) -> str:
    """Model or user text for one line: no control bytes, no colour."""
    return " ".join(safe_for_terminal(text, keep_colour=False).split())


def _safe_title(text: str) -> str:
    """A border title: model or user text, one line, no control bytes, no markup."""
    return shorten(safe_for_terminal(text, keep_colour=False), 70).replace("[", r"\[")
