"""One owner for a loaded model: the runner.

A single worker thread holds the backend and the sessions that use it and takes commands
from a queue: load, open, resume, step, regenerate, undo, control, fork, list files, close.
Faces send commands and render the events (engine/events.py); no face touches the backend
or a Session, so no race between commands can reach the model or a file at the same time.

Rules that make it safe by construction:
- Admission (session/admission.py): a session takes one command at a time, a load runs
  alone, sessions open one at a time; what cannot run now is refused at once (`Refused`,
  saying why). Commands of other sessions are never refused for it.
- Token loops (a step, a regenerate, a file probe) run on threads of their own, scheduled
  against the backend's `parallel` (session/scheduling.py): beyond it they wait in FIFO
  order; nothing refuses a turn because other sessions are busy. The idle prefetch between
  turns is the lowest priority: any command stops it at its next chunk.
- `cancel()` acts at once on what runs (a turn, a probe, a load: llama.cpp's progress
  callback stops the load) and on what waits; `cancel(session)` on that session's alone.
- Each command returns a `Sent` (session/sent.py): true when accepted, and the command's own
  events, which every face waits on. An accepted one ends with exactly one `Ready`; a failure
  is an `ErrorEvent` before it, a command cancelled before it ran a `Notice` (a turn's a
  `TurnCancelled`); a refused one is its `Refused` alone. `emit`, when given, sees every
  event too, and those of no command (a prefetch's notice, what `close()` saves).
- `close()` is cancel, wait, dispose (sessions closed, then the backend); a second close
  does nothing, and every command after it is refused.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agentworld_local.domains.base import Action
from agentworld_local.engine import events
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.errors import AwlError, Cancelled, InputError
from agentworld_local.session.admission import RUNNING, SIDE_BY_SIDE, UNSTOPPABLE, VERBS, excludes
from agentworld_local.session.admission import Command as _Command
from agentworld_local.session.core import Session
from agentworld_local.session.runner_types import NewSession, SessionView, error_event, loaded_event, session_view  # noqa: F401 - faces import them from here
from agentworld_local.session.scheduling import Load, TurnScheduler
from agentworld_local.session.sent import Sent

#: Where the runner's events go: (session id or None, event). Called on the worker thread.
Emit = Callable[[str | None, events.SessionEvent], None]

class SessionRunner:
    """The one owner of a model and its sessions (see the module's doc)."""

    def __init__(self, emit: Emit | None = None, *, backend: Any = None, model: str | None = None,
                 loader: Callable[..., Any] | None = None) -> None:
        """`backend`: one loaded already (tests, `make_app(backend=...)`); it then belongs to
        the runner, which closes it. `loader` loads a model (default: session/loading.py)."""
        self._emit_to = emit
        self._backend = backend
        self._model = model if backend is None else (model or getattr(backend.info, "name", None))
        self._load_options: dict[str, Any] = {}
        self._loader = loader
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[_Command | None] = queue.SimpleQueue()
        self._pending: list[_Command] = []
        self._idle_cancel = threading.Event()  # stops the prefetch between turns (see _prefetch_next)
        self._prefetching = False  # one prefetch at a time: _idle_cancel stops it
        self._turn_threads: set[threading.Thread] = set()  # turns running side by side
        self._running_on: dict[int, _Command] = {}  # thread id -> the command whose body it runs
        self._scheduler = TurnScheduler(self.parallel)
        self._session_locks: dict[str, threading.Lock] = {}  # one command of a session at a time
        self._closed = False
        self._closing = Sent("close", None)
        self._closing.accepted = True
        self._thread = threading.Thread(target=self._work, name="awl-runner", daemon=True)
        self._thread.start()

    # -- commands (any thread) -----------------------------------------------------------

    def load(self, model: str | None, **options: Any) -> Sent:
        """Load `model` (a registry name, a GGUF path, `scripted:FILE`; None with a server's
        `remote` options) unless it is loaded
        already with the same options; a new model first closes the old one and its sessions."""
        return self._submit("load", None, lambda command: self._load(command, model, options), alone=True)

    def open(self, new: NewSession, *, model: str | None = None, load_options: dict[str, Any] | None = None,
             replaces: str | None = None) -> Sent:
        """A new session in the new file `new.out`, loading `model` first when given. The file
        is created only once the model is there: a load that fails or is cancelled leaves none."""
        return self._submit("open", None, lambda command: self._open(command, new, model, load_options, replaces),
                            alone=model is not None)

    def resume(self, path: Path, *, model: str | None = None, load_options: dict[str, Any] | None = None,
               replaces: str | None = None, reward: Any = None, **options: Any) -> Sent:
        """Continue the saved session in `path` (Session.resume; `options` go to it);
        `reward`: what its new turns earn (session/rewards.py)."""
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

    def fork(self, session: str, turn: int, out: Path, *, switch: bool = True) -> Sent:
        """A new file with the first `turn` turns; it opens as a session of its own (with
        `switch`, this one closes: the face goes on in the new file)."""
        return self._submit("fork", session, lambda command: self._fork(command, turn, Path(out), switch))

    def list_files(self, session: str) -> Sent:
        """The file system as the model sees it, by a hidden probe turn (never saved)."""
        return self._submit("files", session, self._files)

    def close_session(self, session: str) -> Sent:
        """Close one session; a new one that never got a turn leaves no file behind."""
        return self._submit("close_session", session, self._close_session)

    def cancel(self, session: str | None = None) -> None:
        """Stop what runs now (a turn stops at its next token, a load at its next progress
        report) and whatever was accepted behind it; with `session`, only that session's."""
        with self._lock:
            self._idle_cancel.set()
            for command in self._pending:
                if session is None or command.session == session:
                    command.cancel.set()

    def close(self, timeout: float | None = None) -> Sent:
        """Cancel, wait, dispose (on the worker thread): every session closed, the backend freed.
        What it says (each session Saved or Discarded, then Ready) comes on the Sent it returns."""
        with self._lock:
            self._idle_cancel.set()
            if not self._closed:
                self._closed = True
                for command in self._pending:
                    command.cancel.set()
                self._queue.put(None)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        return self._closing

    # -- what faces may ask without touching the model -----------------------------------

    @property
    def busy(self) -> bool:
        return bool(self._pending)

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
        """`parallel`, turns running and turns waiting (what /health shows)."""
        return self._scheduler.load

    # -- submission ------------------------------------------------------------------------

    def _submit(self, name: str, session: str | None, body: Callable[[_Command], None], *, alone: bool = False) -> Sent:
        sent = Sent(name, session)
        with self._lock:
            refusal = self._refusal(name, session, alone)
            if refusal is None:
                sent.accepted = True
                command = _Command(name, session, body, sent, alone)
                self._idle_cancel.set()  # a prefetch stops at its next chunk: the command runs next
                self._pending.append(command)
                self._queue.put(command)
        if refusal is not None:
            event = events.Refused(name, *refusal)
            sent.put(session, event)
            self._emit(session, event)
        return sent

    def _refusal(self, name: str, session: str | None, alone: bool) -> tuple[str, str] | None:
        verb = VERBS.get(name, name)
        if self._closed:
            return (f"Cannot {verb}: the session was closed.", "Start a new session.")
        running = [command for command in self._pending
                   if not command.cancel.is_set() and excludes(command, name, session, alone)]
        if running:
            what = RUNNING.get(running[0].name, "another command runs")
            stop = "press Escape (or Ctrl+C in awl run) to cancel it" if running[0].name in RUNNING else "try again"
            return (f"Cannot {verb} while {what}.", f"Wait for it to finish, or {stop}.")
        if session is not None and session not in self._sessions:
            return (f"Cannot {verb}: no session {session} is open.", "Open or resume a session first.")
        return None

    # -- the worker ------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            command = self._queue.get()
            if command is None:
                break
            if command.name in SIDE_BY_SIDE:  # cancelled already: hold() says so, and it is skipped
                thread = threading.Thread(target=self._run_beside, args=(command,), name=f"awl-turn-{command.name}",
                                          daemon=True)
                self._turn_threads.add(thread)
                thread.start()
                continue
            self._execute(command)
        for thread in list(self._turn_threads):
            thread.join()
        self._dispose()

    def _run_beside(self, command: _Command) -> None:
        """A token loop beside other sessions': it waits while the model runs `parallel` turns."""
        try:
            self._execute(command, scheduled=True)
        finally:
            self._turn_threads.discard(threading.current_thread())

    def _execute(self, command: _Command, *, scheduled: bool = False) -> None:
        """Run one command, then its Ready. A session's commands run one after the other (one
        accepted behind a cancelled turn waits for it to stop), its prefetch included; a
        `scheduled` one then waits while the model runs `parallel` turns."""
        if command.session is None:
            self._run(command)
            return
        with self._lock:
            lock = self._session_locks.setdefault(command.session, threading.Lock())
        with lock:
            if not scheduled:
                self._run(command)
                return
            with self._scheduler.hold(command.cancel) as started:
                self._run(command, started=started)

    def _run(self, command: _Command, *, started: bool = True) -> None:
        if not started or (command.cancel.is_set() and command.name in UNSTOPPABLE):
            # Cancelled while it waited for a place, or accepted behind a command that was
            # then cancelled (or the runner closed): it does not start at all (a change that
            # cannot stop half-way, a turn that never reached the model).
            self._skip(command)
            return
        self._running_on[threading.get_ident()] = command
        try:
            command.body(command)
        except Exception as error:  # a face shows it; the files hold every finished turn
            self._say(command, error_event(error))
        finally:
            del self._running_on[threading.get_ident()]
        self._prefetch_next(self._ready(command))

    def _skip(self, command: _Command) -> None:
        session = self._sessions.get(command.session or "")
        if command.name in ("step", "regenerate") and session is not None:
            turns = len(session.history)
            self._say(command, events.TurnCancelled(turns + (command.name == "step"), turns, session.world.head))
        else:
            self._say(command, events.Notice(f"Cancelled before it ran: nothing was changed ({command.name})."))
        self._ready(command)

    def _ready(self, command: _Command) -> Session | None:
        """The command's last word: it is no longer pending, and where its session is now."""
        with self._lock:
            self._pending.remove(command)
        session = self._sessions.get(command.session or "")
        turns, head = (len(session.history), session.world.head) if session is not None else (None, None)
        self._say(command, events.Ready(command.name, turns, head))
        return session

    def _prefetch_next(self, session: Session | None) -> None:
        """While the user reads and types, evaluate the known start of `session`'s next turn
        (the backend's `prefetch`, where it has one and `idle_prefetch` is on). It runs on this
        thread; any command submitted meanwhile stops it at its next chunk, and it writes nothing."""
        backend = self._backend
        if session is None or backend is None or not backend.idle_prefetch:
            return
        with self._lock:
            if self._pending or self._closed or self._prefetching:
                return
            self._idle_cancel = cancel = threading.Event()
            self._prefetching = True
        try:
            # Through the session's own backend: with several sessions, its sequence.
            session.world.backend.prefetch(session.world.next_turn_prefix(), cancel=cancel)
        except AwlError:
            pass  # the turn itself meets it (a full context) and says so
        except Exception as error:  # noqa: BLE001 - only time is lost: the turn evaluates it
            self._emit(None, events.Notice(f"Could not evaluate the next turn ahead ({type(error).__name__}: {error}); "
                                           "it is evaluated when the action comes."))
        finally:
            with self._lock:
                self._prefetching = False

    def _backend_notice(self, text: str) -> None:
        """What the model says (a load's plan, a cut answer): to the command it is working
        for, the one running on the thread that says it; else to `emit` alone."""
        command = self._running_on.get(threading.get_ident())
        if command is not None:
            self._say(command, events.Notice(text))
        else:
            self._emit(None, events.Notice(text))

    def _say(self, command: _Command, event: events.SessionEvent) -> None:
        """An event of `command`: to its Sent, and to `emit`."""
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

    def _get(self, command: _Command) -> Session:
        return self._sessions[command.session or ""]

    def _load(self, command: _Command, model: str | None, options: dict[str, Any]) -> bool:
        """The backend for `model`; False when the load was cancelled (no model of it stays)."""
        label = model or ""  # None: a server's model (remote options)
        if self._backend is not None and model == self._model and options == self._load_options:
            self._say(command, loaded_event(label, self._backend))
            return True
        # Accepted only once no turn runs (see admission.excludes): a thread still here said its Ready
        # and stops its prefetch at the next chunk, which the load's submission asked for.
        for thread in list(self._turn_threads):
            thread.join()
        self._drop_backend(command.sent)

        def progress(fraction: float) -> bool:
            if command.cancel.is_set():
                return False  # llama.cpp stops the load
            self._say(command, events.LoadProgress(label, fraction))
            return True

        loader = self._loader
        if loader is None:
            from agentworld_local.session.loading import load_backend as loader
        try:
            backend = loader(model, progress=progress, notice=self._backend_notice,
                             **options)
        except Cancelled:
            self._say(command, events.LoadCancelled(label))
            return False
        if command.cancel.is_set():  # finished as the cancel came: nobody waits for it now
            backend.close()
            self._say(command, events.LoadCancelled(label))
            return False
        self._backend, self._model, self._load_options = backend, model, dict(options)
        self._scheduler.set_parallel(backend.parallel)
        self._say(command, loaded_event(label, backend))
        return True

    def _ready_backend(self, command: _Command, model: str | None, load_options: dict[str, Any] | None) -> bool:
        if model is not None and not self._load(command, model, dict(load_options or {})):
            return False
        if self._backend is None:
            raise InputError("No model is loaded.", "Choose a model (a registry name, a .gguf path or scripted:FILE).")
        if command.cancel.is_set():
            self._say(command, events.LoadCancelled(model or self._model or ""))
            return False
        return True

    def _open(self, command: _Command, new: NewSession, model: str | None, load_options: dict[str, Any] | None,
              replaces: str | None) -> None:
        if not self._ready_backend(command, model, load_options):
            return
        world = World(self._backend, new.domain, new.settings)
        session = Session.create(world, new.out, scenario=new.scenario, note=new.note, agent=new.agent)
        session.reward = new.reward
        self._opened(command, session, replaces, resumed=False)

    def _resume(self, command: _Command, path: Path, model: str | None, load_options: dict[str, Any] | None,
                replaces: str | None, options: dict[str, Any], reward: Any) -> None:
        if not self._ready_backend(command, model, load_options):
            return
        if str(path) in self._sessions:
            raise InputError(f"{path} is already open.", "Go on in it, or fork it into a new file first.")
        session = Session.resume(path, self._backend, **options)
        session.reward = reward
        self._opened(command, session, replaces, resumed=True)

    def _opened(self, command: _Command, session: Session, replaces: str | None, *, resumed: bool) -> None:
        sid = str(session.path)
        with self._lock:
            self._sessions[sid] = session
        command.session = sid
        if replaces is not None and replaces != sid and replaces in self._sessions:
            self._close(replaces, command.sent)
        view = session_view(sid, session)
        self._say(command, events.SessionOpened(str(session.path), session.world.domain.name, len(session.history),
                                             session.world.head, resumed, view))

    def _turn(self, command: _Command, kind: str, action: str | None, agent: dict[str, Any] | None = None,
              final: bool = False) -> None:
        session = self._get(command)
        turn: Iterator[events.SessionEvent] = (
            session.regenerate(command.cancel) if kind == "regenerate"
            else session.step(action or "", command.cancel, agent=agent, final=final))
        for event in turn:
            self._say(command, event)

    def _resimulate(self, command: _Command, row: Any, source: Path, settings: SessionSettings, out: Path) -> None:
        from agentworld_local.session.resimulate import resimulate_row

        command.session = str(out)  # not a session a face goes on in: the file closes once it is saved
        for event in resimulate_row(self._backend, row, source, settings, out, command.cancel):
            self._say(command, event)

    def _fork(self, command: _Command, turn: int, out: Path, switch: bool) -> None:
        source = self._get(command)
        child = source.fork(turn, out)
        child.reward = source.reward
        assert child.forked is not None
        self._say(command, child.forked)
        self._opened(command, child, command.session if switch else None, resumed=True)

    def _files(self, command: _Command) -> None:
        from agentworld_local.views.file_tree import probe_file_tree

        tree = probe_file_tree(self._get(command).world, cancel=command.cancel)
        if not command.cancel.is_set():
            self._say(command, events.FilesListed(tree.paths(), tree))

    def _close_session(self, command: _Command) -> None:
        self._close(command.session or "", command.sent)

    def _close(self, sid: str, sent: Sent | None) -> None:
        with self._lock:
            session = self._sessions.pop(sid, None)
        if session is None:
            return
        self._session_locks.pop(sid, None)  # free: nothing of that session can be waiting on it now
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

    def _dispose(self) -> None:
        try:
            self._drop_backend(self._closing)
        except Exception as error:  # noqa: BLE001 - the thread ends either way; say why to whoever listens
            self._tell(self._closing, None, error_event(error))
        finally:
            self._closing.put(None, events.Ready("close", None, None))  # its own end: no face's session
