"""What stands in front of `awl serve`'s routes (plain ASGI layers): the Host and Origin a
request may come with, the body's size. (The token is a FastAPI dependency: serve/app.py.)

A browser page on another site can reach a server on 127.0.0.1 in two ways: a DNS name of
its own that resolves to 127.0.0.1 (DNS rebinding: its requests carry `Host: evil.example`),
or a request from its page (which carries its `Origin`). The server answers a Host that is not
its own address, `localhost`, `127.0.0.1`, `[::1]` or one the user allowed with 421, and an
Origin that is not the server's own with 403, before the app reads anything (the MCP SDK
refuses such requests the same way). A request without Origin (curl, an SDK) is not a
browser's and goes on.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from agentworld_local.serve.errors import send_problem

#: The names every server answers to, whatever its address.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def host_name(value: str) -> str:
    """The host of a `Host` header or an origin's netloc, without its port or brackets, lowercased."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class HostOriginGuard:
    """421 for a Host that is not this server's, 403 for a browser Origin that is not its own."""

    def __init__(self, app: Any, allowed_hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed = {host_name(host) for host in allowed_hosts if host.strip()}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        origin = headers.get(b"origin")
        if not self._own_host(host_name(host), scope):
            status, message, hint = 421, f"This server does not answer to the host `{host or '(none)'}`.", (
                "Send the request to the server's address (e.g. http://127.0.0.1:PORT); a name of "
                "your own needs the server's --allow-host NAME.")
        elif origin is not None and not self._own_origin(origin.decode("latin-1"), host):
            # Browsers apply no CORS to WebSockets: the Origin check is all that keeps a page out.
            status, message, hint = 403, f"This server takes no requests from pages of {origin.decode('latin-1')}.", (
                "Call the API from a program (no Origin header), or from the server's own /docs.")
        else:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})  # refused before accept: 403
        else:
            await send_problem(send, status, message, hint)

    def _own_host(self, name: str, scope: dict[str, Any]) -> bool:
        server = scope.get("server") or ()
        own = host_name(str(server[0])) if server else None  # the address the connection came in on
        return bool(name) and (name in LOOPBACK_NAMES or name == own or name in self.allowed)

    def _own_origin(self, origin: str, host: str) -> bool:
        parts = urlsplit(origin.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False  # `null` (a sandboxed page, a file) and anything else
        return parts.netloc.lower() == host.strip().lower() or host_name(parts.netloc) in self.allowed


class BodyLimit:
    """Refuse a request body over `limit` bytes (413): a declared Content-Length at once, a
    chunked one as it streams in, before the app reads any of it."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self._refuse(send)
            return
        read = await read_body(receive, self.limit)
        if read is None:
            await self._refuse(send)
            return
        await self.app(scope, replayed(read[1], receive), send)

    async def _refuse(self, send: Any) -> None:
        await send_problem(send, 413, f"The request is larger than this server takes ({self.limit} bytes).",
                           "Send less (the server's --max-body-bytes).")


async def read_body(receive: Any, limit: int | None = None) -> tuple[bytes, dict[str, Any]] | None:
    """The request's whole body, and the message that gives it again to the app behind
    (`replayed`): one holding the whole body, or, when the client went away meanwhile, the
    message that says so (the app sees it). None once the body passes `limit` bytes."""
    body, more = bytearray(), True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return bytes(body), message
        body += message.get("body", b"")
        more = message.get("more_body", False)
        if limit is not None and len(body) > limit:
            return None
    return bytes(body), {"type": "http.request", "body": bytes(body), "more_body": False}


def replayed(first: dict[str, Any], receive: Any) -> Any:
    """`receive` that gives `first` (a body read already) before anything else."""
    given = False

    async def replay() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return first
        return await receive()

    return replay
