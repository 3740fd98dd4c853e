"""The TUI application: `make_app(...)` builds it for the CLI and for the tests.

The app holds the runner (session/runner/runner.py), the one owner of the model and its sessions:
screens send it commands (load, open, step, undo, fork, cancel, ...) and render the events
it emits, which reach the UI thread as messages (tui/messages.py). No screen holds the
backend or a Session. The app is also the one error boundary: every AwlError, and any
unexpected error, becomes a dialog with the message and the next step, while the session
and its file stay as they were.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from agentworld_local.agent.episode import DEFAULT_STEPS
from agentworld_local.engine import events
from agentworld_local.errors import AwlError, InputError
from agentworld_local.session.runner import NewSession, SessionRunner, SessionView
from agentworld_local.session.runner.outcome import Sent
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
    shared_world: str | None = None  # the shared world to join by name (worlds/; `awl play --shared-world`)


class AwlApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "awl"
    BINDINGS = [Binding("f1", "help", "Help", show=False)]

    def __init__(
        self, *, request: SessionRequest, backend: Any = None, sessions_dir: Path | None = None,
        replay_path: Path | None = None, ctx: int | None = None, gpu_layers: str = "auto", threads: int | None = None,
        timings: bool = True, files_each_turn: bool = False, start_screen: bool = False,
        models: list[str] | None = None, remote: Any = None, offload: Any = None, agent: Any = None,
        agent_steps: int = DEFAULT_STEPS,
    ) -> None:
        """`backend`: a model loaded already (tests); the runner owns it from here on.
        `remote`: a server's model (RemoteOptions), loaded when the model chosen is `remote.spec`.
        `offload`: experts in RAM, flash attention, KV type for a GGUF (OffloadOptions)."""
        super().__init__()
        self.request = request
        self._bridge = messages.FrameEventPoster(self.post_message)
        self.runner = SessionRunner(self._bridge, backend=backend, model=request.model if backend is not None else None)
        self.sessions_dir = sessions_dir
        self.replay_path = replay_path
        # One session at a time: one turn at a time (a server's capacity is not this face's to say).
        self.load_options = dict(ctx=ctx, gpu_layers=gpu_layers, threads=threads, remote=remote, offload=offload,
                                 parallel=1)
        self.timings = timings
        self.files_each_turn = files_each_turn
        self.start_screen = start_screen
        self.models = models  # the start screen's model list (None: the registry's downloaded models)
        #: An agent model (agent/, loaded already) that proposes each action; the app closes it.
        self.agent = agent
        self.agent_steps = agent_steps
        #: The session the session screen shows (its id in the runner), None before one opens.
        self.session_id: str | None = None
        #: A session the user asked for is on its way (a load, an open, a fork).
        self._waiting = False
        #: Sessions that opened after the user stopped waiting for them: each is closed once its
        #: open has ended (its Ready), by a close in its own mailbox.
        self._orphans: set[str] = set()
        #: What to say when the session the user waits for opens (a fork, a save-as).
        self._opened_note = ""

    # -- start -------------------------------------------------------------------------

    def on_mount(self) -> None:
        self.set_interval(5 * messages.FRAME_S, self._bridge.flush)  # a paused model's last text shows
        if self.replay_path is not None:
            self.open_replay(self.replay_path)
        elif not self.start_screen and (self.runner.model is not None or self.request.model):
            self.begin(self.request)
        else:
            self._show_start()

    def _show_start(self) -> None:
        from agentworld_local.tui.start import StartScreen

        self.push_screen(StartScreen(self.request, sessions=self.sessions_folder(), models=self.models))

    def sessions_folder(self) -> Path:
        if self.sessions_dir is not None:
            return self.sessions_dir
        from agentworld_local.paths import sessions_dir

        return sessions_dir()

    def begin(self, request: SessionRequest) -> None:
        """Open the session `request` asks for, loading its model first if needed (on the
        runner's thread, with the loading screen meanwhile)."""
        if request.resume is not None and (request.model or self.runner.model is None):
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
        if not request.model and self.runner.model is None:
            self.show_error(InputError("No model was chosen.", "Pick a downloaded model, or type a .gguf path, scripted:FILE, or openai:MODEL@URL for a server."))
            return
        loads = bool(request.model) and request.model != self.runner.model
        accepted = False
        with self.guarded():
            accepted = self._send_open(request)
        if not accepted:
            return
        self._waiting, self._opened_note = True, ""
        if loads:
            from agentworld_local.tui.start import LoadingScreen

            self.push_screen(LoadingScreen(request.model or ""))

    def _send_open(self, request: SessionRequest) -> Sent:
        """runner.open or runner.resume for `request`; mistakes in it are raised here, before
        anything loads."""
        load = dict(model=request.model, load_options=self.load_options, replaces=self.session_id)
        if request.resume is not None:  # sampling given now applies to the new turns, which record it
            from agentworld_local.session.resume_rules import ResumeOptions

            going_on = ResumeOptions(think=request.think, max_tokens=request.max_tokens, temperature=request.temperature)
            return self.runner.resume(request.resume, options=going_on, **load)
        from agentworld_local.session.files import default_session_path, ensure_new_file
        from agentworld_local.tui.opening import session_spec

        resolved = session_spec(request).resolve()
        out = request.out or default_session_path(resolved.domain.name, self.sessions_folder())  # <stamp>-<domain>.jsonl
        ensure_new_file(out)
        agent = self.agent.identity if self.agent is not None else None
        return self.runner.open(NewSession.from_spec(resolved, out, agent=agent), **load)

    def cancel_load(self) -> None:
        """Back from the loading screen: the load stops (llama.cpp's progress callback), and a
        session that opened meanwhile is closed (a new one leaves no file)."""
        self._waiting = False
        self.runner.cancel()

    # -- the runner's events -------------------------------------------------------------

    def on_runner_event(self, message: messages.RunnerEvent) -> None:
        from agentworld_local.tui.start import LoadingScreen

        event = message.event
        if isinstance(event, events.LoadProgress):
            if isinstance(self.screen, LoadingScreen):
                self.screen.show_progress(event.fraction)
            return
        if isinstance(event, events.SessionOpened):
            if self._waiting:
                self._waiting = False
                self._drop_loading_screen()
                self._show_session(event.view)
                if self._opened_note:
                    self.notify(self._opened_note)
            elif message.session is not None:
                self._orphans.add(message.session)  # the user went back meanwhile
            return
        if isinstance(event, events.Ready) and message.session in self._orphans:
            # The open's own Ready (it runs in the mailbox of commands of no session): the close
            # queues in the session's mailbox now, behind anything already there.
            self._orphans.discard(message.session)
            self.runner.close_session(message.session)
        if isinstance(event, (events.ErrorEvent, events.Refused)) and message.session is None:
            self._waiting = False
            if isinstance(self.screen, LoadingScreen):
                self._drop_loading_screen()
        screen = self._session_screen(message.session)
        if screen is not None and screen.is_mounted:  # a screen torn down (the app closing) shows nothing more
            screen.on_session_event(event)
        if isinstance(event, events.ErrorEvent):
            self.show_error(event.error if isinstance(event.error, BaseException) else AwlError(event.message, event.hint))
        elif isinstance(event, events.Refused):
            self.notify(f"{event.message} {event.hint}".strip(), severity="warning")
        elif isinstance(event, events.Notice) and message.session is None:
            self.notify(event.text, timeout=8)

    def on_stream_updated(self, message: messages.StreamUpdated) -> None:
        screen = self._session_screen(message.session)
        if screen is not None:
            screen.on_stream(message)

    def _session_screen(self, session: str | None) -> Any:
        from agentworld_local.tui.session_screen import SessionScreen

        for screen in self.screen_stack:
            if isinstance(screen, SessionScreen) and session is not None and screen.view.id == session:
                return screen
        return None

    def _drop_loading_screen(self) -> None:
        """Off the loading screen; never onto a blank one (a failed `awl play -m FILE` goes to
        the start screen, with the model filled in)."""
        from agentworld_local.tui.start import LoadingScreen, StartScreen

        if isinstance(self.screen, LoadingScreen):
            if len(self.screen_stack) > 2:
                self.pop_screen()
            else:
                self.switch_screen(StartScreen(self.request, sessions=self.sessions_folder(), models=self.models))

    def _show_session(self, view: SessionView) -> None:
        from agentworld_local.tui.session_screen import SessionScreen

        self.session_id = view.id
        screen = SessionScreen(view, timings=self.timings, files_each_turn=self.files_each_turn)
        if isinstance(self.screen, SessionScreen):
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    # -- session files -----------------------------------------------------------------

    def fork_session(self, turn: int, out: Path, *, save_as: bool = False) -> None:
        """A new file with the first `turn` turns of this session (the session core's fork,
        which records the fork point in this file); the session goes on in the new file."""
        if self.session_id is not None and self.runner.fork(self.session_id, turn, out):
            self._waiting = True
            self._opened_note = (f"Saved as {out}: the session goes on in that file." if save_as else
                                 f"Forked at turn {turn}: the session goes on in {out} (the old file is kept).")

    def open_saved(self, path: Path) -> None:
        """Continue a saved session in its own file."""
        self.begin(SessionRequest(resume=path))

    def open_replay(self, path: Path) -> None:
        from agentworld_local.tui.replay import ReplayScreen

        with self.guarded():
            self.push_screen(ReplayScreen(path))

    async def action_quit(self) -> None:
        """Quit: the runner cancels what runs (a turn stops at its next token and saves
        nothing; a load stops), waits for it and closes the files with every finished turn,
        off the UI thread; then the app exits."""
        import asyncio

        self._waiting = False
        await asyncio.to_thread(self.runner.close)
        self.exit()

    def on_unmount(self) -> None:
        from agentworld_local.tui.browser import remove_web_pages

        remove_web_pages()
        self.runner.close()  # a second close does nothing
        if self.agent is not None:
            self.agent.close()

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
            if isinstance(binding, Binding) and binding.description and screen.check_action(binding.action, ()):
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
    prompts: str | Path | None = None, remote: Any = None, offload: Any = None, agent: Any = None,
    agent_steps: int = DEFAULT_STEPS, shared_world: str | None = None,
) -> AwlApp:
    """The app. With a model (or a backend) it opens the session at once; without one, or
    with `start_screen=True`, the start screen lets the user choose. `timings=False` hides
    the numbers that change from run to run (speed, seconds, context use), for snapshots."""
    request = SessionRequest(model=model, domain=domain, scenario=scenario,
                             resume=Path(resume) if resume else None, think=think,
                             out=Path(out) if out else None, seed=seed, max_tokens=max_tokens, temperature=temperature,
                             task=task, controls=tuple(controls or ()), prompts=Path(prompts) if prompts else None,
                             shared_world=shared_world)
    return AwlApp(request=request, backend=backend, sessions_dir=Path(sessions_dir) if sessions_dir else None,
                  replay_path=Path(replay_path) if replay_path else None, ctx=ctx, gpu_layers=gpu_layers,
                  threads=threads, timings=timings, files_each_turn=files_each_turn,
                  start_screen=bool(start_screen), models=models, remote=remote, offload=offload, agent=agent,
                  agent_steps=agent_steps)
