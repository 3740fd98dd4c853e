"""A light OpenAI-compatible server for bench/fleet_scale.py, in a process of its own.

It says its places as SGLang does (`/get_server_info`: `max_running_requests`), answers 429
beyond them (a "busy refusal"), and answers each chat request after a fixed delay with one
streamed answer, over keep-alive connections as vLLM and SGLang do. It is plain asyncio, so
that thousands of turns a second cost it little of the machine the bench measures awl on (the
tests' FakeOpenAI, a thread per connection that it closes after each answer, cost about as much
CPU per turn as awl itself). Killing its process is a crash: the port stops listening and every
connection in flight is cut.

    python bench/fleet_fake_server.py PLACES DELAY_S ANSWER   (prints its port, then serves)

`GET /stats` answers its counts: chat requests taken, refused (429), the most at once, and the
connections it took.
"""

from __future__ import annotations

import asyncio
import json
import sys

MODEL = "world"


class FakeServer:
    def __init__(self, places: int, delay: float, answer: str) -> None:
        self.places, self.delay = places, delay
        self.running = self.requests = self.refused = self.most = self.connections = 0
        chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": MODEL}
        counts = {"prompt_tokens": 100, "completion_tokens": 12, "total_tokens": 112}
        events = [{**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": answer},
                                         "finish_reason": None}]},
                  {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
        self.stream = _events(events)
        # SGLang's and vLLM's `continuous_usage_stats`: the counts in every chunk.
        self.counted = _events([{**event, "usage": counts} for event in events])
        self.usage = _events([{**chunk, "choices": [], "usage": counts}])

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                line, _, rest = head.partition(b"\r\n")
                method, path, _ = line.decode("latin-1").split(" ", 2)
                length = 0
                for header in rest.split(b"\r\n"):
                    name, _, value = header.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length) if length else b""
                writer.write(await self.answer(method, path, body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def answer(self, method: str, path: str, body: bytes) -> bytes:
        if method == "GET" and path.rstrip("/") == "/v1/models":
            return _json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "bench"}]})
        if method == "GET" and path == "/get_server_info":
            return _json(200, {"max_running_requests": self.places, "context_length": 32768, "model_path": MODEL})
        if method == "GET" and path == "/stats":
            return _json(200, {"requests": self.requests, "refused": self.refused, "most": self.most,
                               "connections": self.connections})
        if method != "POST" or path != "/v1/chat/completions":
            return _json(404, {"error": {"message": "Not Found"}})
        if self.running >= self.places:
            self.refused += 1
            return _json(429, {"error": {"message": "all places are busy", "type": "busy"}},
                         b"retry-after-ms: 50\r\n")
        self.running += 1
        self.requests += 1
        self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.running -= 1
        usage = json.loads(body).get("stream_options") or {}
        data = self.counted if usage.get("continuous_usage_stats") else self.stream
        data += (self.usage if usage.get("include_usage") else b"") + b"data: [DONE]\n\n"
        return (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n" % len(data)) + data


def _events(events: list[dict]) -> bytes:
    return b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)


def _json(status: int, data: object, extra: bytes = b"") -> bytes:
    payload = json.dumps(data).encode()
    reason = {200: b"OK", 404: b"Not Found", 429: b"Too Many Requests"}[status]
    return (b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%s\r\n"
            % (status, reason, len(payload), extra)) + payload


async def main(places: int, delay: float, answer: str) -> None:
    server = FakeServer(places, delay, answer)
    listening = await asyncio.start_server(server.connection, "127.0.0.1", 0, backlog=4096)
    print(listening.sockets[0].getsockname()[1], flush=True)
    async with listening:
        await listening.serve_forever()


if __name__ == "__main__":
    places, delay, answer = sys.argv[1:4]
    try:
        asyncio.run(main(int(places), float(delay), answer))
    except KeyboardInterrupt:
        pass
