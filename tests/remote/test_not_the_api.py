"""A `--base-url` (or a judge's URL) that answers a web page, an event stream, JSON of another
shape or JSON nested 100,000 deep where `/v1/models` answers a list of models: one line naming
the URL and what it answered, never the client library's own error or a traceback. A real HTTP
server on 127.0.0.1 answers; the real `awl` command asks."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.cli.helpers import assert_one_line_error, awl

#: What each path answers at /v1/models: (content type, body).
ANSWERS = {
    "page": ("text/html; charset=utf-8", b"<!doctype html><html><body>Sign in</body></html>"),
    "stream": ("text/event-stream", b'data: {"id": "world"}\n\n'),
    "other": ("application/json", b'{"models": ["world"]}'),
    "scalar": ("application/json", b"[1, 2]"),
    "deep": ("application/json", b"[" * 100_000 + b"]" * 100_000),
}


@pytest.fixture(scope="module")
def wrong_server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            kind, body = ANSWERS.get(self.path.split("/")[1], ("text/plain", b"no"))
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()


@pytest.mark.parametrize(("path", "said"), [
    ("page", "a web page (text/html)"), ("stream", "an event stream"), ("other", "JSON of another shape"),
    ("scalar", "JSON of another shape"), ("deep", "nested deeper than"),
])
def test_a_url_that_answers_something_else_than_the_api_is_one_line(wrong_server, tmp_path, path, said):
    url = f"{wrong_server}/{path}/v1"
    result = awl("run", "--backend", "openai", "--base-url", url, "--api-model", "world", "--think", "off",
                 "--out", str(tmp_path / "s.jsonl"), home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, url, said, "--base-url")
    assert "_set_private_attributes" not in result.stderr and not (tmp_path / "s.jsonl").exists()
