"""`awl serve --openenv` against hostile clients, as the REST app already is: bodies bounded as
they stream in (chunked ones too), every WebSocket message it cannot take answered in OpenEnv's
own error shape with the session still open, a frame that is not UTF-8 one log line, a client
that leaves mid-step no traceback. Real uvicorn on 127.0.0.1, raw sockets and OpenEnv's client."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

pytest.importorskip("openenv")
from openenv import GenericEnvClient  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from agentworld_local.serve.limits import ServeLimits  # noqa: E402
from agentworld_local.testing import ScriptedBackend  # noqa: E402
from agentworld_local.testing.answers import answer  # noqa: E402
from agentworld_local.trajectory.reader import read_trajectory  # noqa: E402
from tests.serve.test_openenv import openenv_served  # noqa: E402

LIMITS = ServeLimits(max_body_bytes=8000)
MiB = 1 << 20


def scripted(turns: int = 4) -> ScriptedBackend:
    return ScriptedBackend([answer("marker_form").scripted() for _ in range(turns)])


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def chunked_post(port: int, path: str, total: int) -> tuple[bytes, int]:
    """POST a chunked body of up to `total` bytes, one MiB a chunk, until the server answers:
    (the answer's head, the bytes sent by then)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n".encode())
        answered: list[bytes] = []

        def read() -> None:
            answered.append(read_head(sock))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        piece, sent = b"%x\r\n" % MiB + b" " * MiB + b"\r\n", 0
        while sent < total and reader.is_alive():
            try:
                sock.sendall(piece)
            except OSError:  # the server answered and closed: it reads no more of it
                break
            sent += MiB
        reader.join()
        return answered[0], sent


def read_head(sock: socket.socket) -> bytes:
    """What the server answered, up to the end of its head (or until it closed)."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = sock.recv(65536)
        if not more:
            break
        data += more
    return data


def raw_request(port: int, head: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(head.encode())
        return read_head(sock)


def test_a_body_over_the_limit_is_413_before_it_is_read_chunked_or_declared(tmp_path):
    with openenv_served(tmp_path, scripted(), limits=LIMITS) as url:
        head, sent = chunked_post(port_of(url), "/reset", 200 * MiB)
        declared = raw_request(port_of(url), "POST /step HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                                             f"\r\nContent-Length: {10**12}\r\n\r\n{{}}")
        small = raw_request(port_of(url), "POST /reset HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                                          "\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
    assert head.startswith(b"HTTP/1.1 413 "), head
    assert sent < 64 * MiB  # the server stopped reading: the rest of the 200 MiB never went in
    assert declared.startswith(b"HTTP/1.1 413 "), declared
    assert small.startswith(b"HTTP/1.1 200 "), small
    assert list(tmp_path.glob("*.jsonl")) == []


@contextmanager
def logged() -> Iterator[list[logging.LogRecord]]:
    """What uvicorn and the app log meanwhile (uvicorn's error log is where tracebacks go)."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep(level=logging.DEBUG)
    loggers = [logging.getLogger(name) for name in ("uvicorn.error", "uvicorn", "")]
    for log in loggers:
        log.addHandler(keep)
    try:
        yield records
    finally:
        for log in loggers:
            log.removeHandler(keep)


def tracebacks(records: list[logging.LogRecord]) -> list[str]:
    return [record.getMessage() for record in records if record.exc_info or "Traceback" in record.getMessage()]


HOSTILE_MESSAGES = [
    "[]", "[1, 2]", "3", '"reset"', "null", "true", "not json", '{"type": "reset"',
    "[" * 100_000, '{"type": "reset", "data": ' + '{"a": ' * 20_000 + "1" + "}" * 20_000 + "}",
    '{"type": "reset", "data": {"seed": ' + "9" * 5_000 + "}}",
    '{"type": "step", "data": {"action": "' + "x" * 300_000 + '"}}',
    '{"type": "step", "data": {"action": "ls", "final": "yes"}}',
    '{"type": ["step"], "data": 3}',
    # Keys that would meet OpenEnv's own call before awl's reset (Python's "multiple values" text).
    '{"type": "reset", "data": {"self": 1}}', '{"type": "reset", "data": {"func": 1}}',
    '{"type": "reset", "data": {"session_id": "x"}}',
]


def test_every_websocket_message_it_cannot_take_is_an_openenv_error_and_the_session_goes_on(tmp_path):
    with openenv_served(tmp_path, scripted(), limits=ServeLimits(max_body_bytes=200_000)) as url, \
            logged() as records:
        with connect(url.replace("http", "ws", 1) + "/ws", open_timeout=60, max_size=None) as ws:
            answers = []
            for message in [*HOSTILE_MESSAGES, b"\x00\x01binary"]:
                ws.send(message)
                answers.append(json.loads(ws.recv()))
                ws.send(json.dumps({"type": "state"}))
                assert json.loads(ws.recv())["type"] == "state"  # the session is still open
        for said in answers:
            assert said["type"] == "error", said
            assert said["data"]["code"] in ("INVALID_JSON", "VALIDATION_ERROR", "UNKNOWN_TYPE"), said
            text = said["data"]["message"]
            assert "attribute" not in text and "Traceback" not in text and len(text) < 400, text
        assert "nested" in answers[8]["data"]["message"] and "nested" in answers[9]["data"]["message"]
        assert "digits" in answers[10]["data"]["message"]
        assert "200000" in answers[11]["data"]["message"]
        assert "final" in json.dumps(answers[12])  # "yes" is not true
        for said, key in zip(answers[14:17], ("self", "func", "session_id")):
            assert f"Unknown reset option `{key}`" in said["data"]["message"], said
            assert "multiple values" not in said["data"]["message"]
    assert tracebacks(records) == []


def test_a_text_frame_that_is_not_utf8_closes_that_socket_with_1007_and_logs_one_line(tmp_path):
    with openenv_served(tmp_path, scripted(), limits=LIMITS) as url, logged() as records:
        with connect(url.replace("http", "ws", 1) + "/ws", open_timeout=60) as ws:
            ws.send(b'{"type": "state", "x": "\xff\xfe"}', text=True)
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007
        with connect(url.replace("http", "ws", 1) + "/ws", open_timeout=60) as again:  # others go on
            again.send(json.dumps({"type": "state"}))
            assert json.loads(again.recv())["type"] == "state"
    assert tracebacks(records) == []
    assert [record for record in records if "not UTF-8" in record.getMessage()]


class HeldBackend(ScriptedBackend):
    """Scripted answers whose first generation waits until the test lets it go."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.started, self.go = threading.Event(), threading.Event()

    def _generate(self, *args, **kwargs):
        if not self.go.is_set():
            self.started.set()
            assert self.go.wait(120)
        yield from super()._generate(*args, **kwargs)


def test_a_client_that_leaves_mid_step_costs_no_traceback_and_the_turn_is_saved(tmp_path):
    backend = HeldBackend([answer("marker_form").scripted() for _ in range(4)])
    with openenv_served(tmp_path, backend, limits=LIMITS) as url, logged() as records:
        with connect(url.replace("http", "ws", 1) + "/ws", open_timeout=60) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"episode_id": "left"}}))
            assert json.loads(ws.recv())["type"] == "observation"
            ws.send(json.dumps({"type": "step", "data": {"action": "ls"}}))
            assert backend.started.wait(60)
        backend.go.set()  # the client has gone: the turn ends and is saved anyway

        async def next_client() -> str:
            async with GenericEnvClient(base_url=url, message_timeout_s=1800) as env:
                started = await env.reset(episode_id="after")
                return started.observation["observation"]

        assert asyncio.run(next_client()) == "user@sandbox:~$ "  # a step that ended the session reached the file
    assert tracebacks(records) == []
    assert len(read_trajectory(tmp_path / "left.jsonl").turns) == 1
