"""A streamed answer's pieces as the server's own JSON, read without the client's typed models.

The official client turns every streamed chunk into its typed model (pydantic's `construct`
over ChatCompletionChunk, its choices, delta and usage): about 130 microseconds a chunk on a
2-core machine, where a server sends one chunk per token. That was half of what `awl serve`
spent on a turn, and with 16 sessions streaming at once in one process (one GIL) it was what
they waited on. `Client` is the official client with one change: a chat-completion chunk that
is a JSON object is read as `Chunk`, which gives the few fields awl reads (remote/backend.py,
remote/usage.py) under the names the typed model gives them. Everything else (requests, retries,
errors, an `error` event in the stream, whole responses) is the client's own. `stream_chat`
sends a streamed chat request without the client's walk over its typed parameters, and its
stream keeps the connection for the next request (DrainingStream).
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any, TypeVar

import openai
from openai._base_client import make_request_options
from openai.types.chat import ChatCompletion, ChatCompletionChunk


class Delta:
    """`choices[i].delta`: its `content`; `model_extra` holds the rest (`reasoning_content`)."""

    __slots__ = ("content", "model_extra")

    def __init__(self, data: dict[str, Any]) -> None:
        self.content = data.get("content")
        self.model_extra = data


class Choice:
    __slots__ = ("delta", "finish_reason")

    def __init__(self, data: dict[str, Any]) -> None:
        delta = data.get("delta")
        self.delta = Delta(delta if isinstance(delta, dict) else {})
        self.finish_reason = data.get("finish_reason")


class Chunk:
    """One streamed chunk: `choices`, `usage` (a dict, as remote/usage.py reads it) and
    `model_extra` (llama-server's `timings`)."""

    __slots__ = ("choices", "usage", "model_extra")

    def __init__(self, data: dict[str, Any]) -> None:
        choices = data.get("choices")
        self.choices = [Choice(c) for c in choices if isinstance(c, dict)] if isinstance(choices, list) else []
        self.usage = data.get("usage")
        self.model_extra = data


_T = TypeVar("_T")
#: How the client's own `create` asks for the key's header (clients before `security` send it always).
_AUTH = {"security": {"bearer_auth": True}} if "security" in inspect.signature(make_request_options).parameters else {}


class DrainingStream(openai.Stream[_T]):
    """The client's stream, which at `[DONE]` reads the last bytes of the response (the end of
    its body) before the client closes it, as the client's async stream does: over HTTP/1.1 the
    connection then goes back to the pool for the next request. The sync stream closes the
    response as soon as it reads `[DONE]`, before its body has ended, which drops the
    connection: every turn connected anew."""

    def _iter_events(self) -> Any:
        for event in super()._iter_events():
            if event.data.startswith("[DONE]") and self.response.http_version == "HTTP/1.1":
                with contextlib.suppress(Exception):  # a broken end costs only the connection
                    for _ in self.response.stream:
                        pass
            yield event


class Client(openai.OpenAI):
    """The official client, whose streamed chat-completion chunks are `Chunk`s."""

    def stream_chat(self, request: dict[str, Any]) -> openai.Stream[Any]:
        """`chat.completions.create(**request)` for a streamed request, without the client's walk
        over the request's typed parameters (`maybe_transform`, over every message of the
        conversation: a quarter of what `awl serve` spent on a turn). awl's request holds only
        JSON values, which that walk leaves as they are; the request, its retries, errors and
        stream are the client's own."""
        body = {name: value for name, value in request.items() if name != "extra_body"}
        return self.post("/chat/completions", body=body, cast_to=ChatCompletion, stream=True,
                         stream_cls=DrainingStream[ChatCompletionChunk],
                         options=make_request_options(extra_body=request.get("extra_body"), **_AUTH))

    def _process_response_data(self, **options: Any) -> Any:
        # The client's own hook from a response's JSON to its typed model; a client version that
        # calls it otherwise, or anything but a chunk object, takes the client's own way.
        data = options.get("data")
        if options.get("cast_to") is ChatCompletionChunk and isinstance(data, dict):
            return Chunk(data)
        return super()._process_response_data(**options)
