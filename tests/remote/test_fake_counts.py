"""The loopback servers' own counts, which other tests assert on (`most_at_once == N`, a 429
beyond a server's places): a request stops counting before its finish event reaches the
client, as a real server frees its slot, so a client that sends its next request as soon as
it read the finish never meets its own finished request still counted."""

from __future__ import annotations

import json
import threading

import httpx

from tests.remote.fake_openai import Reply
from tests.remote.fleet_servers import FleetServer

BODY = {"model": "world", "stream": True, "messages": [{"role": "user", "content": "ls"}]}


def _counts_when_the_finish_arrives(server: FleetServer) -> tuple[int, int]:
    with httpx.stream("POST", f"{server.base_url}/chat/completions", json=BODY, timeout=None) as response:
        for line in response.iter_lines():
            if not line.startswith("data: {"):
                continue
            choices = json.loads(line[len("data: "):])["choices"]
            if choices and choices[0]["finish_reason"]:
                return server.active, server._in
    raise AssertionError("the stream ended without a finish event")


def test_a_request_is_counted_out_before_the_client_reads_its_finish():
    server = FleetServer(places=1)
    after_finish = threading.Event()  # the server holds after the finish event until the client read it
    server.replies[:] = [Reply("<predicted_observation>\nok\n</predicted_observation>", chunks=(5, 5, 100),
                               hang_after_finish=after_finish)]
    try:
        assert _counts_when_the_finish_arrives(server) == (0, 0)
    finally:
        after_finish.set()
        server.close()
