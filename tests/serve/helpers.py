"""`awl serve`'s app on a real uvicorn server on 127.0.0.1 (a free port), in a thread."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import uvicorn

from agentworld_local.serve.app import make_app
from agentworld_local.serve.server import bind


@contextlib.contextmanager
def served(folder: Path, backend: Any, *, wrap: Any = None, **options: Any) -> Iterator[httpx2.Client]:
    """A client of the server (base URL set); on exit the server stops as on Ctrl+C (sessions saved).
    `wrap`: an ASGI middleware put around the app (a test's probe). Unless a test says otherwise,
    the server reveals the simulator's side (`record`, `session`, `head`: the tests read them)."""
    app = make_app(folder=folder, backend=backend, **{"reveal_simulator": True, **options})
    app = wrap(app) if wrap is not None else app
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:  # no deadline: pytest-timeout stops a hang
        assert thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    # No read deadline: a slow turn on a busy machine is not a failure (pytest-timeout stops a hang).
    client = httpx2.Client(base_url=f"http://127.0.0.1:{sock.getsockname()[1]}", timeout=None)
    try:
        yield client
    finally:
        client.close()
        server.should_exit = True
        thread.join(30)
        sock.close()


def sse_events(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event name, data) for each server-sent event in `lines`."""
    name, data = None, []
    for line in lines:
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
        elif line == "" and data:
            yield name or "message", json.loads("\n".join(data))
            name, data = None, []


def stream_step(client: httpx2.Client, sid: str, action: str) -> list[tuple[str, dict[str, Any]]]:
    with client.stream("POST", f"/sessions/{sid}/step/stream", json={"action": action}) as response:
        assert response.status_code == 200, response.read()
        return list(sse_events(response.iter_lines()))
