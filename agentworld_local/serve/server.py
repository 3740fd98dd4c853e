"""Where `awl serve` listens: the address rules, the socket, uvicorn."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import os
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentworld_local.errors import InputError

if TYPE_CHECKING:
    from agentworld_local.session.runner.outcome import Sent


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


#: The shortest token a server on an address other than loopback takes.
MIN_TOKEN_CHARS = 16


def check_exposure(host: str, token: str | None, token_env: str) -> None:
    """Refused before anything loads: a token that is set but empty or blank (on any address);
    any address but loopback without a token, or with one shorter than MIN_TOKEN_CHARS."""
    given = token if token is not None else os.environ.get(token_env)  # the CLI passes an empty one as None
    advice = f"e.g. `export {token_env}=$(openssl rand -hex 32)`"
    if given is not None and not given.strip():
        raise InputError(f"${token_env} is set but empty: it would protect nothing.",
                         f"Set it to a long random secret ({advice}), or unset it to serve on 127.0.0.1 only.")
    if not is_loopback(host) and not given:
        raise InputError(f"Serving on {host} needs a token: ${token_env} is not set.",
                         f"Set {token_env} to a long random secret ({advice}), or serve on 127.0.0.1.")
    if not is_loopback(host) and given is not None and len(given.strip()) < MIN_TOKEN_CHARS:
        raise InputError(f"Serving on {host} needs a token of at least {MIN_TOKEN_CHARS} characters: "
                         f"${token_env} has {len(given.strip())}.", f"Set it to a long random secret ({advice}).")


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, made before the model loads: a taken port is one line, not a traceback later."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        raise InputError(f"Cannot serve on {host}: no such address.", "Give an address of this machine with --host.") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            raise InputError(f"Port {port} on {host} is taken.", "Choose another with --port, or stop what uses it.") from None
        raise InputError(f"Cannot serve on {host}:{port} ({error.strerror}).", "Choose another --host or --port.") from None
    return sock


#: How long uvicorn waits for requests in flight once a shutdown begins.
DRAIN_S = 10


def run(app: Any, sock: socket.socket, *, log_level: str = "warning",
        on_exit: Callable[[], Sent | None] | None = None) -> None:
    """Serve `app` on `sock` until SIGINT/SIGTERM; the app's shutdown closes every session (saved).
    `on_exit` runs when the shutdown begins, before uvicorn drains the requests in flight: the
    runner stops its turns there, so a client mid-turn gets its 503 within the drain instead of
    a request uvicorn kills. What it returns (the runner's closing) is awaited, within the
    drain, before uvicorn closes any connection: uvicorn closes a WebSocket at once (1012), and
    an episode mid-turn must first get its "shutting down" message."""
    import uvicorn

    from agentworld_local.serve.bridge import ended

    class Server(uvicorn.Server):
        closing: Sent | None = None

        def handle_exit(self, sig: int, frame: Any) -> None:
            if on_exit is not None and not self.should_exit:
                self.closing = on_exit()  # quick: it cancels and returns; the app's shutdown waits for the rest
            super().handle_exit(sig, frame)

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            if self.closing is not None:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(DRAIN_S):
                        await ended(self.closing)
                await asyncio.sleep(0)  # the faces' answers to the turns it stopped go out first
            await super().shutdown(sockets)

    config = uvicorn.Config(app, log_level=log_level, lifespan="on", timeout_graceful_shutdown=DRAIN_S)
    Server(config).run(sockets=[sock])
