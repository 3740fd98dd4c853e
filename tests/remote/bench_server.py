"""A recording loopback server for the bench tests: each answer is what the test says the
server's message holds, field by field (`reasoning_content`, `content`), or an HTTP error.

FakeOpenAI (fake_openai.py) derives the fields from one raw answer and trims the content's
leading line breaks; the bench tests need the fields exactly as a real server returns them
(vLLM's reasoning parser keeps the `\\n\\n` after `</think>` in the content; a server without
one sends the thinking in the content), and an error for one row only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.remote.fake_openai import FakeOpenAI, Reply, _cut


@dataclass(frozen=True)
class Canned:
    content: str = ""
    #: Sent first, in `reasoning_content` (a server with a reasoning parser); None: no such field.
    reasoning: str | None = None
    #: Answer with this HTTP status instead (the message says which).
    status: int | None = None


@dataclass
class CannedServer(FakeOpenAI):
    #: The request body -> what to answer.
    canned: Callable[[dict[str, Any]], Canned] = field(default=lambda body: Canned("ok"))

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        answer = self.canned(body)
        if answer.status is not None:
            return self._json(handler, answer.status, {"error": {"message": f"canned failure {answer.status}", "code": answer.status}})
        pieces = [("reasoning_content", p) for p in _cut(answer.reasoning or "", (4, 1, 6))]
        pieces += [("content", p) for p in _cut(answer.content, (3, 5, 1, 2))]
        if body.get("stream"):
            return self._stream(handler, body, Reply(""), pieces, "stop")
        message: dict[str, Any] = {"role": "assistant", "content": answer.content}
        if answer.reasoning is not None:
            message["reasoning_content"] = answer.reasoning
        self._json(handler, 200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                  "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                                  "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
