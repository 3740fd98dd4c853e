"""The session screen: the world view, thinking, timeline, file tree, action line, status.

The screen holds no Session: it sends commands to the app's runner and shows the events
that come back (tui/messages.py brings them to the UI thread, in order): the runner's snapshot
of the session when it opened (`SessionView`), then the session's view after each command (each
`Ready` carries one, with the current branch): the screen keeps no copy of the branch by hand.
It keeps no lock or busy gate either: a command sent while another runs waits behind it in the
session's mailbox in the runner and runs in order; the status says what runs and how many wait.
Keys keep working while a turn streams; Escape cancels what runs (the runner stops it at its next
token) and drops what waits.
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
from textual.widgets import Collapsible, Footer, Static, Tree

from agentworld_local.engine import events
from agentworld_local.errors import AwlError, InputError
from agentworld_local.session.script import CONTROL, REGENERATE, UNDO, parse_script_line
from agentworld_local.session.runner.outcome import Sent
from agentworld_local.tui import messages
from agentworld_local.tui.agent_loop import AgentHooks, ProposalLine
from agentworld_local.tui.session_files import SessionFileActions
from agentworld_local.tui.browser import open_web_page
from agentworld_local.tui.dialogs import ElementPicker, HelpScreen, PromptDialog
from agentworld_local.tui.render import render_state
from agentworld_local.tui.sent_commands import BUSY_LABELS, SentCommand
from agentworld_local.tui.session_text import (
    action_suggester, inline_error, placeholder, safe_title, think_label, thinking_title, title_text,
)
from agentworld_local.tui.widgets import ActionInput, FilePanel, StatusBar, Timeline
from agentworld_local.trajectory.schema import TurnRecord
from agentworld_local.views.terminal_scrollback import scrollback, typed_text

if TYPE_CHECKING:
    from agentworld_local.session.runner import SessionRunner, SessionView
    from agentworld_local.tui.app import AwlApp

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
        #: The current branch: the runner's view of it after the last command (never read from
        #: a Session or the file, never kept by hand).
        self.branch: list[TurnRecord] = list(view.branch)
        #: A turn that finished since that view: shown at once, until its command's Ready.
        self._finished: events.TurnFinished | None = None
        #: The commands this screen sent whose Ready it has not shown yet, oldest first.
        self._pending: list[SentCommand] = []
        #: What waits for those commands to end (a fork, a save-as), oldest first.
        self._when_done: list[Callable[[], None]] = []
        self.timings = timings
        self.files_each_turn = files_each_turn
        self._live: messages.StreamUpdated | None = None
        self._turn_action = ""
        self._timeline_traj = view.trajectory  # the file's turns as the runner read them at open
        self._timeline_ids = {record.id for record in view.trajectory.turns}
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
        self.query_one("#thinking-box").display = self._thinking_on()  # `--think off`: nothing to show
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
        shown = self._shown()
        return think_label(self.view.settings.think.label() if self._thinking_on() else "off", shown[-1] if shown else None)

    def _title_text(self) -> Text:
        return title_text(self.view.header)

    # -- what the widgets show ---------------------------------------------------------

    def _shown(self) -> list[TurnRecord]:
        """The branch as shown: the runner's view of it, and a turn that finished since (its
        Ready, with the view that holds it, comes after its reward)."""
        finished = self._finished
        if finished is None:
            return self.branch
        return [*self.branch[: finished.turns - 1], finished.record]

    def _state_text(self) -> str:
        history = self._shown()
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
        turns = [(record.action_payload, record.observation) for record in self._shown()]
        return scrollback(self.view.initial_state, turns)

    def _show_state(self) -> None:
        history = self._shown()
        title = f"turn {len(history)}: {history[-1].action}" if history else "initial state"
        self._show_world(self._world_text(), safe_title(title))
        self.query_one("#thinking", Static).update(Text(history[-1].thinking if history else "", style="dim"))
        self.query_one("#thinking-box", Collapsible).title = thinking_title(history[-1] if history else None)

    def _refresh_timeline(self) -> None:
        """The runner read the file once, when the session opened; after that the timeline
        follows the events and the views: each saved turn is added, and the head is the shown branch's."""
        traj = self._timeline_traj
        shown = self._shown()
        for record in shown:
            if record.id not in self._timeline_ids:
                self._timeline_ids.add(record.id)
                traj.turns.append(record)
        traj.head = shown[-1].id if shown else 0
        self._picked_turn = None  # the timeline is rebuilt: Ctrl+F means the last turn again
        self.query_one(Timeline).show(traj)

    def _refresh_status(self, live: messages.StreamUpdated | None = None) -> None:
        info = self._model_info()
        history = self._shown()
        last = history[-1] if history else None
        speed = None
        used = None
        if last is not None:
            used = (last.token_count("prompt_total") or 0) + (last.token_count("generated") or 0)
            speed = last.timing("tokens_per_s")
        if live is not None:
            speed = live.chunks / live.elapsed_s if live.elapsed_s > 0 else None
        busy = self._busy_text()
        self.query_one(StatusBar).show(
            model=info.name, gpu_layers=info.gpu_layers, tokens_per_s=speed if self.timings else None,
            # Context use moves with the prompts' wording: hidden with the timings (snapshots).
            context_used=used if self.timings else None, n_ctx=info.n_ctx, think=self._think_label(),
            turn=len(history), path=self.view.path.name, busy=busy, endpoint=info.endpoint)

    def _busy_text(self) -> str:
        """What runs for this screen, and how many of its commands wait behind it."""
        if not self._pending:
            return ""
        text = BUSY_LABELS.get(self._pending[0].kind, "")
        waiting = len(self._pending) - 1
        return f"{text} · {waiting} queued" if waiting else text

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
        field = self.query_one(ActionInput)
        try:
            if text.startswith(":"):
                line = parse_script_line(self.view.domain, text, 1, "action")
                action = line.action if line is not None else None  # `: > build.log` is an action
            else:
                action = self.view.domain.parse_action(text)
                line = None
        except AwlError as error:
            self._say_inline(inline_error(error))  # the session is untouched
            return
        self._say_inline("")
        field.remember(text)
        field.value = ""
        if action is not None and self.agent_take(action):
            return  # the answer to the agent's proposal: the agent loop sends it
        if action is not None:  # behind what runs, if anything does: the runner keeps the order
            self._send("turn", lambda: self.runner.step(self.view.id, action))
        elif line is not None and line.command == UNDO:
            self.action_undo()
        elif line is not None and line.command == REGENERATE:
            self.action_regenerate()
        elif line is not None and line.command == CONTROL:
            self._add_control(line.text)

    # -- what the runner says --------------------------------------------------------------

    def _send(self, kind: str, send: Callable[[], Sent], *, agent: bool = False) -> bool:
        """Send a command (it waits in the session's mailbox behind what runs); the screen
        waits for it until its Ready. False when the runner refused it (it says why)."""
        sent = send()
        if not sent:
            return False
        self._pending.append(SentCommand(kind, sent, agent=agent))
        self._pending_changed()
        return True

    def _pending_changed(self) -> None:
        if self.is_mounted:
            self.refresh_bindings()  # the footer offers Escape only while something runs
            self._refresh_status(self._live)

    def _after_pending(self, then: Callable[[], None], what: str) -> None:
        """`then` once the commands this screen sent have ended (at once when none runs)."""
        if not self._pending:
            then()
            return
        self._when_done.append(then)
        self.notify(f"{what} once what runs now has ended (Esc drops it).", timeout=4)

    def _command_of(self, event: events.SessionEvent) -> SentCommand | None:
        return next((command for command in self._pending if command.owns(event)), None)

    def on_session_event(self, event: events.SessionEvent) -> None:
        """One event of this screen's session (the app routes them here, in order)."""
        if isinstance(event, events.TurnStarted):
            self._turn_began(event.turn, event.action)
        elif isinstance(event, events.TurnFinished):
            self._finished = event  # shown at once; the branch itself comes with the command's Ready
            self._live = None
            self._show_state()
            self._refresh_timeline()
            if self.files_each_turn and self.has_files:
                self.call_after_refresh(self.action_files)
        elif isinstance(event, events.TurnCancelled):
            self._live = None
            self._show_state()  # a cancelled regenerate keeps the turn it was replacing: the branch still holds it
            self._refresh_timeline()
            command = self._command_of(event)
            if command is None or (command.ran and not command.dropped):  # a dropped one is counted by the cancel
                self.notify(f"Turn {event.turn} cancelled; nothing was saved.", timeout=4)
        elif isinstance(event, events.ControlAdded):
            self.notify(f"Control for the next turn: {event.text}")
        elif isinstance(event, events.ContextTrimmed):
            self.notify(f"The context is full: turns {event.first}-{event.last} leave the model's view "
                        "(the file keeps them).", severity="warning", timeout=8)
        elif isinstance(event, events.FilesListed):
            self.query_one(FilePanel).show_tree(event.tree)
        elif isinstance(event, events.Notice):
            command = self._command_of(event)
            if command is None or not command.dropped:
                self.notify(event.text)
        elif isinstance(event, events.ErrorEvent):
            self._live = None  # the app shows the error; the session is as it was before the command
            self._show_state()
        elif isinstance(event, events.Ready):
            if event.view is not None and event.view.id == self.view.id:
                self._follow(event.view)
            command = self._command_of(event)
            if command is not None:
                self._ended(command)
        self._refresh_status(self._live)

    def _follow(self, view: Any) -> None:
        """The session's view after a command (a `SessionState`): its branch is the branch."""
        shown = [record.id for record in self._shown()]
        self.branch = list(view.branch)
        self._finished = None
        self.agent_follow(self.branch)
        if [record.id for record in self.branch] != shown:
            self._show_state()
            self._refresh_timeline()

    def _ended(self, command: SentCommand) -> None:
        """`command`'s Ready was shown: the screen waits for it no more."""
        self._pending.remove(command)
        if command.agent:
            self.agent_turn_ended(command.finished)
        self._pending_changed()
        if not self._pending:
            waiting, self._when_done = self._when_done, []
            for then in waiting:
                with self.awl_app.guarded():
                    then()

    def _turn_began(self, turn: int, action: str) -> None:
        self._turn_action = action
        self._live = None
        self._stream_base = self._streaming_base(turn, action)
        self.query_one("#thinking", Static).update("")
        self.query_one("#thinking-box", Collapsible).title = thinking_title(None)
        phase = "thinking…" if self._thinking_on() else "answering…"
        self.query_one("#world-scroll").border_subtitle = safe_title(f"turn {turn}: {action} · {phase}")

    def _streaming_base(self, turn: int, action: str) -> str | None:
        """The terminal's scrollback up to the prompt of `turn` and the command typed there
        (the observation streams after it); None for other domains."""
        if self.domain_name != "terminal":
            return None
        earlier = [(record.action_payload, record.observation) for record in self._shown()[: turn - 1]]
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
                             safe_title(f"turn {message.turn}: {self._turn_action} · streaming"))
        elif message.untagged.strip():  # a blank line before the tag is no untagged answer
            # No observation tag (yet): the model's text as it comes, marked; the turn's parse decides.
            self._show_world(message.untagged,
                             safe_title(f"turn {message.turn}: {self._turn_action} · untagged answer (no observation tag)"))
        self._refresh_status(message)

    # -- actions ---------------------------------------------------------------------------

    def action_cancel_turn(self) -> None:
        """Escape: the runner stops what runs for this session at its next token (TurnCancelled,
        then Ready) and drops what waits behind it; an agent stops too."""
        self.agent_stop()
        self._when_done.clear()
        if not self._pending:
            return
        self.runner.cancel(self.view.id)
        dropped = sum(command.dropped for command in self._pending)  # the runner said so before it returned
        if dropped:
            self.notify(f"{dropped} queued command{'s' * (dropped != 1)} dropped; nothing was changed.", timeout=4)

    def action_undo(self) -> None:
        self._send("undo", lambda: self.runner.undo(self.view.id))  # a refusal (nothing to undo) comes back as an error

    def action_regenerate(self) -> None:
        if not self._shown() and not self._pending:  # else a turn may come first: the runner decides
            self.awl_app.show_error(InputError("There is no turn to regenerate yet.", "Run an action first."))
            return
        self._send("turn", lambda: self.runner.regenerate(self.view.id))

    def action_control(self) -> None:
        def added(text: str | None) -> None:
            if text:
                self._add_control(text)

        self.app.push_screen(PromptDialog("Control instruction for the next turn",
                                          "e.g. the disk is full"), added)

    def _add_control(self, text: str) -> None:
        # Sent while a turn runs, it waits behind it: it applies to the next turn, never the running one.
        self._send("control", lambda: self.runner.control(self.view.id, text))

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
        # A hidden turn on a throwaway fork: never in the history or the file (FilesListed).
        self._send("files", lambda: self.runner.list_files(self.view.id))

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
        history = self._shown()
        title = f"turn {len(history)}: {history[-1].action}" if history else "initial state"
        page = open_web_page(self._state_text(), f"awl session {self.view.path.name}, {title}")
        self.notify(page.message(), severity="information" if page.opened else "warning", timeout=4 if page.opened else 15)

    def action_files_each_turn(self) -> None:
        self.files_each_turn = not self.files_each_turn
        self.notify(f"File list after each turn: {'on' if self.files_each_turn else 'off'}")

    def action_toggle_thinking(self) -> None:
        if not self._thinking_on():
            self.notify("The model does not think in this session (thinking is off).", timeout=4)
            return
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
        """What this screen waits for: the kind of the oldest command it sent whose Ready has
        not come ("turn", "files", "undo", "control"), "" when none (it waits for nothing)."""
        return self._pending[0].kind if self._pending else ""

    @property
    def queued(self) -> int:
        """The commands this screen sent that wait behind the one running."""
        return max(len(self._pending) - 1, 0)

    def action_help(self) -> None:
        rows = [(binding.key, binding.description) for binding in self.BINDINGS
                if isinstance(binding, Binding) and self._applies(binding.action)]
        rows += [("ctrl+p", "Command palette"), ("ctrl+q", "Quit (every finished turn is saved)")]
        self.app.push_screen(HelpScreen(rows))
