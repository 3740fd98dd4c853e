"""What one server takes, and the HTTP error every refusal becomes (`{"error", "hint"}`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServeLimits:
    """`awl serve`'s limits (each has a command-line option)."""

    #: A request body larger than this is refused (413) before it is read whole.
    max_body_bytes: int = 1024 * 1024
    #: An action longer than this is refused (413); a long program fits, a pasted disk image does not.
    max_action_chars: int = 64 * 1024
    #: Sessions open at once (new, resumed or forked); the next one is refused (429) until one closes.
    max_sessions: int = 32
    #: A session nobody used for this long is closed (every turn saved); resume it to go on.
    idle_s: float = 30 * 60
    #: Turns on a session's branch; the next step is refused (409): fork it or start a new one.
    max_turns: int = 1000
    #: Tokens one turn may generate, thinking and answer together (None: no ceiling): a larger
    #: `max_tokens` is refused (400); thinking gets what is left (`think: full` becomes that
    #: budget), so no client holds a slot of the model for a whole context.
    max_tokens_per_turn: int | None = None
    #: Turns that may wait beyond the model's `parallel` (None: no bound); one more is
    #: refused with 503 and `Retry-After` (never 502) instead of waiting.
    max_waiting: int | None = None
    #: Host names the server answers to besides its own address, `localhost`, `127.0.0.1` and
    #: `[::1]` (a name of the machine, a proxy's): any other Host is refused (421).
    allowed_hosts: tuple[str, ...] = ()


class HttpProblem(Exception):
    """A request the server refuses: its status, what went wrong and what to do next."""

    def __init__(self, status: int, message: str, hint: str = "", *, headers: dict[str, str] | None = None,
                 **extra: object) -> None:
        super().__init__(message)
        self.status, self.message, self.hint, self.extra = status, message, hint, extra
        self.headers = headers or {}

    def body(self) -> dict[str, object]:
        return {"error": self.message, "hint": self.hint, **self.extra}


#: Seconds a client is told to wait before it tries a refused turn again (503).
RETRY_AFTER_S = 1


def busy(message: str, hint: str) -> HttpProblem:
    """The model cannot take the turn now (a full wait queue): 503 with `Retry-After`."""
    return HttpProblem(503, message, hint, headers={"Retry-After": str(RETRY_AFTER_S)})
