"""JSON-RPC over stdio, one message a line, for `awl mcp` (serve/mcp.py runs the MCP SDK on it).

The SDK's stdio transport drops a line it cannot read without a word: a parse error, a
batch, a call holding a lone surrogate (`"\\ud800"`, no Unicode text). A client waiting on
that call's id then hangs, and a line nested thousands deep ended the process (a
RecursionError). Here each line is checked before the SDK sees it, without recursion, and one
it would drop is answered with a JSON-RPC error: -32700 (parse error, id null) or -32600
(invalid request, with the request's id where it has one; also one nested too deep or holding
a number too long: json_shape.py). Notifications get no answer, as JSON-RPC says. What the
SDK writes and these answers share one lock: lines never interleave.

Like the SDK's own transport, stdin (fd 0) and stdout (fd 1) are pointed at the null device
and at stderr while serving, so nothing else in the process can read or write the wire.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.to_thread

from agentworld_local.serve.json_shape import shape

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
_SURROGATE = re.compile("[\ud800-\udfff]")


class Wire:
    """The client's end: lines read from `read_fd` (checked), lines written to `write_fd`."""

    def __init__(self, read_fd: int, write_fd: int, validate: Callable[[str], Any]) -> None:
        self._reader = os.fdopen(read_fd, "rb", closefd=False)
        self._write_fd = write_fd
        self._validate = validate
        self._lock = threading.Lock()

    # -- what the SDK reads: `async for line in stdin` ----------------------------------

    def __aiter__(self) -> Wire:
        return self

    async def __anext__(self) -> str:
        while True:
            data = await anyio.to_thread.run_sync(self._reader.readline, abandon_on_cancel=True)
            if not data:
                raise StopAsyncIteration
            line = data.decode("utf-8", errors="replace")  # as the SDK decodes
            reply = self.check(line)
            if reply is None:
                return line
            if reply:
                await self.write(reply + "\n")

    def check(self, line: str) -> str | None:
        """None: a line for the SDK; "": one to drop unanswered (blank, a notification);
        else the error reply to send."""
        if not line.strip():
            return ""
        refused = shape(line).problem()  # counted without recursion, before json's recursive parser
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as problem:  # json's C parser refuses deep nesting with the latter
            return _error(None, PARSE_ERROR, f"Parse error: {refused or problem}")
        if refused:
            if _notification(message):
                return ""
            return _error(_id(message), INVALID_REQUEST, f"Invalid Request: {refused}")
        if isinstance(message, list):
            replies = [_error(_id(item), INVALID_REQUEST, "Invalid Request: batches are not supported by MCP; "
                              "send each request on a line of its own") for item in message or [None]
                       if not _notification(item)]
            return f"[{','.join(replies)}]" if len(replies) > 1 else (replies[0] if replies else "")
        if _has_lone_surrogate(message):
            if _notification(message):
                return ""
            return _error(_id(message), INVALID_REQUEST,
                          "Invalid Request: it holds a lone surrogate (\\ud800 to \\udfff alone), which is not Unicode text")
        try:
            self._validate(line)
        except Exception as problem:  # noqa: BLE001 - the SDK's validation error, whatever its type
            if _notification(message):
                return ""
            shown = " ".join(str(problem).split())[:300]
            return _error(_id(message), INVALID_REQUEST, f"Invalid Request: not a JSON-RPC 2.0 message ({shown})")
        return None

    # -- what the SDK writes: `await stdout.write(json + "\n")`, `await stdout.flush()` ------

    async def write(self, text: str) -> None:
        await anyio.to_thread.run_sync(self._write, text)

    async def flush(self) -> None:
        pass  # every write is whole, unbuffered

    def _write(self, text: str) -> None:
        data = text.encode("utf-8", errors="replace")
        with self._lock:
            view = memoryview(data)
            while view:
                view = view[os.write(self._write_fd, view):]


@contextmanager
def claimed_stdio(validate: Callable[[str], Any]) -> Iterator[Wire]:
    """The process's stdin and stdout as a Wire; fds 0 and 1 point elsewhere meanwhile."""
    sys.stdout.flush()
    read_fd, write_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        yield Wire(read_fd, write_fd, validate)
    finally:
        sys.stdout.flush()
        os.dup2(read_fd, 0)
        os.dup2(write_fd, 1)
        os.close(read_fd)
        os.close(write_fd)


def _error(request_id: Any, code: int, message: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def _id(message: Any) -> str | int | None:
    """The request's id when it is one JSON-RPC allows (a string or an integer), else null."""
    value = message.get("id") if isinstance(message, dict) else None
    if isinstance(value, str) and not _has_lone_surrogate(value):
        return value
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _notification(message: Any) -> bool:
    return isinstance(message, dict) and "method" in message and "id" not in message


def _has_lone_surrogate(value: Any) -> bool:
    """Whether a string anywhere in `value` (keys too) holds a lone surrogate; a walk with a
    stack of its own, never recursion."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item) is not None:
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False
