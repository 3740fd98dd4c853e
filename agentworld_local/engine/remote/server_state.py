"""Whether a server answers: the failure that says it stopped (ServerStopped, which a fleet answers
by moving the turn to another server), and what `servers()` reports of one server (ServerTally)."""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import openai

from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.engine.types import ServerStatus
from agentworld_local.errors import AwlError, GenerationError, RequestRefused


class ServerStopped(GenerationError):
    """The server stopped answering: no connection after the retries, 5xx after the retries, no
    answer within --timeout, a stream that broke. Not the request's fault (RequestRefused is):
    a fleet (fleet.py) sends the turn to another server. `cause`: what happened, in a few words."""

    def __init__(self, message: str, hint: str | None = None, *, cause: str = "") -> None:
        super().__init__(message, hint)
        self.cause = cause or message


def stopped_or(described: AwlError, error: Exception, options: RemoteOptions) -> AwlError:
    """`described` (client.describe_error's), as ServerStopped where the server stopped answering:
    no connection or no answer in time (after the client's retries), or a 5xx after them. A 429
    (busy) or a refusal of the request stays as it is."""
    stopped = isinstance(error, openai.APIConnectionError) or (
        isinstance(error, openai.APIStatusError) and error.status_code >= 500)
    if not stopped or isinstance(described, RequestRefused):
        return described
    return ServerStopped(described.message, described.hint, cause=failure_cause(described.message, options))


def failure_cause(message: str, options: RemoteOptions) -> str:
    """A failure's message without the server's address: what happened, in a few words, for a
    notice that names the server itself ("failed with HTTP 503 after 3 retries (...)")."""
    for start, said in ((f"The server at {options.endpoint} ", ""),
                        (f"Cannot reach the server at {options.endpoint} ", "cannot be reached ")):
        if message.startswith(start):
            return (said + message[len(start):]).rstrip(".")
    return message.rstrip(".")


class ServerTally:
    """What `servers()` says of one server, shared by a backend and its views: the sessions
    (views neither closed nor dropped), turns running, failures and the last one's cause."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._views: weakref.WeakSet[Any] = weakref.WeakSet()
        self._running = 0
        self._failures = 0
        self._error: str | None = None  # the last failure's cause, until an answer comes again

    def opened(self, view: Any) -> None:
        with self._lock:
            self._views.add(view)

    def closed(self, view: Any) -> None:
        with self._lock:
            self._views.discard(view)

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """One turn running; a ServerStopped is counted, an answer clears the last one."""
        with self._lock:
            self._running += 1
        stopped: ServerStopped | None = None
        answered = False
        try:
            yield
            answered = True
        except ServerStopped as error:
            stopped = error
            raise
        finally:
            with self._lock:
                self._running -= 1
                if stopped is not None:
                    self._failures += 1
                    self._error = stopped.cause
                elif answered:
                    self._error = None

    def status(self, endpoint: str, parallel: int) -> ServerStatus:
        with self._lock:
            return ServerStatus(endpoint=endpoint, up=self._error is None, sessions=len(self._views),
                                running=self._running, parallel=parallel, failures=self._failures, error=self._error)
