"""`awl serve`'s one error contract: every answer that is not 2xx is `{"error": ..., "hint": ...}`.

The app's own refusals (HttpProblem, AwlError), FastAPI's (a body it cannot parse or
validate) and Starlette's (an unknown route, a wrong method) all become that shape, and so do
the refusals of the ASGI layers in front of the app (a body over the limit, a foreign Host or
Origin: serve/security.py), which answer before the app reads anything. A 5xx is the
server's own failure; what a client sent wrong is a 4xx. `responses()` lists each status a
route can answer in the OpenAPI document, with the error model.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Match

from agentworld_local.errors import AwlError
from agentworld_local.serve.limits import HttpProblem


class JsonAnswer(JSONResponse):
    """Every JSON answer: one that holds a lone surrogate (a `\\ud800` escape in an action that a
    domain's parser read, a client's text) is written with ASCII escapes instead, as the session
    file writes it (trajectory/jsonl.py), so a saved turn is never answered with a server error."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def safe_json(value: Any) -> str:
    """JSON text of `value` that always encodes as UTF-8 (a server-sent event's data)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, default=str)
    return text


class Problem(BaseModel):
    """Every answer that is not 2xx."""

    model_config = ConfigDict(extra="allow")
    error: str = Field(description="What went wrong, in one line")
    hint: str = Field(description="What to do next")
    invalid_action: bool | None = Field(None, description="True for an action the domain cannot read (422)")


#: What each status means in the OpenAPI document.
_MEANING = {
    400: "A body that cannot be parsed (not JSON, not UTF-8, too deep), or a value the server cannot use",
    401: "The server's token is missing or wrong",
    403: "A browser page of another origin",
    404: "No such session in the server's folder, or no such route",
    405: "The route does not take this method",
    409: "Not in the session's state now (not open, busy, at its limit, cancelled)",
    413: "The body or the action is larger than the server takes",
    421: "A Host that is not this server's (DNS rebinding)",
    422: "A body that does not match the schema, an action the domain cannot read, or a session file the "
         "server cannot read",
    429: "The server has its most sessions open",
    500: "The server's own failure",
    502: "The world model failed",
    503: "The server is shutting down, or its wait queue is full (Retry-After)",
}


def responses(*statuses: int, json_route: bool = True) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route: each status it can answer, with the error model. A route
    whose own answers are not JSON (a stream, a file) names the model's JSON itself (FastAPI
    would give the route's media type); the JSON routes put the model in the document."""
    if json_route:
        return {status: {"model": Problem, "description": _MEANING[status]} for status in sorted(set(statuses))}
    content = {"application/json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    return {status: {"description": _MEANING[status], "content": content} for status in sorted(set(statuses))}


async def send_problem(send: Any, status: int, error: str, hint: str, headers: dict[str, str] | None = None) -> None:
    """The error contract from an ASGI layer in front of the app (it has not read the request)."""
    body = json.dumps({"error": error, "hint": hint}, ensure_ascii=False).encode("utf-8")
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
           *((name.lower().encode(), value.encode()) for name, value in (headers or {}).items())]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


#: A command-line option named in a core hint, as an HTTP client sends it instead.
_FLAG = re.compile(r"`--([a-z][a-z-]*)(?: ([^`]*))?`")
_FIELDS = {"think": "think", "domain": "domain", "scenario": "scenario", "seed": "seed", "task": "task",
           "temperature": "temperature", "max-tokens": "max_tokens", "initial-state": "initial_state",
           "control": "controls", "shared-world": "shared_world"}


def for_http(text: str) -> str:
    """A hint written for the command line, written for an HTTP client: `--think off` becomes
    `think: "off"` (a field of the body); `awl scenarios list` becomes GET /scenarios."""
    def field(match: re.Match[str]) -> str:
        name = _FIELDS.get(match.group(1))
        if name is None:
            return match.group(0)
        value = (match.group(2) or "").strip().strip('"')
        if not value:
            return f"`{name}`"
        shown = value if value.lstrip("-").isdigit() else json.dumps(value)
        return f'`{name}: {"[" + shown + "]" if name == "controls" else shown}`'

    text = _FLAG.sub(field, text)
    text = re.sub(r"`awl scenarios list[^`]*`", "GET /scenarios", text)
    text = re.sub(r"(?<![`\w])--control\b", "`controls`", text)
    return re.sub(r"(?<![`\w])--(domain|think|scenario)\b", r"`\1`", text)


def _methods(request: Request) -> list[str]:
    """Every method of the routes at this path (Starlette's 405 names the first route's only)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        if route.matches(request.scope)[0] is not Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)


def refusal(error: HttpProblem | AwlError) -> JsonAnswer:
    """The answer to the app's own refusals: an HttpProblem as it says, an AwlError a 400."""
    if isinstance(error, HttpProblem):
        return JsonAnswer(error.body(), status_code=error.status, headers=error.headers)
    return JsonAnswer({"error": for_http(error.message), "hint": for_http(error.hint or "")}, status_code=400)


def install(app: Any, validation_error: type[Exception]) -> None:
    """The handlers that turn every refusal and failure into the error contract, on a FastAPI
    app (`validation_error`: its RequestValidationError; only serve/app imports FastAPI)."""

    @app.exception_handler(HttpProblem)
    @app.exception_handler(AwlError)
    async def refused(request: Request, error: HttpProblem | AwlError) -> JsonAnswer:
        return refusal(error)

    @app.exception_handler(validation_error)
    async def malformed(request: Request, error: Any) -> JsonAnswer:
        first = error.errors()[0] if error.errors() else {}
        if first.get("type") == "json_invalid":
            reason = (first.get("ctx") or {}).get("error", "invalid JSON")
            return JsonAnswer({"error": f"The body is not JSON: {reason}.",
                                 "hint": "Send a JSON object with `content-type: application/json`; "
                                         "GET /docs describes what each endpoint takes."}, status_code=400)
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        return JsonAnswer({"error": f"Bad request: {where or 'body'}: {first.get('msg', 'invalid')}.",
                             "hint": "GET /docs describes what each endpoint takes."}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JsonAnswer:
        status, headers = error.status_code, dict(error.headers or {})
        if status == 404:
            body = {"error": f"No route {request.url.path} on this server.", "hint": "GET /docs lists the routes."}
        elif status == 405:
            allowed = ", ".join(_methods(request)) or "another method"
            headers = {**{k: v for k, v in headers.items() if k.lower() != "allow"}, "Allow": allowed}
            body = {"error": f"{request.method} is not a method of {request.url.path}.",
                    "hint": f"Use {allowed}; GET /docs lists the routes."}
        elif status == 400:  # FastAPI: a body it could not parse (not UTF-8, nested too deep, a huge number)
            body = {"error": "The body cannot be parsed: it is not UTF-8 JSON the server can read "
                             "(too deeply nested, or a number too long).",
                    "hint": "Send a JSON object in UTF-8, as GET /docs describes."}
        else:
            body = {"error": str(error.detail), "hint": "GET /docs describes what each endpoint takes."}
        return JsonAnswer(body, status_code=status, headers=headers)

    @app.exception_handler(Exception)
    async def failed(request: Request, error: Exception) -> JsonAnswer:
        return JsonAnswer({"error": f"The server failed: {type(error).__name__}.",
                             "hint": "This is the server's own failure; its log says more. Try again."},
                            status_code=500)
