"""One owner for a loaded model: the runner.

It holds the backend and the sessions that use it and takes commands from every face: load,
open, resume, step, regenerate, undo, control, fork, list files, close. Faces send commands
and render the events (engine/events.py); no face touches the backend or a Session, so no
race between commands can reach the model or a file at the same time.

The order, owned once:
- Each session has one mailbox (mailbox.py); commands of no session (open, resume, load,
  re-simulate) share one. A command waits there behind its session's earlier ones and runs
  when it reaches the front; it is never refused for being second. A load, an open that
  loads a model and a re-simulation run `alone`: they start once nothing else runs, and
  nothing starts beside them.
- A token loop (a step, a regenerate, a file probe) at the front of its mailbox takes one of
  the model's `parallel` places (scheduling.py) or waits for one, in order, as data. It gives
  the place back once its record is saved; its reward runs next, as the session's own work,
  off the model, under `reward_timeout` (session/rewards/timed.py).
- `cancel(session)` drops what waits in that session's mailbox (None: every mailbox) and
  stops what runs (a turn at its next token, a load at its next progress report, a reward at
  once); each command it touched ends cancelled, `by` the client. The idle prefetch between
  turns is the lowest priority: any command stops it at its next chunk.
- Each command runs on a thread of its own (workers.py), started when it may run; nothing polls.
- Each command returns a `Sent` (outcome.py): true when accepted, and the command's own
  events, which every face waits on. An accepted one ends with exactly one `Ready`, carrying
  the session's view after it (types.SessionState); a failure is an `ErrorEvent` before it, a
  command cancelled before it ran a `Notice` (a turn's a `TurnCancelled`). A command is
  refused (`Refused` alone) only for a session that is not open, or after `close()`.
- Opening a session that `replaces` another closes the other by a close queued in its
  mailbox, behind its running command: no turn, file or outcome is lost.
- `close()` cancels everything (`by` closing), waits for what runs to stop, then disposes
  (sessions closed, then the backend); a second close does nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agentworld_local.defaults import DEFAULT_REWARD_TIMEOUT_S
from agentworld_local.domains.base import Action
from agentworld_local.engine import events
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.errors import AwlError, Cancelled, InputError
from agentworld_local.session.core import Session
from agentworld_local.session.rewards import reward_hook
from agentworld_local.session.rewards.timed import reward_in_time
from agentworld_local.session.runner.mailbox import BY_CLIENT, BY_CLOSING, CANCELLED_BY, VERBS, Command
from agentworld_local.session.runner.order import Order
from agentworld_local.session.runner.outcome import Sent
from agentworld_local.session.runner.scheduling import Load
from agentworld_local.session.runner.types import NewSession, error_event, loaded_event, session_state, session_view
from agentworld_local.session.runner.workers import WORKERS

#: Where the runner's events go: (session id or None, event). Called on the thread that says it.
Emit = Callable[[str | None, events.SessionEvent], None]


class SessionRunner:
    """The one owner of a model and its sessions (see the module's doc)."""

    def __init__(self, emit: Emit | None = None, *, backend: Any = None, model: str | None = None,
                 loader: Callable[..., Any] | None = None, reward_timeout: float | None = DEFAULT_REWARD_TIMEOUT_S) -> None:
        """`backend`: one loaded already (tests, `make_app(backend=...)`); it then belongs to
        the runner, which closes it. `loader` loads a model (default: engine/loading.py).
        `reward_timeout`: seconds a reward hook may take for one turn (None: no limit)."""
        self._emit_to = emit
        self._backend = backend
        self._model = model if backend is None else (model or getattr(backend.info, "name", None))
        self._load_options: dict[str, Any] = {}
        self._loader = loader
        self.reward_timeout = reward_timeout
        self._sessions: dict[str, Session] = {}
        self._order = Order(self.parallel)  # what runs and what waits (order.py)
        self._lock = self._order.lock  # one lock: the sessions and the order change together
        self._running_on: dict[int, Command] = {}  # thread id -> the command whose body it runs
        self._closed = False
        self._closing = Sent("close", None)
        self._closing.accepted = True
        self._closer: threading.Thread | None = None

    # -- commands (any thread) -----------------------------------------------------------

    def load(self, model: str | None, **options: Any) -> Sent:
        """Load `model` (a registry name, a GGUF path, `scripted:FILE`; None with a server's
        `remote` options) unless it is loaded already with the same options; a new model first
        closes the old one and its sessions."""
        return self._submit("load", None, lambda command: self._load(command, model, options), alone=True)

    def open(self, new: NewSession, *, model: str | None = None, load_options: dict[str, Any] | None = None,
             replaces: str | None = None) -> Sent:
        """A new session in the new file `new.out`, loading `model` first when given. The file
        is created only once the model is there: a load that fails or is cancelled leaves none.
        `replaces`: a session closed once its running command ends (queued in its mailbox)."""
        return self._submit("open", None, lambda command: self._open(command, new, model, load_options, replaces),
                            alone=model is not None)

    def resume(self, path: Path, *, model: str | None = None, load_options: dict[str, Any] | None = None,
               replaces: str | None = None, reward: Any = None, **options: Any) -> Sent:
        """Continue the saved session in `path` (Session.resume; `options` go to it);
        `reward`: what its new turns earn (session/rewards/)."""
        return self._submit("resume", None,
                            lambda command: self._resume(command, Path(path), model, load_options, replaces, options,
                                                         reward),
                            alone=model is not None)

    def resimulate(self, row: Any, source: Path, settings: SessionSettings, out: Path) -> Sent:
        """Re-simulate one AgentWorldBench row in the new file `out` (`awl run --from-bench`):
        the ground-truth turns, then the model's prediction (session/resimulate.py)."""
        return self._submit("resimulate", None,
                            lambda command: self._resimulate(command, row, Path(source), settings, Path(out)), alone=True)

    def step(self, session: str, action: str | Action, *, agent: dict[str, Any] | None = None,
             final: bool = False) -> Sent:
        """One turn; `agent`: its agent side (TurnRecord.agent) when an agent model proposed it;
        `final`: the face ends the episode after it (a reward may judge the episode then)."""
        return self._submit("step", session, lambda command: self._turn(command, "step", action, agent, final))

    def regenerate(self, session: str) -> Sent:
        return self._submit("regenerate", session, lambda command: self._turn(command, "regenerate", None))

    def undo(self, session: str) -> Sent:
        return self._submit("undo", session, lambda command: self._say(command, self._get(command).undo()))

    def control(self, session: str, text: str) -> Sent:
        return self._submit("control", session,
                            lambda command: self._say(command, self._get(command).add_control(text)))

    def fork(self, session: str, turn: int | None, out: Path, *, switch: bool = True) -> Sent:
        """A new file with the first `turn` turns (None: all it has when the fork runs, after the
        commands before it); it opens as a session of its own (with `switch`, this one closes:
        the face goes on in the new file)."""
        return self._submit("fork", session, lambda command: self._fork(command, turn, Path(out), switch))

    def list_files(self, session: str) -> Sent:
        """The file system as the model sees it, by a hidden probe turn (never saved)."""
        return self._submit("files", session, self._files)

    def close_session(self, session: str) -> Sent:
        """Close one session once its earlier commands ended; a new one that never got a turn
        leaves no file behind."""
        return self._submit("close_session", session, self._close_session)

    def cancel(self, session: str | None = None, *, by: str = BY_CLIENT) -> int:
        """Stop what runs now and drop what waits: with `session`, that session's commands
        alone. Each ends cancelled `by` BY_CLIENT or BY_CLOSING. How many commands it touched."""
        touched, dropped, reopened = self._order.cancel(session, by)
        for command in dropped:  # they never started: their Ready is said here
            self._skip(command)
            self._say(command, self._ready_event(command, skipped=True))
        self._launch(reopened)
        return len(touched)

    def close(self, timeout: float | None = None) -> Sent:
        """Cancel, wait, dispose (on a thread of its own): every session closed, the backend
        freed. What it says (each session Saved or Discarded, then Ready) comes on the Sent it
        returns; `timeout` bounds how long this call waits for it."""
        with self._lock:
            first = not self._closed
            self._closed = True
        if first:
            self.cancel(by=BY_CLOSING)
            self._closer = threading.Thread(target=self._dispose_when_quiet, name="awl-runner-close", daemon=True)
            self._closer.start()
        closer = self._closer
        if closer is not None and threading.get_ident() not in self._running_on and closer is not threading.current_thread():
            closer.join(timeout)
        return self._closing

    # -- what faces may ask without touching the model -----------------------------------

    @property
    def busy(self) -> bool:
        return self._order.busy

    def pending(self, session: str) -> int:
        """Commands of `session` accepted and not ended (the running one included)."""
        return self._order.pending(session)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def model(self) -> str | None:
        """The model the runner holds (as it was asked for), None before a load."""
        return self._model

    @property
    def served_model(self) -> str | None:
        """The loaded model's own name (a server's model when it was loaded by options)."""
        backend = self._backend
        return backend.info.name if backend is not None else None

    @property
    def parallel(self) -> int:
        """Turns of different sessions that run at once: the backend's (1 before a load)."""
        backend = self._backend
        return backend.parallel if backend is not None else 1

    @property
    def load_now(self) -> Load:
        """`parallel`, turns running, and commands waiting (what /health shows)."""
        return self._order.load

    def servers(self) -> list[Any]:
        """Each server the turns go to (Backend.servers; none before a load), for /health and `awl serve`."""
        return self._backend.servers() if self._backend is not None else []

    # -- submitting ------------------------------------------------------------------------

    def _submit(self, name: str, session: str | None, body: Callable[[Command], None], *, alone: bool = False) -> Sent:
        sent = Sent(name, session)
        starts: list[Command] = []
        with self._lock:
            refusal = self._refusal(name, session)
            if refusal is None:
                sent.accepted = True
                starts = self._order.post(Command(name, session, body, sent, alone))
        if refusal is not None:
            event = events.Refused(name, *refusal, BY_CLOSING if self._closed else "")
            sent.put(session, event)
            self._emit(session, event)
        self._launch(starts)
        return sent

    def _refusal(self, name: str, session: str | None) -> tuple[str, str] | None:
        verb = VERBS.get(name, name)
        if self._closed:  # faces that serve others say "the server is shutting down" (Refused.by)
            return (f"Cannot {verb}: the session was closed.", "Start a new session.")
        if session is not None and session not in self._sessions:
            return (f"Cannot {verb}: no session {session} is open.", "Open or resume a session first.")
        return None

    # -- running a command -----------------------------------------------------------------

    def _launch(self, commands: list[Command]) -> None:
        """Each claimed command's body on a thread of its own (outside the lock; workers.py)."""
        for command in commands:
            WORKERS.start(functools.partial(self._run, command), f"awl-{command.name}")

    def _run(self, command: Command) -> None:
        self._running_on[threading.get_ident()] = command
        skipped = command.cancel.is_set()  # cancelled as it started: nothing is changed
        try:
            if skipped:
                self._skip(command)
            else:
                command.body(command)
        except BaseException as error:  # noqa: BLE001 - a face shows it; the files hold every finished turn,
            self._say(command, error_event(error))  # and the session's mailbox goes on whatever ended this body
        finally:
            del self._running_on[threading.get_ident()]
        session = self._end(command, skipped=skipped)
        self._prefetch_next(session)

    def _end(self, command: Command, *, skipped: bool = False) -> Session | None:
        """The command's last word (its Ready, with where its session is now), then the next."""
        self._say(command, self._ready_event(command, skipped=skipped))
        self._launch(self._order.ended(command))
        return self._sessions.get(command.session or "")

    def _ready_event(self, command: Command, *, skipped: bool) -> events.Ready:
        """`command`'s Ready: where its session is now (its view), and who cancelled it when it
        was `skipped` (cancelled before it ran)."""
        session = self._sessions.get(command.session or "")
        view = session_state(command.session, session) if session is not None else None
        by = (command.cancelled_by or BY_CLIENT) if skipped else ""
        return events.Ready(command.name, view.turns if view else None, view.head if view else None, view, by)

    def _release_place(self, command: Command) -> None:
        """The turn's record is saved: the model's place goes to the next turn now."""
        self._launch(self._order.release_place(command))

    def _skip(self, command: Command) -> None:
        """A command cancelled before it ran: it changed nothing (its Ready follows)."""
        session = self._sessions.get(command.session or "")
        if command.name in ("step", "regenerate") and session is not None:
            turns = len(session.history)
            self._say(command, events.TurnCancelled(turns + (command.name == "step"), turns, session.world.head,
                                                    command.cancelled_by))
        else:
            self._say(command, events.Notice(f"Cancelled before it ran ({CANCELLED_BY.get(command.cancelled_by, '')}): "
                                             f"nothing was changed ({command.name})."))

    def _prefetch_next(self, session: Session | None) -> None:
        """While the user reads and types, evaluate the known start of `session`'s next turn
        (the backend's `prefetch`, where it has one and `idle_prefetch` is on), when nothing
        else is waiting. Any command submitted meanwhile stops it at its next chunk; it writes
        nothing."""
        backend = self._backend
        if session is None or backend is None or not backend.idle_prefetch:
            return
        sid = str(session.path)
        cancel = self._order.prefetch_begins(sid, allowed=not self._closed and sid in self._sessions)
        if cancel is None:
            return
        try:
            # Through the session's own backend: with several sessions, its sequence.
            session.world.backend.prefetch(session.world.next_turn_prefix(), cancel=cancel)
        except AwlError:
            pass  # the turn itself meets it (a full context) and says so
        except Exception as error:  # noqa: BLE001 - only time is lost: the turn evaluates it
            self._emit(None, events.Notice(f"Could not evaluate the next turn ahead ({type(error).__name__}: {error}); "
                                           "it is evaluated when the action comes."))
        finally:
            self._launch(self._order.prefetch_ended())

    # -- saying --------------------------------------------------------------------------------

    def _backend_notice(self, text: str) -> None:
        """What the model says (a load's plan, a cut answer): to the command it is working
        for, the one running on the thread that says it; else to `emit` alone."""
        command = self._running_on.get(threading.get_ident())
        if command is not None:
            self._say(command, events.Notice(text))
        else:
            self._emit(None, events.Notice(text))

    def _say(self, command: Command, event: events.SessionEvent) -> None:
        """An event of `command`: to its Sent, and to `emit`."""
        if isinstance(event, events.TurnCancelled) and not event.by:
            event = dataclasses.replace(event, by=command.cancelled_by or BY_CLIENT)
        self._tell(command.sent, command.session, event)

    def _tell(self, sent: Sent | None, session: str | None, event: events.SessionEvent) -> None:
        if sent is not None:
            sent.put(session, event)
        self._emit(session, event)

    def _emit(self, session: str | None, event: events.SessionEvent) -> None:
        if self._emit_to is None:
            return
        try:
            self._emit_to(session, event)
        except Exception:  # noqa: BLE001 - a face that cannot take an event must not stop the model's owner
            pass

    def _get(self, command: Command) -> Session:
        session = self._sessions.get(command.session or "")
        if session is None:  # closed by an earlier command of its mailbox
            raise InputError(f"Cannot {VERBS.get(command.name, command.name)}: the session {command.session} was closed.",
                             "Open or resume a session first.")
        return session

    # -- the commands' bodies ------------------------------------------------------------------

    def _load(self, command: Command, model: str | None, options: dict[str, Any]) -> bool:
        """The backend for `model`; False when the load was cancelled (no model of it stays)."""
        label = model or ""  # None: a server's model (remote options)
        if self._backend is not None and model == self._model and options == self._load_options:
            self._say(command, loaded_event(label, self._backend))
            return True
        self._drop_backend(command.sent)  # runs alone: no turn runs on the old model

        def progress(fraction: float) -> bool:
            if command.cancel.is_set():
                return False  # llama.cpp stops the load
            self._say(command, events.LoadProgress(label, fraction))
            return True

        loader = self._loader
        if loader is None:
            from agentworld_local.engine.loading import load_backend as loader
        try:
            backend = loader(model, progress=progress, notice=self._backend_notice, **options)
        except Cancelled:
            self._say(command, events.LoadCancelled(label))
            return False
        if command.cancel.is_set():  # finished as the cancel came: nobody waits for it now
            backend.close()
            self._say(command, events.LoadCancelled(label))
            return False
        self._backend, self._model, self._load_options = backend, model, dict(options)
        self._order.resize(backend.parallel)
        self._say(command, loaded_event(label, backend))
        return True

    def _ready_backend(self, command: Command, model: str | None, load_options: dict[str, Any] | None) -> bool:
        if model is not None and not self._load(command, model, dict(load_options or {})):
            return False
        if self._backend is None:
            raise InputError("No model is loaded.", "Choose a model (a registry name, a .gguf path or scripted:FILE).")
        if command.cancel.is_set():
            self._say(command, events.LoadCancelled(model or self._model or ""))
            return False
        return True

    def _open(self, command: Command, new: NewSession, model: str | None, load_options: dict[str, Any] | None,
              replaces: str | None) -> None:
        if not self._ready_backend(command, model, load_options):
            return
        world = World(self._backend, new.domain, new.settings)
        session = Session.create(world, new.out, scenario=new.scenario, note=new.note, agent=new.agent)
        session.reward = reward_hook(new.reward)
        self._opened(command, session, replaces, resumed=False)

    def _resume(self, command: Command, path: Path, model: str | None, load_options: dict[str, Any] | None,
                replaces: str | None, options: dict[str, Any], reward: Any) -> None:
        if not self._ready_backend(command, model, load_options):
            return
        if str(path) in self._sessions:
            raise InputError(f"{path} is already open.", "Go on in it, or fork it into a new file first.")
        session = Session.resume(path, self._backend, **options)
        session.reward = reward_hook(reward)
        self._opened(command, session, replaces, resumed=True)

    def _opened(self, command: Command, session: Session, replaces: str | None, *, resumed: bool) -> None:
        sid, own = str(session.path), command.session  # own: a fork's source; None for an open or a resume
        with self._lock:
            self._sessions[sid] = session
        if replaces is not None and replaces != sid and replaces in self._sessions:
            if replaces == own:  # a fork that switches: this command is the session's own, nothing else runs
                self._close(replaces, command.sent)
            else:  # behind the other session's running command, in its mailbox
                self.close_session(replaces)
        command.session = sid  # its events and its Ready are the new session's
        view = session_view(sid, session)
        self._say(command, events.SessionOpened(str(session.path), session.world.domain.name, len(session.history),
                                                session.world.head, resumed, view))

    def _turn(self, command: Command, kind: str, action: str | None, agent: dict[str, Any] | None = None,
              final: bool = False) -> None:
        session = self._get(command)
        turn: Iterator[events.SessionEvent] = (
            session.regenerate(command.cancel) if kind == "regenerate"
            else session.step(action or "", command.cancel, agent=agent))
        finished: events.TurnFinished | None = None
        for event in turn:
            if isinstance(event, events.TurnFinished):
                finished = event
            self._say(command, event)
        self._release_place(command)
        if finished is not None and session.reward is not None:
            self._reward(command, session, finished, final)

    def _reward(self, command: Command, session: Session, finished: events.TurnFinished, final: bool) -> None:
        """The turn's reward, off the model: its own time limit, stopped by a cancel."""
        hook = session.reward
        assert hook is not None
        reward = reward_in_time(hook, session.episode(finished, final), limit_s=self.reward_timeout, wake=command.wake,
                                stopped=lambda: command.cancelled_by)
        rewarded = session.rewarded(finished, reward)
        self._say(command, rewarded)
        if rewarded.verdict and rewarded.verdict.get("error"):  # a judge that failed gives 0.0: say why
            self._say(command, events.Notice(f"The reward {rewarded.source} could not judge turn {rewarded.turn} "
                                             f"({rewarded.verdict['error']}); it gave {rewarded.value:g}."))

    def _resimulate(self, command: Command, row: Any, source: Path, settings: SessionSettings, out: Path) -> None:
        from agentworld_local.session.resimulate import resimulate_row

        command.session = str(out)  # not a session a face goes on in: the file closes once it is saved
        for event in resimulate_row(self._backend, row, source, settings, out, command.cancel):
            self._say(command, event)

    def _fork(self, command: Command, turn: int | None, out: Path, switch: bool) -> None:
        source = self._get(command)
        child = source.fork(len(source.history) if turn is None else turn, out)
        child.reward = source.reward
        assert child.forked is not None
        self._say(command, child.forked)
        self._opened(command, child, command.session if switch else None, resumed=True)

    def _files(self, command: Command) -> None:
        from agentworld_local.views.file_tree import probe_file_tree

        tree = probe_file_tree(self._get(command).world, cancel=command.cancel)
        if not command.cancel.is_set():
            self._say(command, events.FilesListed(tree.paths(), tree))

    def _close_session(self, command: Command) -> None:
        self._close(command.session or "", command.sent)

    def _close(self, sid: str, sent: Sent | None) -> None:
        with self._lock:
            session = self._sessions.pop(sid, None)
        if session is None:
            return
        kept = session.close(discard_if_unused=True)
        session.world.backend.close()  # its view only: its sequence goes to the next session first
        self._tell(sent, sid, events.Saved(str(session.path), len(session.history)) if kept else
                   events.Discarded(str(session.path)))

    def _drop_backend(self, sent: Sent) -> None:
        """A new model replaces the old one: its sessions close first (each turn is saved)."""
        for sid in list(self._sessions):
            self._close(sid, sent)
        backend, self._backend, self._model = self._backend, None, None
        if backend is not None:
            backend.close()

    def _dispose_when_quiet(self) -> None:
        self._order.wait_quiet()
        try:
            self._drop_backend(self._closing)
        except Exception as error:  # noqa: BLE001 - the thread ends either way; say why to whoever listens
            self._tell(self._closing, None, error_event(error))
        finally:
            self._closing.put(None, events.Ready("close", None, None))  # its own end: no face's session
