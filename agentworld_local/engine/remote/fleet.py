"""A fleet of engines: one model on several OpenAI-compatible servers (`--base-url` given again),
as one backend (DESIGN.md section 10). `load_backend` makes one when it is given several URLs;
with one it stays an OpenAIBackend.

- Each server is an OpenAIBackend of its own: it connects and reads its own facts (its kind,
  its places, its context); `--parallel` bounds each. A server that does not answer at load is
  down (a notice says so); when none answers, the load fails with one line. `parallel` is the
  sum of the servers' places (the runner schedules against it); a gate per server keeps each
  to its own places, so no server ever sees more turns at once than it takes.
- Placement: `for_session()` binds the session to the up server with the fewest sessions for
  its places (sessions / parallel, the first such in the order given) and each of its turns
  goes there: a turn that lands elsewhere evaluates the whole conversation again (a server's
  prefix cache and recurrent checkpoints are its own). A session's fork stays on its server.
- Failover: a server that stops answering (ServerStopped: no connection after the retries, a
  5xx after them, nothing within --timeout, a stream that broke; never a request the server
  refused, RequestRefused, nor a 429) is marked down, and the turn runs again at once, whole,
  on the least-loaded up server: a request carries the whole conversation, so nothing is lost.
  The session stays there. The turn says so once (a BackendNotice, which the World shows and
  keeps in the turn's record); the text streamed before the break starts again, and the
  World's final parse gives the answer that is recorded. The other sessions of a down server
  move at their next turn, without trying it.
- A down server is asked again (one quick request for its models) when a session is placed
  or moved at least `retry_s` seconds after it went down (30), twice as long after each failure
  in a row: no thread polls. When every server is down, a turn fails with one line.
- An engine's own router (SGLang's router, vLLM's production stack) is one server here.
- `placement="round-robin"` (internal, for bench/fleet_affinity.py; no option names it): each
  turn of a session after its first goes to the up server after the one its previous turn went
  to, in the order given, as a router with no affinity would send it; what sticky saves is
  measured against it.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import openai

from agentworld_local.engine.guard import EitherEvent, GenerationGuard
from agentworld_local.engine.remote.backend import OpenAIBackend, estimate_tokens
from agentworld_local.engine.remote.server_state import ServerStopped, failure_cause
from agentworld_local.engine.remote.client import describe_error, make_client
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.engine.remote.server_kinds import TurnGate
from agentworld_local.engine.types import (
    BackendNotice,
    GenerationDone,
    GenerationEvent,
    GenerationStats,
    ModelInfo,
    SamplingConfig,
    ServerStatus,
    ThinkBudget,
)
from agentworld_local.errors import AwlError, GenerationError, RequestRefused

#: Seconds before a down server is asked again; doubled with each failure in a row, up to MAX_RETRY_S.
RETRY_S = 30.0
MAX_RETRY_S = 15 * 60.0
#: Seconds the quick question to a down server may take (it must not hold a placement long).
PROBE_S = 3.0
#: How often a turn waiting for one of its server's places looks at its cancel flag.
_GATE_POLL_S = 0.1
#: Placements: every turn of a session on its server (the default), or each turn on the next server.
STICKY, ROUND_ROBIN = "sticky", "round-robin"

Notice = Callable[[str], None]


class _Server:
    """One server of the fleet: its backend (None until it first answered), its sessions and
    turns, and whether it is up. Changed under the fleet's lock."""

    def __init__(self, options: RemoteOptions, backend: OpenAIBackend | None, places: int) -> None:
        self.options = options
        self.endpoint = options.endpoint
        self.backend = backend
        self.places = backend.parallel if backend is not None else places
        self.gate = TurnGate(self.places, _GATE_POLL_S)
        self.views: weakref.WeakSet[FleetView] = weakref.WeakSet()  # its sessions: views not closed nor dropped
        self.running = 0
        self.up = backend is not None
        self.failures = 0  # times it stopped answering (or did not answer when asked again)
        self.streak = 0  # failures in a row: the wait before it is asked again doubles with each
        self.error: str | None = None  # why it is down
        self.retry_at = 0.0
        self.probing = False

    @property
    def load(self) -> float:
        return len(self.views) / self.places


class Fleet:
    """Several servers of one model as one backend (see the module's doc)."""

    #: Nothing to evaluate ahead, no checkpoints, counts estimated: as OpenAIBackend.
    idle_prefetch = False
    checkpoint_system_prompt = False
    counts_exactly = False
    server_separates = False

    def __init__(self, options: RemoteOptions, *, n_ctx: int | None = None, parallel: int | None = None,
                 notice: Notice | None = None, retry_s: float = RETRY_S,
                 clock: Callable[[], float] = time.monotonic, placement: str = STICKY) -> None:
        """Connect to every server of `options` at once. `n_ctx`, `parallel`: each server's, as
        OpenAIBackend takes them. `retry_s`: seconds before a down server is asked again (then
        doubled with each failure in a row); `clock`: seconds, for tests; `placement`: STICKY,
        or ROUND_ROBIN to measure what sticky saves (see the module's doc)."""
        if placement not in (STICKY, ROUND_ROBIN):
            raise ValueError(f"placement must be {STICKY!r} or {ROUND_ROBIN!r}, not {placement!r}")
        self.placement = placement
        self.options = options
        self.notices: list[str] = []
        self._notice_sink = notice
        self._n_ctx, self._parallel = n_ctx, parallel
        self._retry_s, self._clock = retry_s, clock
        self._lock = threading.Lock()
        self._closed = threading.Event()
        servers = options.servers()
        with ThreadPoolExecutor(max_workers=len(servers), thread_name_prefix="awl-fleet-connect") as pool:
            connected = list(pool.map(self._connect, servers))
        fatal = next((error for _, error in connected if error is not None and not _down_at_load(error)), None)
        up = [backend for backend, _ in connected if backend is not None]
        if fatal is not None or not up:
            for backend in up:
                backend.close()
            if fatal is not None:
                raise fatal
            causes = "; ".join(f"{server.endpoint}: {_cause(error, server)}" for server, (_, error) in zip(servers, connected))
            raise GenerationError(f"No server of the fleet answers ({causes}).",
                                  "Check that the servers are running and that each --base-url is right, then try again.")
        assumed = parallel or max(backend.parallel for backend in up)  # a down server's places, until it answers
        self._servers = [_Server(server, backend, assumed) for server, (backend, _) in zip(servers, connected)]
        for server, (backend, error) in zip(self._servers, connected):
            if backend is not None:
                for text in backend.notices:
                    self._say(text)
                backend._notice_sink = notice  # what it says of a turn goes to that turn's listener
            else:
                self._stopped(server, _cause(error, server.options), asked=True)
                self._say(f"The server at {server.endpoint} does not answer ({server.error}); awl goes on with the "
                          f"others and asks it again in {self._retry_s:g} s.")
        #: Turns at once: every server's places (the runner's count; each server keeps to its own).
        self.parallel = sum(server.places for server in self._servers)
        first = up[0]
        #: The model, planned with the smallest context of the servers (a session may move).
        self.info: ModelInfo = replace(first.info, n_ctx=min(backend.info.n_ctx for backend in up),
                                       endpoint=options.endpoint)
        known = [backend.facts.n_ctx for backend in up]
        #: What the servers say, as one server's facts (their context: None unless every one says it).
        self.facts = replace(first.facts, n_ctx=min(known) if all(known) else None)  # type: ignore[type-var]

    def _connect(self, options: RemoteOptions) -> tuple[OpenAIBackend | None, AwlError | None]:
        try:
            return OpenAIBackend(options, n_ctx=self._n_ctx, parallel=self._parallel), None
        except AwlError as error:
            return None, error

    def _say(self, text: str) -> None:
        self.notices.append(text)
        if self._notice_sink is not None:
            self._notice_sink(text)

    # -- the Backend protocol -------------------------------------------------------------

    def prefetch(self, messages: list[dict[str, str]], *, cancel: threading.Event | None = None,
                 waits: bool = False) -> int:
        return 0

    def for_session(self) -> FleetView:
        """A view bound to the least-loaded up server (sessions for its places)."""
        return self._place(None)

    def generate(self, messages: list[dict[str, str]], *, sampling: SamplingConfig, think: ThinkBudget, seed: int,
                 cancel: threading.Event | None = None) -> Iterator[GenerationEvent]:
        """One generation on a view of its own (placed as a session is, for this answer alone)."""
        view = self.for_session()
        try:
            yield from view.generate(messages, sampling=sampling, think=think, seed=seed, cancel=cancel)
        finally:
            view.close()

    def count_tokens(self, messages: list[dict[str, str]], think: ThinkBudget) -> int:
        return estimate_tokens(messages)

    def servers(self) -> list[ServerStatus]:
        """Each server: its sessions, turns running, places, whether it is up, its failures."""
        now = self._clock()
        with self._lock:
            return [ServerStatus(endpoint=server.endpoint, up=server.up, sessions=len(server.views),
                                 running=server.running, parallel=server.places, failures=server.failures,
                                 error=server.error,
                                 retry_in_s=None if server.up else round(max(server.retry_at - now, 0.0), 1))
                    for server in self._servers]

    def close(self) -> None:
        """Stop every turn in flight on every server and release the connections."""
        self._closed.set()
        for server in self._servers:
            if server.backend is not None:
                server.backend.close()

    # -- placement -------------------------------------------------------------------------

    def _place(self, prefer: _Server | None) -> FleetView:
        self._ask_again()
        with self._lock:
            server = prefer if prefer is not None and prefer.up else self._least_loaded()
            if server is None:  # every server down: bound to the one asked again first; its turn says so
                server = min(self._servers, key=lambda candidate: candidate.retry_at)
            view = FleetView(self, server)
            server.views.add(view)
            return view

    def _least_loaded(self) -> _Server | None:
        up = [server for server in self._servers if server.up]
        return min(up, key=lambda server: server.load) if up else None

    def _bind(self, view: FleetView) -> str | None:
        """Before a turn: `view` bound to an up server, moved when its own is down (the notice
        that says so); GenerationError when every server is down."""
        server = view._server
        if not server.up:
            self._ask_again()  # its own server too, when its time has come
        with self._lock:
            if server.up:
                if view._inner is None:
                    view._inner = server.backend.for_session()  # type: ignore[union-attr]
                return None
            target = self._least_loaded()
            if target is None:
                raise self._all_down()
            server.views.discard(view)
            target.views.add(view)
            old, view._server = view._inner, target
            view._inner = target.backend.for_session()  # type: ignore[union-attr]
            cause = server.error
        if old is not None:
            old.close()
        return f"The server at {server.endpoint} stopped answering ({cause}); this session moved to {target.endpoint}."

    def _rotate(self, view: FleetView) -> None:
        """Round-robin: `view` moved to the up server after its own, in the order given."""
        with self._lock:
            start = self._servers.index(view._server)
            ordered = self._servers[start + 1:] + self._servers[:start + 1]
            target = next((server for server in ordered if server.up), None)
            if target is None or target is view._server or target.backend is None:
                return
            view._server.views.discard(view)
            target.views.add(view)
            old, view._server = view._inner, target
            view._inner = target.backend.for_session()
        if old is not None:
            old.close()

    def _all_down(self) -> GenerationError:
        now = self._clock()
        soonest = min(self._servers, key=lambda server: server.retry_at)
        last = max(self._servers, key=lambda server: server.retry_at)
        return GenerationError(
            f"Every server of the fleet stopped answering ({', '.join(server.endpoint for server in self._servers)}; "
            f"the last: {last.error}); this turn was not saved.",
            f"Check that the servers are running; awl asks {soonest.endpoint} again in "
            f"{max(soonest.retry_at - now, 0.0):.0f} s. Then send the action again.",
        )

    # -- failures and returns --------------------------------------------------------------

    def _stopped(self, server: _Server, cause: str, *, asked: bool = False) -> None:
        """`server` stopped answering (`asked`: it was asked again and did not answer): down,
        asked again after the retry wait, doubled with each failure in a row. Under the lock,
        or before any session exists."""
        if not server.up and not asked:
            return  # another turn said so first
        server.up, server.error = False, cause
        server.failures += 1
        server.streak += 1
        server.retry_at = self._clock() + min(self._retry_s * 2 ** (server.streak - 1), MAX_RETRY_S)

    def _ask_again(self) -> None:
        """Ask each down server whose time has come whether it answers now (outside the lock:
        a turn or a placement on another thread does not wait for it)."""
        now = self._clock()
        with self._lock:
            due = [server for server in self._servers if not server.up and not server.probing and server.retry_at <= now]
            for server in due:
                server.probing = True
        for server in due:
            backend, cause = self._probe(server)
            with self._lock:
                server.probing = False
                if backend is None:
                    self._stopped(server, cause, asked=True)
                    continue
                if server.backend is None:
                    server.backend, server.places = backend, backend.parallel
                    server.gate = TurnGate(server.places, _GATE_POLL_S)
                server.up, server.error = True, None
            self.notices.append(f"The server at {server.endpoint} answers again; sessions are placed on it again.")

    def _probe(self, server: _Server) -> tuple[OpenAIBackend | None, str]:
        """(its backend, "") when `server` answers now (connected, the first time), else (None, why)."""
        quick = replace(server.options, timeout_s=min(server.options.timeout_s, PROBE_S), retries=0)
        try:
            client = make_client(quick)
            try:
                client.models.list()
            finally:
                client.close()
            if server.backend is not None:
                return server.backend, ""
            backend = OpenAIBackend(server.options, n_ctx=self._n_ctx, parallel=self._parallel, notice=self._notice_sink)
            return backend, ""
        except openai.OpenAIError as error:
            return None, _cause(describe_error(error, quick), quick)
        except AwlError as error:
            return None, _cause(error, server.options)

    def _answered(self, server: _Server) -> None:
        with self._lock:
            server.streak = 0

    @contextlib.contextmanager
    def _running(self, server: _Server) -> Iterator[None]:
        with self._lock:
            server.running += 1
        try:
            yield
        finally:
            with self._lock:
                server.running -= 1


class FleetView:
    """One session's view of a fleet: bound to one server (its own view of that server's
    backend), moved to another when that one stops answering (see the module's doc)."""

    idle_prefetch = False
    checkpoint_system_prompt = False
    counts_exactly = False

    def __init__(self, fleet: Fleet, server: _Server) -> None:
        self._fleet = fleet
        self._server = server
        self._inner: OpenAIBackend | None = server.backend.for_session() if server.backend is not None else None
        self._guard = GenerationGuard()
        self._closed = threading.Event()
        self.parallel = fleet.parallel
        self._turns = 0  # turns begun: round-robin moves every one after the first
        self._info: tuple[ModelInfo, int, ModelInfo] | None = None  # `info` made from (server's, context)

    @property
    def info(self) -> ModelInfo:
        """Its server's (the endpoint a new session's file records), with the fleet's context."""
        backend = self._server.backend
        if backend is None:
            return self._fleet.info
        made = (backend.info, self._fleet.info.n_ctx)  # asked every turn: a copy only when either changed
        if self._info is None or self._info[0] is not made[0] or self._info[1] != made[1]:
            self._info = (*made, replace(backend.info, n_ctx=made[1]))
        return self._info[2]

    @property
    def server_separates(self) -> bool:
        return bool(self._inner is not None and self._inner.server_separates)

    @property
    def endpoint(self) -> str:
        """The server its turns go to now."""
        return self._server.endpoint

    def prefetch(self, messages: list[dict[str, str]], *, cancel: threading.Event | None = None,
                 waits: bool = False) -> int:
        return 0

    def for_session(self) -> FleetView:
        """A fork's: on the same server while it is up (its prefix is there), else placed anew."""
        return self._fleet._place(self._server)

    def count_tokens(self, messages: list[dict[str, str]], think: ThinkBudget) -> int:
        return estimate_tokens(messages)

    def servers(self) -> list[ServerStatus]:
        return self._fleet.servers()

    def generate(self, messages: list[dict[str, str]], *, sampling: SamplingConfig, think: ThinkBudget, seed: int,
                 cancel: threading.Event | None = None) -> Iterator[GenerationEvent]:
        fleet = self._fleet
        if self._closed.is_set() or fleet._closed.is_set():
            raise GenerationError("The connection to the server was closed.", "Load the model again to run another turn.")
        with self._guard.hold():
            stop = EitherEvent(cancel, self._closed, fleet._closed)
            if fleet.placement == ROUND_ROBIN and self._turns:
                fleet._rotate(self)
            self._turns += 1
            while True:
                moved = fleet._bind(self)
                if moved is not None:
                    yield BackendNotice(moved)
                server, inner = self._server, self._inner
                assert inner is not None  # bound to an up server: its view exists
                if not server.gate.enter(stop.is_set):  # cancelled while waiting for one of its places
                    yield GenerationDone(raw_output="", think_open=False, stats=GenerationStats(finish="cancelled"))
                    return
                try:
                    with fleet._running(server):
                        yield from inner.generate(messages, sampling=sampling, think=think, seed=seed, cancel=cancel)
                    fleet._answered(server)
                    return
                except ServerStopped as error:
                    if stop.is_set():  # the stream broke as it was cancelled: no need to go elsewhere
                        yield GenerationDone(raw_output="", think_open=False, stats=GenerationStats(finish="cancelled"))
                        return
                    with fleet._lock:
                        fleet._stopped(server, error.cause)
                finally:
                    server.gate.leave()

    def close(self) -> None:
        """Stop this session's turn in flight and leave its server (never the fleet or other views)."""
        if self._closed.is_set():
            return
        self._closed.set()
        with self._fleet._lock:
            self._server.views.discard(self)
            inner = self._inner
        if inner is not None:
            inner.close()
        self._guard.wait_idle(5.0)


def _down_at_load(error: AwlError) -> bool:
    """A load failure that says the server does not answer now (it may later), not a mistake
    in what awl was told (a refused key, another model, a URL that is not the API)."""
    return isinstance(error, GenerationError) and not isinstance(error, RequestRefused)


def _cause(error: AwlError | None, options: RemoteOptions) -> str:
    """What went wrong at the server of `options`, in a few words (its address left out)."""
    if isinstance(error, ServerStopped):
        return error.cause
    return failure_cause(error.message, options) if error is not None else "no answer"
