"""`awl mcp` answers every request it cannot take with a JSON-RPC error, so a client waiting
on that id never hangs (the SDK's stdio transport dropped these lines without a word):
raw lines written to the server's stdin, as a hand-made or buggy client sends them."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from agentworld_local.testing.answers import answer, write_answer_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}


class RawClient:
    def __init__(self, tmp_path: Path) -> None:
        answers = write_answer_file(tmp_path / "answers.json", [answer("thinking_then_tags")])
        self.process = subprocess.Popen(
            [sys.executable, "-m", "agentworld_local.cli.main", "mcp", "--model", f"scripted:{answers}",
             "--out-dir", str(tmp_path / "out")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=(tmp_path / "stderr.txt").open("wb"), cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), "AWL_HOME": str(tmp_path)})
        self.stderr_file = tmp_path / "stderr.txt"
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, line: str | bytes) -> None:
        self.process.stdin.write((line if isinstance(line, bytes) else line.encode()) + b"\n")
        self.process.stdin.flush()

    def reply(self):
        line = self.lines.get()  # no deadline: pytest-timeout stops a hang
        assert line is not None, "the server closed stdout"
        return json.loads(line)

    def stderr_so_far(self) -> str:
        return self.stderr_file.read_text(errors="replace")

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(60)


@pytest.fixture
def client(tmp_path):
    raw = RawClient(tmp_path)
    raw.send(json.dumps(INITIALIZE))
    assert raw.reply()["id"] == 1
    raw.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    yield raw
    raw.close()


def test_a_line_that_is_not_json_is_a_parse_error(client):
    client.send('{"jsonrpc": "2.0", "id": 2, "method": "tools/list"')
    reply = client.reply()
    assert reply["id"] is None and reply["error"]["code"] == -32700


def test_a_batch_is_answered_for_each_of_its_requests(client):
    client.send(json.dumps([{"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
                            {"jsonrpc": "2.0", "id": "four", "method": "tools/list"}]))
    replies = client.reply()
    assert [r["id"] for r in replies] == [3, "four"] and {r["error"]["code"] for r in replies} == {-32600}
    assert "batches are not supported" in replies[0]["error"]["message"]


def test_a_call_holding_a_lone_surrogate_is_an_invalid_request_with_its_id(client):
    client.send('{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "act", "arguments": {"action": "ls \\ud800"}}}')
    reply = client.reply()
    assert reply["id"] == 5 and reply["error"]["code"] == -32600 and "lone surrogate" in reply["error"]["message"]


def test_a_message_that_is_no_json_rpc_is_an_invalid_request(client):
    client.send(json.dumps({"jsonrpc": "2.0", "id": 6, "method": 7}))
    reply = client.reply()
    assert reply["id"] == 6 and reply["error"]["code"] == -32600
    client.send("42")
    reply = client.reply()
    assert reply["id"] is None and reply["error"]["code"] == -32600


def test_after_malformed_lines_the_server_still_answers_and_acts(client, tmp_path):
    for line in ("garbage", "[]", '{"jsonrpc": "2.0", "method": "notifications/bad", "params": "\\udc00"}', ""):
        client.send(line)
    assert client.reply()["error"]["code"] == -32700  # garbage
    assert client.reply()["error"]["code"] == -32600  # the empty batch; the notification and the blank line: nothing
    client.send(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                            "params": {"name": "act", "arguments": {"action": "ls -la"}}}))
    reply = client.reply()
    assert reply["id"] == 9 and "result" in reply and not reply["result"].get("isError")
    assert reply["result"]["content"][0]["text"] == answer("thinking_then_tags").observation


def test_lines_and_params_nested_deep_are_errors_and_the_server_lives_on(client):
    """One line of 100,000 `[` ended the process with a RecursionError, and so did a valid call
    whose params nest 400 deep (a recursive walk): each is an error reply now, counted without recursion."""
    client.send("[" * 100_000)
    reply = client.reply()
    assert reply["id"] is None and reply["error"]["code"] == -32700 and "nested" in reply["error"]["message"]
    deep = {"name": "act", "arguments": {"action": "ls", "x": json.loads("[" * 400 + "]" * 400)}}
    client.send(json.dumps({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": deep}))
    reply = client.reply()
    assert reply["id"] == 11 and reply["error"]["code"] == -32600 and "nested" in reply["error"]["message"]
    deeper = ('{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": ' + '{"a": ' * 100_000 + "1"
              + "}" * 100_001)
    client.send(deeper)
    assert client.reply()["error"]["code"] in (-32700, -32600)
    client.send('{"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"name": "act", "arguments": '
                '{"action": "ls", "n": ' + "7" * 5_000 + '}}}')
    reply = client.reply()
    assert reply["error"]["code"] in (-32700, -32600) and "5000 digits" in reply["error"]["message"]
    client.send(json.dumps({"jsonrpc": "2.0", "id": 14, "method": "tools/list"}))
    assert client.reply()["id"] == 14 and client.process.poll() is None
    assert "Traceback" not in client.stderr_so_far()
