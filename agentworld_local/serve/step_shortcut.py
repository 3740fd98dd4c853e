"""The step route's short way past FastAPI's request machinery.

`POST /sessions/{id}/step` is what RL clients send thousands of times a minute. FastAPI's way
through a request (its exception and exit-stack layers, routing, dependency solving, body
validation, response serialization) cost about a third of `awl serve`'s CPU per turn with
thousands of episodes at once (bench/fleet_scale.py, py-spy), and one `awl serve` is one
process: that CPU bounds the turns it completes a second.

This ASGI layer sits inside the Host/Origin guard and the body limit (serve/security.py) and
answers a step itself only when the request is plainly well formed: the server's token right
(when it has one), a `content-type: application/json` body that StepRequest takes, and
`cancel_on_disconnect` false. It runs the route's own step and answers refusals with the
route's error contract (errors.refusal); a failure of the server's own goes up to the same
500 handler. Every other request, this route's malformed ones included, goes on to FastAPI
unchanged (its body replayed), so each error answer is FastAPI's as before and /docs still
describes the route.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from agentworld_local.errors import AwlError
from agentworld_local.serve.errors import JsonAnswer, refusal
from agentworld_local.serve.limits import HttpProblem
from agentworld_local.serve.security import read_body, replayed

#: The route's path; `{sid}` as Starlette matches a path parameter (anything but a slash).
_STEP_PATH = re.compile(r"/sessions/([^/]+)/step")

Step = Callable[[str, Any], Awaitable[dict[str, Any]]]


class StepShortcut:
    """`step(sid, body)`: the route's step; `body_model`: its body (StepRequest); `token`: the server's."""

    def __init__(self, app: Any, *, step: Step, body_model: type[Any], token: str | None) -> None:
        self.app, self._step, self._model = app, step, body_model
        self._token = token.encode("utf-8") if token is not None else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        matched = self._step_path(scope)
        if matched is None:
            await self.app(scope, receive, send)
            return
        read = await read_body(receive)
        assert read is not None  # no limit here: the body limit in front has read it whole already
        body, first = read
        request = self._plain_step(scope, body) if first["type"] == "http.request" else None
        if request is None:
            await self.app(scope, replayed(first, receive), send)
            return
        try:
            answer = JsonAnswer(await self._step(matched, request))
        except (HttpProblem, AwlError) as error:
            answer = refusal(error)
        await answer(scope, receive, send)

    @staticmethod
    def _step_path(scope: dict[str, Any]) -> str | None:
        if scope["type"] != "http" or scope.get("method") != "POST" or scope.get("root_path"):
            return None
        matched = _STEP_PATH.fullmatch(scope.get("path", ""))
        return matched.group(1) if matched else None

    def _plain_step(self, scope: dict[str, Any], body: bytes) -> Any:
        """The parsed body of a plainly well-formed step, else None (FastAPI answers it)."""
        headers = _first_headers(scope)
        if headers.get(b"content-type", b"").split(b";")[0].strip().lower() != b"application/json":
            return None
        if self._token is not None and not self._authorized(headers.get(b"authorization")):
            return None
        try:
            request = self._model.model_validate(json.loads(body))
        except Exception:  # noqa: BLE001 - not JSON, not the schema, too deep: FastAPI says which
            return None
        return None if request.cancel_on_disconnect else request

    def _authorized(self, header: bytes | None) -> bool:
        """As the route's bearer dependency reads the header (Starlette decodes it as Latin-1)."""
        if header is None:
            return False
        scheme, _, credentials = header.decode("latin-1").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(credentials.encode("utf-8"), self._token or b"")


def _first_headers(scope: dict[str, Any]) -> dict[bytes, bytes]:
    """Each header's first value, as Starlette's `Headers.get` gives it."""
    headers: dict[bytes, bytes] = {}
    for name, value in scope.get("headers") or ():
        headers.setdefault(name.lower(), value)
    return headers
