"""What stands between a WebSocket client and OpenEnv's `/ws` loop (`awl serve --openenv`).

openenv-core 0.3 reads each message with `receive_text()` and `json.loads`, then
`message.get("type")`: a binary frame, a JSON array or scalar, JSON nested thousands deep or a
number of thousands of digits each raised an error that ended the session with Python's error
text, and a client that left while its step ran left a long chained traceback in the log (the
answer's send failed, then the error's, then the close). Here, as plain ASGI:

- each message is checked before OpenEnv reads it: one that is binary, larger than the
  server's --max-body-bytes, too deep or with too long a number (json_shape.py), not JSON, or
  not a JSON object is answered with an error in OpenEnv's own shape (`{"type": "error",
  "data": {"message", "code"}}`) and the session goes on, waiting for the next message;
- once the client has gone, whatever OpenEnv still sends (the step's answer, its close) is
  dropped, and OpenEnv's next read sees the disconnect: a session that ends this way costs no
  log line. The turn itself ran to its end and is saved.

A text frame that is not UTF-8 never reaches an app: uvicorn closes the connection (1007), as
RFC 6455 requires, and logs it with a traceback of its own; `quiet_protocol_errors` makes that
one line without one.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from agentworld_local.serve.json_shape import shape

#: OpenEnv's error codes (openenv.core.env_server.types.WSErrorCode), spelt here so this layer
#: needs nothing of openenv-core.
INVALID_JSON, VALIDATION_ERROR = "INVALID_JSON", "VALIDATION_ERROR"
#: What every message of OpenEnv's WebSocket protocol looks like.
_SHAPE = 'a JSON object such as {"type": "step", "data": {"action": "ls"}} (reset, step, state, close or mcp)'


class WebSocketGuard:
    """OpenEnv's app with each WebSocket message checked and a gone client's sends dropped."""

    def __init__(self, app: Any, max_bytes: int, *, reset_keys: tuple[str, ...] = ()) -> None:
        """`reset_keys`: what a reset's data may hold (an empty tuple: anything)."""
        self.app, self.max_bytes, self.reset_keys = app, max_bytes, reset_keys

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        socket = _Socket(receive, send, self.max_bytes, self.reset_keys)
        await self.app(scope, socket.receive, socket.send)


class _Socket:
    def __init__(self, receive: Any, send: Any, max_bytes: int, reset_keys: tuple[str, ...]) -> None:
        self._receive, self._send, self.max_bytes, self.reset_keys = receive, send, max_bytes, reset_keys
        self.gone = False  # the client left: nothing more reaches it

    async def receive(self) -> dict[str, Any]:
        while True:
            message = await self._receive()
            if message["type"] == "websocket.disconnect":
                self.gone = True
            if message["type"] != "websocket.receive":
                return message
            problem = self.refusal(message)
            if problem is None:
                return message
            await self.send({"type": "websocket.send", "text": json.dumps(
                {"type": "error", "data": {"message": problem[1], "code": problem[0]}}, ensure_ascii=False)})

    def refusal(self, message: dict[str, Any]) -> tuple[str, str] | None:
        """(OpenEnv's error code, one line) for a message OpenEnv's loop cannot take, else None."""
        text = message.get("text")
        if text is None:
            return INVALID_JSON, f"A binary message is not read here: send {_SHAPE} as a text message."
        if len(text) > self.max_bytes:
            return INVALID_JSON, (f"The message has {len(text)} characters; this server takes {self.max_bytes} "
                                  "(--max-body-bytes). Send a shorter action.")
        too_much = shape(text).problem()
        if too_much:
            return INVALID_JSON, f"Invalid JSON: {too_much}. Send {_SHAPE}."
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as error:
            return INVALID_JSON, f"Invalid JSON: {error}. Send {_SHAPE}."
        if not isinstance(value, dict):
            return VALIDATION_ERROR, f"A message is {_SHAPE}, not {_kind(value)}."
        data = value.get("data")
        if value.get("type") == "reset" and isinstance(data, dict) and self.reset_keys:
            # Checked here: a key such as `self` or `session_id` would meet OpenEnv's own call first.
            unknown = sorted(key for key in data if key not in self.reset_keys)
            if unknown:
                return VALIDATION_ERROR, (f"Unknown reset option `{unknown[0][:80]}`. reset() takes "
                                          f"{', '.join(self.reset_keys)}.")
        return None

    async def send(self, message: dict[str, Any]) -> None:
        if self.gone:
            return  # the client left: OpenEnv's answer and close have nobody to reach
        try:
            await self._send(message)
        except OSError:  # uvicorn's ClientDisconnected: OpenEnv's next read sees the disconnect
            self.gone = True


def _kind(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "true or false", type(None): "null"}.get(
        type(value), "a number")


#: What uvicorn logs, with a traceback, for a text frame that is not UTF-8.
_NOT_UTF8 = "Invalid UTF-8 sequence received from client."


class _OneLine(logging.Filter):
    """A client's malformed frame is the client's mistake: one line in the log, no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() == _NOT_UTF8:
            record.msg = "A WebSocket client sent a text message that is not UTF-8; it was disconnected (1007)."
            record.args = ()
            record.exc_info, record.exc_text = None, None
        return True


def quiet_protocol_errors() -> None:
    """Install the filter on uvicorn's error log (once; uvicorn's logging setup keeps filters)."""
    log = logging.getLogger("uvicorn.error")
    if not any(isinstance(item, _OneLine) for item in log.filters):
        log.addFilter(_OneLine())
