"""What one answer of a server may do to a session: it is bounded by its token budget (a
10 MB chunk under --max-tokens 64 was a 10,000,000-character observation), and an answer
that is not an event stream (a JSON answer, a web page), a followed redirect, and a server
that failed after turns were saved are each said for what they are, with the right next step.

Against a small server of this file's own on 127.0.0.1 (tests/remote/fake_openai.py is shared)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentworld_local.testing.answers import answer
from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import awl
from tests.remote.test_errors import assert_turn_error

OBSERVATION = answer("thinking_then_tags").observation


def sse(*pieces: str, finish: str = "stop") -> bytes:
    def chunk(delta: dict, reason: str | None = None) -> bytes:
        data = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "world",
                "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]}
        return f"data: {json.dumps(data)}\n\n".encode()
    return b"".join([chunk({"role": "assistant"}), *(chunk({"content": p}) for p in pieces), chunk({}, finish),
                     b"data: [DONE]\n\n"])


Answer = Callable[[str, dict[str, Any]], tuple[int, dict[str, str], bytes]]


class Server:
    """Lists the model `world`; each POST is answered by `answers` in turn (path, body) ->
    (status, headers, body)."""

    def __init__(self, answers: list[Answer]) -> None:
        self.answers = answers
        self.posts = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"Content-Type": "application/json"},
                               json.dumps({"object": "list", "data": [{"id": "world", "object": "model"}]}).encode())
                else:
                    self._send(404, {"Content-Type": "application/json"}, b'{"error": {"message": "Not Found"}}')

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                respond = server.answers[min(server.posts, len(server.answers) - 1)]
                server.posts += 1
                self._send(*respond(self.path, body))

            def _send(self, status: int, headers: dict[str, str], payload: bytes) -> None:
                self.send_response(status)
                for name, value in {"Content-Length": str(len(payload)), **headers}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}"

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def start(*answers: Answer) -> Server:
        started.append(Server(list(answers)))
        return started[-1]

    yield start
    for server in started:
        server.close()


def stream(*pieces: str) -> Answer:
    return lambda path, body: (200, {"Content-Type": "text/event-stream"}, sse(*pieces))


def run(server: Server, tmp_path, *extra: str, stdin: str = "ls\n", base: str = "/v1"):
    out = tmp_path / "s.jsonl"
    result = awl("run", "--backend", "openai", "--base-url", server.root + base, "--api-model", "world",
                 "--think", "off", "--out", str(out), *extra, home=tmp_path, stdin=stdin)
    return result, out


def test_one_huge_chunk_is_cut_at_the_token_budget_and_said(serve, tmp_path):
    huge = "<predicted_observation>\n" + "y" * 10_000_000
    result, out = run(serve(stream(huge)), tmp_path, "--max-tokens", "64")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "the observation was cut off at --max-tokens" in result.stderr and "(finish: length)" in result.stderr
    [turn] = read_trajectory(out).turns
    assert 0 < len(turn.observation) <= 64 * 16 and out.stat().st_size < 64 * 16 * 4 + 20_000  # not 40 MB


def test_many_small_chunks_are_bounded_the_same_way(serve, tmp_path):
    result, out = run(serve(stream("<predicted_observation>\n", *["zzzz"] * 2000)), tmp_path, "--max-tokens", "8")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "(finish: length)" in result.stderr
    assert len(read_trajectory(out).turns[0].observation) <= 8 * 16


def test_a_real_answer_is_never_cut(serve, tmp_path):
    raw = answer("thinking_then_tags").raw
    result, out = run(serve(stream(*[raw[i : i + 5] for i in range(0, len(raw), 5)])), tmp_path)
    assert result.returncode == 0, result.stderr
    assert "finish: length" not in result.stderr and read_trajectory(out).turns[0].observation == OBSERVATION


@pytest.mark.parametrize(("content_type", "body", "named"), [
    ("application/json", json.dumps({"id": "x", "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}), "answered JSON"),
    ("text/html; charset=utf-8", "<!doctype html><html><body>Welcome</body></html>", "answered an HTML page"),
], ids=["json", "html"])
def test_a_200_answer_that_is_not_an_event_stream_is_said_so(serve, tmp_path, content_type, body, named):
    """It was reported as "stopped mid-answer", as if the server had died."""
    server = serve(lambda path, _: (200, {"Content-Type": content_type}, body.encode()))
    result, _ = run(server, tmp_path)
    assert_turn_error(result, named, "not an event stream", "ending in /v1")
    assert "mid-answer" not in result.stderr


def test_a_followed_redirect_s_failure_names_where_it_went(serve, tmp_path):
    target = serve(lambda path, _: (418, {"Content-Type": "application/json"},
                                    b'{"error": {"message": "not a chat server"}}'))
    moved = serve(lambda path, _: (307, {"Location": target.root + "/elsewhere/v1/chat/completions"}, b""))
    result, _ = run(moved, tmp_path)
    assert_turn_error(result, f"redirected to {target.root}/elsewhere/v1/chat/completions", "not a chat server")


def test_a_server_failure_after_saved_turns_says_resume_not_fork(serve, tmp_path):
    raw = answer("thinking_then_tags").raw
    failing = lambda path, _: (400, {"Content-Type": "application/json"}, b'{"error": {"message": "no more"}}')  # noqa: E731
    result, out = run(serve(stream(raw), failing), tmp_path, stdin="ls\npwd\n")
    assert_turn_error(result, "1 completed turn is saved in", f"continue with `awl run --resume {out}`")
    assert "awl fork" not in result.stderr
