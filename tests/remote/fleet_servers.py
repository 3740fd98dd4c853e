"""Loopback servers for the fleet's tests and bench (tests/remote/test_fleet.py, bench/fleet_scale.py):
a FakeOpenAI that can be killed while it streams (its port stops listening and every open
connection is cut, as a crashed server's), started again on the same port, made to hold its
answers part-way until a test says, and that answers 429 beyond a number of places."""

from __future__ import annotations

import socket
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.remote import fake_openai
from tests.remote.fake_openai import FakeOpenAI


class _Listener(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 2048  # thousands of clients connect at once in the bench

    def serve_forever(self, poll_interval: float = 0.05) -> None:  # a kill stops it at once
        super().serve_forever(poll_interval)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # a connection a kill cut is no news
            super().handle_error(request, client_address)


class _Held:
    """A handler's writer that holds the answer after `after` writes until the server lets it go
    (headers are one write, each piece one more)."""

    def __init__(self, inner: Any, after: int, server: FleetServer) -> None:
        self._inner, self._after, self._server, self._writes = inner, after, server, 0

    def flush(self) -> None:
        self._inner.flush()

    def write(self, data: bytes) -> int:
        if self._writes == self._after:
            self._server._hold()
        self._writes += 1
        return self._inner.write(data)

    def __getattr__(self, name: str) -> Any:  # closed, close...: the socket writer's
        return getattr(self._inner, name)


@dataclass
class FleetServer(FakeOpenAI):
    #: Answer 429 (busy) to a chat request beyond this many at once (None: no bound); `refused` counts them.
    places: int | None = None
    #: Hold each answer after this many writes until `let_go()` or `kill()` (None: never hold).
    hold_after: int | None = None
    refused: int = 0
    held: int = 0
    #: Set once `held_wanted` answers are held.
    held_wanted: int = 1
    all_held: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        fake_openai.ThreadingHTTPServer = _Listener  # the fake's own listener, with the bench's backlog
        try:
            super().__post_init__()
        finally:
            fake_openai.ThreadingHTTPServer = ThreadingHTTPServer
        self._handler = self.server.RequestHandlerClass
        self.port = self.server.server_address[1]
        self._connections: set[socket.socket] = set()
        self._released = threading.Event()
        self._in = 0
        self.alive = True

    def start(self) -> None:
        """Listen again on the same port (after a kill)."""
        self._released.clear()
        self.server = _Listener(("127.0.0.1", self.port), self._handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.alive = True

    def kill(self) -> None:
        """As a crash: the port stops listening and every open connection is cut now."""
        if not self.alive:
            return
        self.alive = False
        self.server.shutdown()
        self.server.server_close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._released.set()

    def close(self) -> None:
        self._held.set()
        self.kill()

    def let_go(self) -> None:
        self._released.set()

    def _hold(self) -> None:
        with self._lock:
            self.held += 1
            if self.held >= self.held_wanted:
                self.all_held.set()
        self._released.wait()
        if not self.alive:
            raise BrokenPipeError("the server was killed")

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        with self._lock:
            busy = self.places is not None and self._in >= self.places
            if busy:
                self.refused += 1
            else:
                self._in += 1
                handler._place_freed = False  # type: ignore[attr-defined]  # per request: a connection may carry several
                self._connections.add(handler.connection)
        if busy:
            return self._json(handler, 429, {"error": {"message": "all places are busy", "type": "busy"}},
                              extra={"retry-after-ms": "50"})
        if self.hold_after is not None:
            handler.wfile = _Held(handler.wfile, self.hold_after, self)  # type: ignore[assignment]
        try:
            super()._answer(handler, body)
        finally:
            self._finishing(handler)
            with self._lock:
                self._connections.discard(handler.connection)

    def _finishing(self, handler: BaseHTTPRequestHandler) -> None:
        """Its place is free before the finish event is written, as the fake's count (a 429 from
        a client's own finished request was seen in CI)."""
        super()._finishing(handler)
        with self._lock:
            if handler._place_freed:  # type: ignore[attr-defined]
                return
            handler._place_freed = True  # type: ignore[attr-defined]
            self._in -= 1

    def actions(self) -> list[str]:
        """The last user message of each chat request it took (what each turn sent), in order."""
        return [request["messages"][-1]["content"] for request in self.requests if request.get("messages")]
