"""The start screen (pick a world, a model, a thinking budget; or a recent session) and
the loading screen (the model loads in a worker; the UI stays usable)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, Footer, Input, Label, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from agentworld_local.defaults import DEFAULT_MAX_TOKENS, DEFAULT_THINK
from agentworld_local.domains import domain_names, get_domain
from agentworld_local.errors import AwlError, InputError
from agentworld_local.session.listing import session_paths
from agentworld_local.terminal_text import safe_for_terminal

if TYPE_CHECKING:
    from agentworld_local.tui.app import AwlApp, SessionRequest

RECENT = 12
#: The most of a recent session's folder shown under its name (its end: the folders nearest it).
RECENT_FOLDER = 34


def world_choices() -> list[tuple[str, Text]]:
    """(`domain:NAME` or `scenario:NAME`, label) for every domain and bundled or user scenario."""
    from agentworld_local.scenarios import list_scenarios

    choices = []
    for name in domain_names():
        label = Text.assemble((f"{name:<9}", "bold"), (getattr(get_domain(name), "title", ""), "dim"))
        choices.append((f"domain:{name}", label))
    problems: list[AwlError] = []
    for scenario in list_scenarios(problems=problems):
        label = Text.assemble(("  ◆ ", "cyan"), (scenario.title, ""), (f"  [{scenario.domain}]", "dim"))
        choices.append((f"scenario:{scenario.name}", label))
    return choices


def downloaded_models() -> list[str]:
    """Registry models whose file is on this machine (nothing is downloaded to find out)."""
    try:
        from agentworld_local.models.hub import cached_path
        from agentworld_local.models.registry import load_registry

        return [choice.spec for choice in load_registry().choices() if cached_path(choice) is not None]
    except AwlError:
        return []  # a broken registry file: the model can still be given as a path


def recent_sessions(folder: Path, limit: int = RECENT) -> list[Path]:
    """The list `awl sessions list` and `--resume last` read: with the sessions written
    elsewhere too when `folder` is the sessions dir (a test's own folder keeps to itself)."""
    from agentworld_local.paths import sessions_dir

    return session_paths(folder, limit, everywhere=folder == sessions_dir())


def recent_label(path: Path, sessions: Path) -> Text:
    """A recent session as the list shows it: its file name, and below it, for a file outside
    the sessions folder, the folder it is in (two `terminal.jsonl` are told apart by it)."""
    label = Text(safe_for_terminal(path.name, keep_colour=False))
    try:
        inside = path.parent.resolve() == sessions.resolve()
    except OSError:
        inside = False
    if not inside:
        folder = str(path.parent)
        home = str(Path.home())
        if folder == home or folder.startswith(home + "/"):
            folder = "~" + folder[len(home):]
        folder = folder if len(folder) <= RECENT_FOLDER else "…" + folder[len(folder) - RECENT_FOLDER + 1:]
        label.append(f"\n  {safe_for_terminal(folder, keep_colour=False)}", style="dim")
    return label


class StartScreen(Screen[None]):
    CSS_PATH = "start.tcss"
    BINDINGS = [
        Binding("ctrl+s", "start", "Start", priority=True),
        Binding("ctrl+r", "resume", "Resume", priority=True),
        Binding("ctrl+e", "replay", "Replay", priority=True),
        Binding("f1", "help", "Help"),
    ]

    def __init__(self, request: SessionRequest, *, sessions: Path, models: list[str] | None = None) -> None:
        super().__init__()
        self.request = request
        self.sessions = sessions
        self.models = downloaded_models() if models is None else models

    @property
    def awl_app(self) -> AwlApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Static(Text.assemble(("awl", "bold"), "  a simulated world, predicted by a local model"), id="banner")
        with Horizontal(id="columns"):
            with Vertical(id="world-column"):
                yield Label("World (◆ a scenario)")
                yield OptionList(*[Option(label, id=key) for key, label in world_choices()], id="worlds")
            with Vertical(id="setup-column"):
                # One model field: what to load, typed or picked from the downloaded ones below it.
                yield Label("Model")
                yield Input(value=self.request.model or (self.models[0] if self.models else ""),
                            placeholder="name, .gguf, openai:M@URL", id="model")
                yield OptionList(*[Option(spec, id=spec) for spec in self.models] or
                                 [Option(Text("(none: awl models pull NAME)", style="dim"),
                                         disabled=True)], id="models")
                yield Label("Thinking budget")
                yield Input(value=self.request.think or "", placeholder=f"off, full or N ({DEFAULT_THINK})",
                            id="think")
                yield Label("Max observation tokens")
                max_tokens = self.request.max_tokens
                yield Input(value="" if max_tokens is None else str(max_tokens), placeholder=f"default {DEFAULT_MAX_TOKENS}",
                            type="integer", id="max-tokens")
                yield Button("Start", variant="primary", id="start")
            with Vertical(id="recent-column"):
                yield Label("Recent sessions")
                yield Static(Text(safe_for_terminal(str(self.sessions), keep_colour=False), style="dim"), id="sessions-dir")
                recent = recent_sessions(self.sessions)
                yield OptionList(*[Option(recent_label(path, self.sessions), id=str(path)) for path in recent] or
                                 [Option(Text("(none yet)", style="dim"), disabled=True)], id="recent")
                with Horizontal(id="recent-buttons"):
                    yield Button("Resume", id="resume", compact=True)
                    yield Button("Replay", id="replay", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#models", OptionList).border_title = "downloaded"
        worlds = self.query_one("#worlds", OptionList)
        wanted = (f"scenario:{self.request.scenario}" if self.request.scenario
                  else f"domain:{self.request.domain or 'terminal'}")
        try:
            worlds.highlighted = worlds.get_option_index(wanted)
        except Exception:
            worlds.highlighted = 0
        worlds.focus()

    @on(OptionList.OptionSelected, "#models")
    def _model_chosen(self, event: OptionList.OptionSelected) -> None:
        self.query_one("#model", Input).value = event.option.id or ""

    @on(OptionList.OptionSelected, "#worlds")
    def _world_chosen(self, event: OptionList.OptionSelected) -> None:
        self.query_one("#model", Input).focus()

    @on(Button.Pressed, "#start")
    def action_start(self) -> None:
        worlds = self.query_one("#worlds", OptionList)
        option = worlds.highlighted_option
        kind, _, name = (option.id or "domain:terminal").partition(":") if option else ("domain", "", "terminal")
        max_tokens = self.query_one("#max-tokens", Input).value.strip()
        request = replace(self.request, model=self.query_one("#model", Input).value.strip() or None,
                          think=self.query_one("#think", Input).value.strip() or None,
                          max_tokens=int(max_tokens) if max_tokens.lstrip("-").isdigit() else None,
                          domain=name if kind == "domain" else None, scenario=name if kind == "scenario" else None)
        with self.awl_app.guarded():
            from agentworld_local.tui.opening import session_spec

            session_spec(request).check()  # a typo (thinking, max tokens) is said before the model loads
            self.awl_app.begin(request)

    def _recent(self) -> Path | None:
        option = self.query_one("#recent", OptionList).highlighted_option
        if option is None or option.id is None:
            self.awl_app.show_error(InputError("No recent session is selected.", "Pick one in the list first."))
            return None
        return Path(option.id)

    @on(Button.Pressed, "#resume")
    def action_resume(self) -> None:
        path = self._recent()
        if path is not None:
            # The session's own model, unless the user typed or picked another (the field
            # starts with a suggestion for new sessions, which is no choice for this one).
            typed = self.query_one("#model", Input).value.strip()
            suggested = self.request.model or (self.models[0] if self.models else "")
            self.awl_app.begin(replace(self.request, model=typed if typed and typed != suggested else None, resume=path))

    @on(Button.Pressed, "#replay")
    def action_replay(self) -> None:
        path = self._recent()
        if path is not None:
            self.awl_app.open_replay(path)

    def action_help(self) -> None:
        from agentworld_local.tui.dialogs import HelpScreen

        rows = [(binding.key, binding.description) for binding in self.BINDINGS if isinstance(binding, Binding)]
        self.app.push_screen(HelpScreen(rows + [("tab", "Next field"), ("ctrl+q", "Quit")]))


class LoadingScreen(Screen[None]):
    """The model loads on the runner's thread; Escape (or Ctrl+C) stops the load and goes back."""

    BINDINGS = [Binding("escape", "back", "Back"),
                Binding("ctrl+c", "back", "Back", show=False, priority=True)]  # not Textual's "press ctrl+q"
    CSS_PATH = "start.tcss"

    def __init__(self, model: str) -> None:
        super().__init__()
        self.model = model

    def compose(self) -> ComposeResult:
        with Vertical(id="loading-box"):
            yield Label(Text.assemble("Loading ", (safe_for_terminal(self.model, keep_colour=False), "bold"), " …"))
            # A pulse until llama.cpp reports: it does only while placing the weights, the load's last moment.
            yield ProgressBar(total=None, show_eta=False, id="load-progress")
        yield Footer()

    def show_progress(self, fraction: float) -> None:
        self.query_one(ProgressBar).update(total=1.0, progress=fraction)

    def action_back(self) -> None:
        """Back to the start screen: the runner stops the load (no model of it stays), and
        nothing is opened for it."""
        app: AwlApp = self.app  # type: ignore[assignment]
        app.cancel_load()
        if len(app.screen_stack) > 2:
            app.pop_screen()
        else:
            app.switch_screen(StartScreen(app.request, sessions=app.sessions_folder(), models=app.models))

