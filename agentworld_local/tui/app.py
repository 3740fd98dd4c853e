"""The TUI application: `make_app(...)` builds it for the CLI and for the tests.

The app owns the backend (loaded in a thread worker, with progress) and the one error
boundary: every AwlError, and any unexpected error, becomes a dialog with the message and
the next step, while the session and its file stay as they were.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from agentworld_local.errors import AwlError, InputError
from agentworld_local.session.loading import load_backend
from agentworld_local.tui import messages
from agentworld_local.tui.dialogs import ErrorDialog


@dataclass(frozen=True)
class SessionRequest:
    """What the start screen (or the command line) asks for."""

    model: str | None = None
    domain: str | None = None
    scenario: str | None = None
    resume: Path | None = None
    think: str | None = None
    out: Path | None = None
    seed: int = 0
    max_tokens: int | None = None  # most tokens for one observation (None: the default)
    temperature: float | None = None  # None: the default
    task: str | None = None  # the agent's task (None: the scenario's)
    controls: tuple[str, ...] = ()  # control instructions from turn 1, added to the scenario's
    prompts: Path | None = None  # a prompt pack directory


class AwlApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "awl"
    BINDINGS = [Binding("f1", "help", "Help", show=False)]

    def __init__(
        self, *, request: SessionRequest, backend: Any = None, sessions_dir: Path | None = None,
        replay_path: Path | None = None, ctx: int | None = None, gpu_layers: str = "auto", threads: int | None = None,
        timings: bool = True, files_each_turn: bool = False, start_screen: bool = False,
        models: list[str] | None = None,
    ) -> None:
        super().__init__()
        self.request = request
        self.backend = backend
        self.backend_model = request.model if backend is not None else None
        self.sessions_dir = sessions_dir
        self.replay_path = replay_path
        self.load_options = dict(ctx=ctx, gpu_layers=gpu_layers, threads=threads)
        self.timings = timings
        self.files_each_turn = files_each_turn
        self.start_screen = start_screen
        self.models = models  # the start screen's model list (None: the registry's downloaded models)
        self.session: Any = None

    # -- start -------------------------------------------------------------------------

    def on_mount(self) -> None:
        if self.replay_path is not None:
            self.open_replay(self.replay_path)
        elif not self.start_screen and (self.backend is not None or self.request.model):
            self.begin(self.request)
        else:
            from agentworld_local.tui.start import StartScreen

            self.push_screen(StartScreen(self.request, sessions=self.sessions_folder(), models=self.models))

    def sessions_folder(self) -> Path:
        if self.sessions_dir is not None:
            return self.sessions_dir
        from agentworld_local.paths import sessions_dir

        return sessions_dir()

    def begin(self, request: SessionRequest) -> None:
        """Open the session `request` asks for, loading its model first if needed."""
        if request.resume is not None and (request.model or self.backend is None):
            # The session's own model, or a refusal before the load (session/resume_rules.py); a
            # model loaded already is checked by Session.resume, at no cost.
            from agentworld_local.session.resume_rules import ResumeOptions, plan_resume

            planned = None
            with self.guarded():
                planned = plan_resume(request.resume, ResumeOptions(model=request.model)).model
            if planned is None:
                return  # refused: the error is on screen
            request = replace(request, model=planned)
        self.request = request
        if self.backend is not None and (request.model is None or request.model == self.backend_model):
            with self.guarded():
                self._show_session(self._open_session(request))
            return
        if not request.model:
            self.show_error(InputError("No model was chosen.", "Pick a downloaded model, or type a .gguf path or scripted:FILE."))
            return
        from agentworld_local.tui.start import LoadingScreen

        loading = LoadingScreen(request.model)
        self.push_screen(loading)
        self._load(request.model, loading)

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _load(self, model: str, screen: Screen[Any]) -> None:
        def progress(fraction: float) -> None:
            screen.post_message(messages.LoadProgress(fraction))

        def notice(text: str) -> None:
            self.post_message(messages.LoadNotice(text))

        try:
            backend = load_backend(model, progress=progress, notice=notice, **self.load_options)
        except Exception as error:
            self.post_message(messages.WorkFailed(error))
            return
        self.post_message(messages.ModelReady(backend, model))

    def on_model_ready(self, message: messages.ModelReady) -> None:
        from agentworld_local.tui.start import LoadingScreen

        if self.backend is not None and self.session is None:
            self.backend.close()
        self.backend = message.backend
        self.backend_model = message.model
        if not isinstance(self.screen, LoadingScreen):  # the user went back meanwhile
            self.notify(f"{message.model} is loaded.")
            return
        self.pop_screen()
        with self.guarded():
            self._show_session(self._open_session(self.request))

    def on_load_notice(self, message: messages.LoadNotice) -> None:
        self.notify(message.text, timeout=8)

    def on_work_failed(self, message: messages.WorkFailed) -> None:
        from agentworld_local.tui.start import LoadingScreen

        if isinstance(self.screen, LoadingScreen):
            self.pop_screen()
        self.show_error(message.error)

    def _open_session(self, request: SessionRequest) -> Any:
        from agentworld_local.tui.opening import open_session

        out = request.out
        if out is None and request.resume is None:
            out = self.sessions_folder() / f"{datetime.now():%Y%m%d-%H%M%S}-{request.domain or 'session'}.jsonl"
        return open_session(self.backend, replace(request, out=out))

    def _show_session(self, session: Any) -> None:
        from agentworld_local.tui.session_screen import SessionScreen

        if self.session is not None:
            self.session.close()
        self.session = session
        screen = SessionScreen(session, timings=self.timings, files_each_turn=self.files_each_turn)
        if isinstance(self.screen, SessionScreen):
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    # -- session files -----------------------------------------------------------------

    def fork_session(self, screen: Screen[Any], turn: int, out: Path) -> None:
        """A new file with the first `turn` turns of this session (the session core's fork,
        which records the fork point in this file); the session goes on in the new file."""
        self._show_session(self.session.fork(turn, out))
        self.notify(f"Forked at turn {turn}: {out}")

    def open_saved(self, path: Path) -> None:
        """Continue a saved session in its own file."""
        self._show_session(self._open_session(SessionRequest(resume=path)))

    def open_replay(self, path: Path) -> None:
        from agentworld_local.tui.replay import ReplayScreen

        with self.guarded():
            self.push_screen(ReplayScreen(path))

    async def action_quit(self) -> None:
        """Quit; a running turn is cancelled first (it stops at the next token and saves
        nothing), so the file is closed with every finished turn and nothing half-written."""
        from agentworld_local.tui.session_screen import SessionScreen

        for screen in self.screen_stack:
            if isinstance(screen, SessionScreen):
                screen.action_cancel_turn()
        await self.workers.wait_for_complete()
        self.exit()

    def on_unmount(self) -> None:
        from agentworld_local.tui.browser import remove_web_pages

        remove_web_pages()
        if self.session is not None:
            self.session.close()
        if self.backend is not None:
            self.backend.close()

    # -- the error boundary ------------------------------------------------------------

    def show_error(self, error: BaseException) -> None:
        if isinstance(error, AwlError):
            dialog = ErrorDialog(error.message, error.hint)
        else:
            dialog = ErrorDialog(f"Unexpected error: {type(error).__name__}: {error}",
                                 "The session file keeps every finished turn. Please report this error.")
        self.push_screen(dialog)

    @contextmanager
    def guarded(self) -> Iterator[None]:
        """Run a UI action; an error becomes the dialog instead of ending the app."""
        try:
            yield
        except Exception as error:
            self.show_error(error)

    # -- help and the command palette --------------------------------------------------

    def action_help(self) -> None:
        help_action = getattr(self.screen, "action_help", None)
        if help_action is not None:
            help_action()

    def get_system_commands(self, screen: Screen[Any]) -> Iterator[SystemCommand]:
        yield from super().get_system_commands(screen)
        for binding in getattr(screen, "BINDINGS", []):
            if isinstance(binding, Binding) and binding.description:
                action = getattr(screen, f"action_{binding.action}", None)
                if action is not None:
                    yield SystemCommand(binding.description, f"{binding.description} ({binding.key})", action)


def make_app(
    *, model: str | None = None, backend: Any = None, domain: str | None = None, scenario: str | None = None,
    resume: str | Path | None = None, think: str | None = None, out: str | Path | None = None, seed: int = 0,
    sessions_dir: str | Path | None = None, replay_path: str | Path | None = None, ctx: int | None = None,
    gpu_layers: str = "auto", threads: int | None = None, timings: bool = True, files_each_turn: bool = False,
    start_screen: bool | None = None, models: list[str] | None = None, max_tokens: int | None = None,
    temperature: float | None = None, task: str | None = None, controls: list[str] | None = None,
    prompts: str | Path | None = None,
) -> AwlApp:
    """The app. With a model (or a backend) it opens the session at once; without one, or
    with `start_screen=True`, the start screen lets the user choose. `timings=False` hides
    the numbers that change from run to run (speed, seconds, context use), for snapshots."""
    request = SessionRequest(model=model, domain=domain, scenario=scenario,
                             resume=Path(resume) if resume else None, think=think,
                             out=Path(out) if out else None, seed=seed, max_tokens=max_tokens, temperature=temperature,
                             task=task, controls=tuple(controls or ()), prompts=Path(prompts) if prompts else None)
    return AwlApp(request=request, backend=backend, sessions_dir=Path(sessions_dir) if sessions_dir else None,
                  replay_path=Path(replay_path) if replay_path else None, ctx=ctx, gpu_layers=gpu_layers,
                  threads=threads, timings=timings, files_each_turn=files_each_turn,
                  start_screen=bool(start_screen), models=models)
