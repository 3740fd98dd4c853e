"""The clients of bench/fleet_scale.py: N episodes at once against `awl serve`, in a process of
their own, over its REST API or OpenEnv's WebSocket (`awl serve --openenv`).

Each episode has one keep-alive connection of its own. The REST client is a few lines of
asyncio (HTTP/1.1, one request at a time per connection): httpx's async client cost more CPU
per request than awl itself, on a machine where the bench's own processes share two cores
with awl. The WebSocket client is the `websockets` package's, speaking OpenEnv's messages
(`reset`, `step`, `close`), as OpenEnv's own client does.

Protocol with the bench (`Hooks`): open every episode, print `opened`, wait for a line on stdin,
play every episode's turns at once (printing `half` once half of all turns are done, `played`
once all are), close every episode, then print what happened as one JSON line. A test
(tests/remote/test_fleet_episodes.py) runs the same clients with hooks of its own.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from urllib.parse import urlsplit

SESSION = {"domain": "terminal", "think": "off", "max_tokens": 64}


@dataclass
class Run:
    opened: int = 0
    done_turns: int = 0
    errors: int = 0
    busy: int = 0  # 429/503 from awl serve (REST), or a WebSocket error that says the server is busy or full
    first_error: str = ""
    seconds: float = 0.0  # wall time of the turns
    half_s: float = 0.0  # when half of them were done
    cpu: float = 0.0  # this process's CPU time while the turns ran
    #: Session id (its file's name without .jsonl) -> turns the client was told were done.
    turns_by_session: dict[str, int] = field(default_factory=dict)

    def failed(self, what: str, status: int, text: str) -> None:
        if status in (429, 503) or "busy" in text.lower() or "capacity" in text.lower():
            self.busy += 1
        self.errors += 1
        if not self.first_error:
            self.first_error = f"{what}: {status or ''} {text[:600]}".replace("  ", " ")


class Rest:
    """One keep-alive HTTP/1.1 connection to awl serve."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def call(self, method: str, path: str, data: object = None) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port, limit=1 << 20)
        assert self.reader is not None
        body = json.dumps(data).encode() if data is not None else b""
        self.writer.write(b"%s %s HTTP/1.1\r\nhost: %s:%d\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
                          % (method.encode(), path.encode(), self.host.encode(), self.port, len(body)) + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return status, await self.reader.readexactly(length) if length else b""

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class Hooks:
    """What the clients say along the way. The bench's (a process of their own): print `opened`
    and wait for a line on stdin, print `half` and `played`. A test passes its own."""

    async def opened(self) -> None:
        print("opened", flush=True)
        await asyncio.to_thread(sys.stdin.readline)

    def half(self) -> None:
        print("half", flush=True)

    def played(self) -> None:
        print("played", flush=True)


class Turns:
    """Counts the turns done, and says `half` once."""

    def __init__(self, run: Run, half: int, hooks: Hooks) -> None:
        self.run, self.half, self.hooks = run, half, hooks
        self.started = time.perf_counter()

    def done(self) -> None:
        self.run.done_turns += 1
        if self.run.done_turns == self.half:
            self.run.half_s = time.perf_counter() - self.started
            self.hooks.half()


async def rest(url: str, n: int, turns: int, hooks: Hooks | None = None) -> Run:
    hooks = hooks or Hooks()
    run = Run()
    parts = urlsplit(url)
    connections = [Rest(parts.hostname or "127.0.0.1", parts.port or 80) for _ in range(n)]

    async def open_one(number: int) -> str | None:
        status, body = await connections[number].call("POST", "/sessions", {**SESSION, "seed": number})
        if status != 201:
            run.failed("open", status, body.decode(errors="replace"))
            return None
        run.opened += 1
        return json.loads(body)["id"]

    sids = await asyncio.gather(*(open_one(number) for number in range(n)))
    await hooks.opened()

    async def step(number: int, sid: str, turn: int) -> bool:
        status, body = await connections[number].call("POST", f"/sessions/{sid}/step",
                                                     {"action": f"echo {sid[-8:]}-{turn}"})
        if status != 200:
            run.failed("step", status, body.decode(errors="replace"))
        return status == 200

    await _play_all(run, sids, turns, hooks, step)

    async def close(number: int, sid: str) -> None:
        status, body = await connections[number].call("DELETE", f"/sessions/{sid}")
        if status != 200:
            run.failed("close", status, body.decode(errors="replace"))

    await asyncio.gather(*(close(number, sid) for number, sid in enumerate(sids) if sid))
    for connection in connections:
        connection.close()
    return run


async def websocket(url: str, n: int, turns: int, hooks: Hooks | None = None) -> Run:
    hooks = hooks or Hooks()
    from websockets.asyncio.client import connect

    run = Run()
    ws_url = url.replace("http://", "ws://") + "/ws"
    sockets: list = [None] * n

    async def ask(number: int, message: dict) -> dict:
        socket = sockets[number]
        await socket.send(json.dumps(message))
        return json.loads(await socket.recv())

    async def open_one(number: int) -> str | None:
        try:
            sockets[number] = await connect(ws_url, compression=None, ping_interval=None, open_timeout=600,
                                            max_size=1 << 22)
        except Exception as error:  # noqa: BLE001 - counted, the bench goes on
            run.failed("connect", 0, f"{type(error).__name__}: {error}")
            return None
        episode = f"ep-{number:05d}"
        answer = await ask(number, {"type": "reset", "data": {**SESSION, "seed": number, "episode_id": episode}})
        if answer.get("type") != "observation":
            run.failed("reset", 0, json.dumps(answer.get("data")))
            return None
        run.opened += 1
        return episode

    episodes = await asyncio.gather(*(open_one(number) for number in range(n)))
    await hooks.opened()

    async def step(number: int, episode: str, turn: int) -> bool:
        answer = await ask(number, {"type": "step", "data": {"action": f"echo {episode}-{turn}"}})
        data = answer.get("data") or {}
        if answer.get("type") != "observation" or data.get("observation", {}).get("invalid_action"):
            run.failed("step", 0, json.dumps(data))
            return False
        return True

    await _play_all(run, episodes, turns, hooks, step)

    async def close(number: int) -> None:
        socket = sockets[number]
        if socket is not None:
            await socket.send(json.dumps({"type": "close"}))
            await socket.close()

    await asyncio.gather(*(close(number) for number in range(n)))
    return run


async def _play_all(run: Run, ids: list[str | None], turns: int, hooks: Hooks,
                    step: Callable[[int, str, int], Awaitable[bool]]) -> None:
    """Every opened episode plays its turns one after the other, all episodes at once: `step`
    sends one (number, id, turn) and says whether it was done. Times the whole; calls the hooks."""
    counter = Turns(run, len(ids) * turns // 2, hooks)

    async def play(number: int, key: str) -> None:
        done = 0
        for turn in range(1, turns + 1):
            if await step(number, key, turn):
                done += 1
                counter.done()
        run.turns_by_session[key] = done

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(play(number, key) for number, key in enumerate(ids) if key))
    run.seconds, run.cpu = time.perf_counter() - started, time.process_time() - cpu
    hooks.played()


def main(face: str, url: str, n: int, turns: int) -> None:
    run = asyncio.run((rest if face == "rest" else websocket)(url, n, turns))
    print(json.dumps(asdict(run)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
