"""A small OpenAI-compatible server on 127.0.0.1 whose answers a test writes.

It streams realistic raw answers (the random-weight fixtures never write `<think>` or
observation tags) the way real servers hand them over: thinking in `reasoning_content`
(a server with a reasoning parser) or inside the text after a prompt that opened `<think>`
(one without), cut at odd points. It also answers with the failures a client must survive:
a refused key, an unknown model, 429 and 5xx, a prompt longer than its context, a
connection that drops mid-answer.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentworld_local.contract.parse import THINK_CLOSE
from agentworld_local.engine.scripted import model_text_start


@dataclass
class Reply:
    raw: str
    #: Chunk sizes in characters, used in turn (odd sizes cut tags in the middle).
    chunks: tuple[int, ...] = (3, 1, 5, 2, 7)
    #: Thinking in `reasoning_content` (a server with a reasoning parser) or in the text.
    separate: bool = False
    finish: str = "stop"
    delay_s: float = 0.0
    #: Drop the connection after this many pieces, without finishing (a server that died).
    die_after: int | None = None
    #: After its finish chunk, send nothing more and keep the stream open until this is set (a
    #: server that never ends a finished answer's stream).
    hang_after_finish: threading.Event | None = None


def _cut(text: str, sizes: tuple[int, ...]) -> list[str]:
    pieces, start, index = [], 0, 0
    while start < len(text):
        size = sizes[index % len(sizes)]
        pieces.append(text[start : start + size])
        start, index = start + size, index + 1
    return pieces


@dataclass
class FakeOpenAI:
    replies: list[Reply] = field(default_factory=list)
    models: list[str] = field(default_factory=lambda: ["world"])
    #: The bearer key it accepts (None: any).
    key: str | None = None
    #: The next POSTs get these (status, message) answers, first to last.
    errors: list[tuple[int, str]] = field(default_factory=list)
    #: The next POSTs get these raw answers (status, content type or "" for none, body), first to
    #: last: what a server that is not quite OpenAI-compatible sends back.
    raw_answers: list[tuple[int, str, bytes]] = field(default_factory=list)
    #: A prompt with more characters than this is refused as too long for the context.
    context_chars: int | None = None
    continue_supported: bool = True
    #: Facts of llama-server's /props (None: no such endpoint, as on vLLM).
    props: dict[str, Any] | None = None
    #: SGLang's /get_server_info (None: no such endpoint).
    server_info: dict[str, Any] | None = None
    #: What /v1/models adds to each entry (llama-server's `meta`, vLLM's `max_model_len`).
    model_extra: dict[str, Any] = field(default_factory=dict)
    #: Streams wait until this many are in flight together (once; then none waits): a test of
    #: how many requests a client sends at once sees every one it would send.
    hold_until: int | None = None
    #: Answers a request itself (for the judge): body -> Reply.
    respond: Callable[[dict[str, Any]], Reply] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    disconnected: threading.Event = field(default_factory=threading.Event)
    calls: int = 0
    #: Answers being streamed right now, and the most at once so far.
    active: int = 0
    most_at_once: int = 0
    #: Seconds before an answer starts (a server thinking over the prompt).
    delay: float = 0.0
    #: Whether it reports its token counts at all (`usage`, `timings`), and the prompt tokens
    #: it says it took from its cache (None: it does not say, as vLLM without
    #: --enable-prompt-tokens-details). It counts a prompt as its characters // 4.
    reports_usage: bool = True
    cached_tokens: int | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._held = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if not fake._authorised(self):
                    return
                if self.path.rstrip("/") == "/v1/models":
                    data = {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "test", **fake.model_extra}
                                                       for m in fake.models]}
                    return fake._json(self, 200, data)
                if self.path == "/props" and fake.props is not None:
                    return fake._json(self, 200, fake.props)
                if self.path == "/get_server_info" and fake.server_info is not None:
                    return fake._json(self, 200, fake.server_info)
                fake._json(self, 404, {"error": {"message": "Not Found", "type": "not_found_error"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with fake._lock:
                    fake.requests.append(body)
                    fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                    error = fake.errors.pop(0) if fake.errors else None
                    raw = fake.raw_answers.pop(0) if fake.raw_answers and error is None else None
                    fake.calls += 1
                if not fake._authorised(self):
                    return
                if raw is not None:
                    return fake._raw(self, *raw)
                if error is not None:
                    return fake._json(self, error[0], {"error": {"message": error[1], "type": "error", "code": error[0]}},
                                      extra={"retry-after-ms": "10"})
                if self.path != "/v1/chat/completions":
                    return fake._json(self, 404, {"error": {"message": "Not Found"}})
                if body.get("model") not in fake.models:
                    return fake._json(self, 404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
                size = sum(len(m.get("content") or "") for m in body.get("messages", []))
                if fake.context_chars is not None and size > fake.context_chars:
                    message = f"This model's maximum context length is {fake.context_chars // 4} tokens. However, you requested {size // 4} tokens."
                    return fake._json(self, 400, {"error": {"message": message, "type": "BadRequestError"}})
                if body.get("continue_final_message") and not fake.continue_supported:
                    return fake._json(self, 400, {"error": {"message": "Assistant response prefill is incompatible with enable_thinking."}})
                fake._answer(self, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self._held.set()
        self.server.shutdown()
        self.server.server_close()

    # -- answers --------------------------------------------------------------------

    def _authorised(self, handler: BaseHTTPRequestHandler) -> bool:
        if self.key is None or handler.headers.get("Authorization") == f"Bearer {self.key}":
            return True
        self._json(handler, 401, {"error": {"message": "Invalid API key.", "type": "invalid_request_error"}})
        return False

    def _json(self, handler: BaseHTTPRequestHandler, status: int, data: Any, extra: dict[str, str] | None = None) -> None:
        payload = json.dumps(data).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        for name, value in (extra or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(payload)

    def _raw(self, handler: BaseHTTPRequestHandler, status: int, kind: str, body: bytes) -> None:
        handler.send_response(status)
        if kind:
            handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _pick(self, body: dict[str, Any]) -> Reply:
        if self.respond is not None:
            return self.respond(body)
        with self._lock:
            reply = self.replies[(self.calls - 1) % len(self.replies)]
        return reply

    def _pieces(self, reply: Reply, body: dict[str, Any]) -> list[tuple[str, str]]:
        """(field, text) pieces: `reasoning_content` or `content`, as the server would send them."""
        raw = reply.raw
        if body.get("continue_final_message"):
            # Going on after the client's own `</think>`: what the model wrote after its own.
            close = raw.find(THINK_CLOSE)
            rest = raw[close + len(THINK_CLOSE):].lstrip() if close != -1 else raw
            return [("content", p) for p in _cut(rest, reply.chunks)]
        thinking_on = (body.get("chat_template_kwargs") or {}).get("enable_thinking", True)
        think_open, offset = model_text_start(raw, thinking_prompt=thinking_on)
        text = raw[offset:]
        if not (reply.separate and think_open):
            return [("content", p) for p in _cut(text, reply.chunks)]
        close = text.find(THINK_CLOSE)
        thinking, answer = (text, "") if close == -1 else (text[:close], text[close + len(THINK_CLOSE):].lstrip("\n"))
        return [("reasoning_content", p) for p in _cut(thinking, reply.chunks)] + [
            ("content", p) for p in _cut(answer, reply.chunks)
        ]

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        reply = self._pick(body)
        pieces = self._pieces(reply, body)
        limit = body.get("max_tokens")
        finish = reply.finish
        if limit is not None and len(pieces) > limit:
            pieces, finish = pieces[:limit], "length"
        if not body.get("stream"):
            text = "".join(t for f, t in pieces if f == "content")
            thinking = "".join(t for f, t in pieces if f == "reasoning_content")
            message = {"role": "assistant", "content": text, **({"reasoning_content": thinking} if thinking else {})}
            return self._json(handler, 200, {
                "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 10, "completion_tokens": len(pieces), "total_tokens": 10 + len(pieces)},
            })
        with self._lock:
            self.active += 1
            handler._running = True  # type: ignore[attr-defined]  # per request: a connection may carry several
            self.most_at_once = max(self.most_at_once, self.active)
            if self.hold_until is not None and self.active >= self.hold_until:
                self._held.set()
        if self.hold_until is not None:
            self._held.wait()  # no deadline: until that many came (close() lets any held one go)
        try:
            self._stream(handler, body, reply, pieces, finish)
        finally:
            self._finishing(handler)

    def _finishing(self, handler: BaseHTTPRequestHandler) -> None:
        """The request stops counting as running (once), just before its finish event is written,
        as a real server frees its slot before the last chunks reach the client: counted out
        after the last write, a client that read the finish and sent its next request at once
        could find its own finished request still counted (one more than it ever sent at once)."""
        with self._lock:
            if getattr(handler, "_running", False):
                handler._running = False  # type: ignore[attr-defined]
                self.active -= 1

    def _stream(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], reply: Reply,
                pieces: list[tuple[str, str]], finish: str) -> None:
        if self.delay:
            time.sleep(self.delay)
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Connection", "close")
        handler.end_headers()

        options = body.get("stream_options") or {}
        prompt = sum(len(m.get("content") or "") for m in body["messages"]) // 4
        cached = self.cached_tokens

        def counts(generated: int) -> dict[str, Any]:
            usage = {"prompt_tokens": prompt, "completion_tokens": generated, "total_tokens": prompt + generated}
            if cached is not None:
                usage["prompt_tokens_details"] = {"cached_tokens": cached}
            return usage

        def event(delta: dict[str, Any], finish_reason: str | None = None, usage: Any = None, sent: int = 0) -> None:
            chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                     "choices": [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
            if usage:
                chunk["usage"] = usage
            elif self.reports_usage and options.get("continuous_usage_stats"):  # vLLM, SGLang
                chunk["usage"] = counts(sent)
            if self.reports_usage and body.get("timings_per_token"):  # llama-server
                chunk["timings"] = {"prompt_n": prompt - (cached or 0), "cache_n": cached or 0, "predicted_n": sent}
            handler.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            handler.wfile.flush()

        try:
            event({"role": "assistant"})
            for number, (name, text) in enumerate(pieces):
                if reply.die_after is not None and number >= reply.die_after:
                    handler.connection.shutdown(2)  # the server died mid-answer
                    return
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                event({name: text}, sent=number + 1)
            self._finishing(handler)
            event({}, finish, sent=len(pieces))
            if reply.hang_after_finish is not None:
                reply.hang_after_finish.wait()
                return
            if self.reports_usage and options.get("include_usage"):
                event({}, usage=counts(len(pieces)))
            handler.wfile.write(b"data: [DONE]\n\n")
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.disconnected.set()  # the client closed the stream
