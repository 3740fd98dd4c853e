"""Where `awl serve` listens: the address rules, the socket, uvicorn."""

from __future__ import annotations

import errno
import ipaddress
import socket
from typing import Any

from agentworld_local.errors import InputError


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, token: str | None, token_env: str) -> None:
    """Any address but loopback needs a token: refused before anything loads."""
    if not is_loopback(host) and not token:
        raise InputError(f"Serving on {host} needs a token: ${token_env} is not set.",
                         f"Set {token_env} to a long random secret (e.g. `export {token_env}=$(openssl rand -hex 32)`), "
                         "or serve on 127.0.0.1.")


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


def run(app: Any, sock: socket.socket, *, log_level: str = "warning") -> None:
    """Serve `app` on `sock` until SIGINT/SIGTERM; the app's shutdown closes every session (saved)."""
    import uvicorn

    config = uvicorn.Config(app, log_level=log_level, lifespan="on", timeout_graceful_shutdown=10)
    uvicorn.Server(config).run(sockets=[sock])
