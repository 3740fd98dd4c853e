"""The replay screen: a saved session played back turn by turn, with no model.

The core (trajectory/replay.py, `ReplayCursor`) decides which turn comes next, the branches
and the pace; this screen shows the cursor's position with the session screen's world view
(tui/render.py) and moves it on key presses and timer beats.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Collapsible, Footer, OptionList, Static
from textual.widgets.option_list import Option

from agentworld_local.domains import get_domain
from agentworld_local.errors import AwlError
from agentworld_local.terminal_text import safe_for_terminal, shorten
from agentworld_local.trajectory.reader import Trajectory, read_trajectory
from agentworld_local.trajectory.replay import HAND_WRITTEN_LINE, ReplayCursor, turn_notes, turn_stats
from agentworld_local.trajectory.schema import TurnRecord
from agentworld_local.tui.browser import open_web_page, remove_web_pages
from agentworld_local.tui.dialogs import PromptDialog
from agentworld_local.tui.render import render_state


def _safe(text: str, limit: int = 90) -> str:
    return shorten(safe_for_terminal(text, keep_colour=False), limit)


def _cut(text: str, width: int) -> str:
    """One line of at most `width` characters (a list row must not wrap)."""
    line = safe_for_terminal(" ".join(text.split()), keep_colour=False)
    return line if len(line) <= width else line[: width - 1] + "…"


def turn_line(record: TurnRecord) -> Text:
    """A row of the turn list: number, action, and a mark for a regenerated turn or a context cut."""
    text = Text(no_wrap=True, end="")
    text.append(f"{record.turn:>2} ", style="bold")
    text.append(_cut(record.action, 24), style="yellow")
    if record.extra.get("attempt"):
        text.append(" ↻", style="magenta")
    if isinstance(record.context, dict) and record.context.get("cut"):
        text.append(" ✂", style="red")
    return text


def state_lexer(traj: Trajectory) -> str:
    """How the domain's state reads (json, xml, ...); plain text for a domain this awl lacks."""
    try:
        return get_domain(traj.header.domain, tools=traj.header.tools).state_lexer
    except AwlError:
        return "text"


class ReplayScreen(Screen[None]):
    CSS_PATH = "replay.tcss"
    BINDINGS = [
        # The footer fits 80 columns, `q Quit` included: a pair of keys shows as one entry.
        Binding("space", "play_pause", "Play/pause"),
        Binding("right,l", "step(1)", "Step", key_display="→/←"),
        Binding("left,h", "step(-1)", "Previous", show=False),
        Binding("home", "jump_to(0)", "Start", show=False),
        Binding("end", "jump_to(-1)", "End", show=False),
        Binding("plus,equals_sign", "speed(1)", "Speed", key_display="+/-"),
        Binding("minus", "speed(-1)", "Slower", show=False),
        Binding("b", "branch(1)", "Branch"),
        Binding("B", "branch(-1)", "Previous branch", show=False),
        Binding("g", "ask_turn", "Go to turn"),
        Binding("t", "toggle_thinking", "Thinking", show=False),
        Binding("o", "open_in_browser", "Open in browser", show=False),
        Binding("q,escape", "close", "Quit"),
    ]

    def __init__(self, source: Path | Trajectory, *, speed: float = 1.0, playing: bool = False,
                 show_thinking: bool = False) -> None:
        super().__init__()
        self.show_thinking = show_thinking
        self.traj = source if isinstance(source, Trajectory) else read_trajectory(source)
        self.cursor = ReplayCursor(self.traj, speed=speed)
        self.lexer = state_lexer(self.traj)
        self._start_playing = playing
        self._timer: Timer | None = None

    # -- layout ------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(self._header_text(), id="replay-header")
        with Horizontal(id="replay-main"):
            with Vertical(id="replay-left"):
                yield Static(id="replay-notes")
                with VerticalScroll(id="replay-world-scroll"):
                    # A terminal keeps its lines (scroll sideways), as a wide terminal would show them.
                    yield Static(id="replay-world", classes="terminal" if self.traj.header.domain == "terminal" else "")
                with Collapsible(title="Thinking", id="replay-thinking-box", collapsed=not self.show_thinking):
                    with VerticalScroll(id="replay-thinking-scroll"):
                        yield Static(id="replay-thinking")
            yield OptionList(id="replay-turns")
        yield Static(id="replay-status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        header = self.traj.header
        self.query_one("#replay-world-scroll").border_title = _safe(header.domain or "unknown domain", 40)
        self._fill_turns()
        if self._start_playing:
            self.action_play_pause()
        self._show()
        self.query_one("#replay-turns", OptionList).focus()
        for warning in self.traj.warnings:  # e.g. a damaged line: said on screen, not only before it opened
            self.app.notify(_safe(warning, 400), severity="warning", timeout=15)

    def _header_text(self) -> Text:
        h = self.traj.header
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        text.append("replay ", style="bold")
        text.append(_safe(self.traj.path.name, 60), style="cyan")  # the name: the same on every machine
        if h.hand_written:
            text.append(f"  {HAND_WRITTEN_LINE}", style="bold yellow")
        elif h.model is not None:
            text.append(f"  model {_safe(h.model.name, 40)}", style="dim")
        title = (h.scenario or {}).get("title") if isinstance(h.scenario, dict) else None
        if title:
            text.append(f"\n{_safe(str(title))}", style="bold")
        if h.task:
            text.append(f"\ntask: {_safe(h.task, 200)}", style="dim")
        return text

    # -- what the widgets show ---------------------------------------------------------

    def _fill_turns(self) -> None:
        turns = self.query_one("#replay-turns", OptionList)
        turns.clear_options()
        turns.add_option(Option(Text("start: initial state", style="italic"), id="turn-0"))
        for record in self.cursor.turns:
            turns.add_option(Option(turn_line(record), id=f"turn-{record.turn}"))
        turns.border_title = "Turns"
        turns.border_subtitle = self.cursor.branch.describe()

    def _show(self) -> None:
        cursor = self.cursor
        record = cursor.record
        world = self.query_one("#replay-world", Static)
        world.update(render_state(self.traj.header.domain, self.lexer, cursor.state()))
        self.query_one("#replay-world-scroll", VerticalScroll).scroll_home(animate=False)
        title = f"turn {record.turn}: {record.action}" if record else "initial state"
        self.query_one("#replay-world-scroll").border_subtitle = _safe(title, 70).replace("[", r"\[")
        notes = []
        if record is not None:
            notes = [f"control added: {c}" for c in record.controls_added] + turn_notes(record)
            stats = turn_stats(record)
            if stats:
                notes.append(stats)
        notes_widget = self.query_one("#replay-notes", Static)
        notes_widget.update(Text("\n".join(_safe(n, 200) for n in notes), style="yellow"))
        notes_widget.display = bool(notes)
        thinking = record.thinking.strip() if record else ""
        self.query_one("#replay-thinking", Static).update(Text(safe_for_terminal(thinking, keep_colour=False) or "(no thinking recorded)", style="dim"))
        turns = self.query_one("#replay-turns", OptionList)
        if turns.highlighted != cursor.position:
            turns.highlighted = cursor.position
        self.query_one("#replay-status", Static).update(self._status_text())

    def _status_text(self) -> Text:
        cursor = self.cursor
        text = Text(no_wrap=True, end="")
        text.append("▶ playing" if cursor.playing else "⏸ paused", style="bold green" if cursor.playing else "bold")
        text.append(f"  turn {cursor.position}/{len(cursor.turns)}")
        text.append(f"  speed {cursor.speed:g}x")
        count = len(cursor.all_branches)
        text.append(f"  branch {cursor.branch_index + 1}/{count}: {cursor.branch.describe()}", style="dim")
        return text

    # -- playback ----------------------------------------------------------------------

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self.cursor.playing:
            self._timer = self.set_timer(self.cursor.pause_s(), self.beat)

    def beat(self) -> None:
        """One timer beat: the next turn, and the next beat while playing."""
        self.cursor.tick()
        self._show()
        self._schedule()

    # -- actions -----------------------------------------------------------------------

    def action_play_pause(self) -> None:
        self.cursor.toggle_play()
        self._show()
        self._schedule()

    def action_step(self, delta: int) -> None:
        self.cursor.step(delta)
        self._show()
        self._schedule()  # a step while playing restarts the pause from here

    def action_jump_to(self, position: int) -> None:
        self.cursor.jump(len(self.cursor.turns) if position < 0 else position)
        self._show()
        self._schedule()

    def action_speed(self, steps: int) -> None:
        self.cursor.change_speed(steps)
        self._show()
        self._schedule()

    def action_branch(self, delta: int) -> None:
        if len(self.cursor.all_branches) < 2:
            self.notify("This session has one branch (no turn was undone).", timeout=3)
            return
        self.cursor.switch_branch(delta)
        self._fill_turns()
        self._show()
        self._schedule()

    def action_open_in_browser(self) -> None:
        """A web page as the browser draws it (written to a private temporary folder)."""
        if self.traj.header.domain != "web":
            self.notify("Only web sessions have a page to open in the browser.", timeout=3)
            return
        record = self.cursor.record
        title = f"turn {record.turn}: {record.action}" if record else "initial state"
        page = open_web_page(self.cursor.state(), f"awl replay of {self.traj.path.name}, {title}")
        self.notify(page.message(), severity="information" if page.opened else "warning", timeout=4 if page.opened else 15)

    def action_toggle_thinking(self) -> None:
        box = self.query_one("#replay-thinking-box", Collapsible)
        box.collapsed = not box.collapsed

    def action_ask_turn(self) -> None:
        last = len(self.cursor.turns)

        def jump(answer: str | None) -> None:
            if answer is None:
                return
            try:
                position = int(answer)
                if not 0 <= position <= last:
                    raise ValueError
            except ValueError:
                self.app.notify(f"Pick a turn from 0 (the initial state) to {last}, not {_safe(answer, 20)}.",
                                severity="warning", timeout=4)
                return
            self.action_jump_to(position)

        self.app.push_screen(PromptDialog(f"Go to turn (0-{last})", placeholder=str(last)), jump)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        """Moving in the turn list (up/down, home/end, a click) jumps the replay there."""
        event.stop()
        if event.option_index != self.cursor.position:
            self.cursor.jump(event.option_index)
            self._show()
            self._schedule()

    def action_close(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        if len(self.app.screen_stack) <= 2:  # only the default screen below: the replay was the app
            self.app.exit()
        else:
            self.app.pop_screen()


class ReplayApp(App[None]):
    """`awl replay FILE` on a terminal: the replay screen alone (no model, no session)."""

    TITLE = "awl replay"
    CSS_PATH = "app.tcss"  # the dialogs (go to turn) are styled there

    def __init__(self, traj: Trajectory, *, speed: float = 1.0, playing: bool = False, turn: int | None = None,
                 show_thinking: bool = False) -> None:
        super().__init__()
        self.traj = traj
        self.options = dict(speed=speed, playing=playing, show_thinking=show_thinking)
        self.turn = turn

    def on_mount(self) -> None:
        screen = ReplayScreen(self.traj, **self.options)
        if self.turn is not None:
            screen.cursor.jump(self.turn)
        self.push_screen(screen)

    def on_unmount(self) -> None:
        remove_web_pages()


def make_replay_app(path: Path | str, **options: Any) -> ReplayApp:
    """The replay app for `path`, read first: a bad file is a one-line error before any screen."""
    return ReplayApp(read_trajectory(path), **options)
