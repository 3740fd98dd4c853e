"""What one step costs in each way an RL stack reaches an awl world (docs/rl.md).

The world model is the scripted backend (its answer streams at once), so what is timed is
awl's own work per step: the runner, the session file (one fsync per turn), and the way in:
- Python: `make(...)`'s SimulatedEnv, in-process;
- REST: `awl serve`'s `POST /sessions/{id}/step` (what the vector env and the TRL adapter send);
- OpenEnv: `awl serve --openenv`'s WebSocket, through OpenEnv's `GenericEnvClient` (when
  openenv-core is installed);
- MCP: `awl mcp`'s `act` tool over stdio, through the MCP SDK's client.
Each way runs its steps one after the other in one episode; the median step and its ratio to
the in-process step are measured in one run. A real model adds its own time to every way alike.

    .venv/bin/python bench/rl_step_cost.py [--quick]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_models import print_section, table  # noqa: E402

from agentworld_local.testing import ScriptedBackend  # noqa: E402
from agentworld_local.testing.answers import ANSWERS  # noqa: E402

ACTIONS = ["ls", "pwd", "df -h", "cat notes.txt"]


def _answers() -> list[str]:
    return [answer.raw for answer in ANSWERS]


def _timed(step, steps: int) -> list[float]:
    times = []
    for index in range(steps):
        started = time.perf_counter()
        step(ACTIONS[index % len(ACTIONS)])
        times.append(time.perf_counter() - started)
    return times[1:]  # the first step warms what it touches


def python_env(folder: Path, steps: int) -> list[float]:
    from agentworld_local.env import make

    with make("terminal", backend=ScriptedBackend(_answers()), out_dir=folder) as env:
        env.reset(seed=1)
        return _timed(env.step, steps)


class _Served:
    """A uvicorn server on a free loopback port, in a thread, for one app."""

    def __init__(self, app) -> None:
        import uvicorn

        from agentworld_local.serve.server import bind

        self.sock = bind("127.0.0.1", 0)
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()


def rest(folder: Path, steps: int) -> list[float]:
    import httpx2

    from agentworld_local.serve.app import make_app

    with _Served(make_app(folder=folder, backend=ScriptedBackend(_answers()))) as url:
        with httpx2.Client(base_url=url, timeout=60) as client:
            sid = client.post("/sessions", json={"domain": "terminal", "seed": 1}).json()["id"]
            return _timed(lambda action: client.post(f"/sessions/{sid}/step", json={"action": action}).json(), steps)


def openenv(folder: Path, steps: int) -> list[float] | None:
    try:
        from openenv import GenericEnvClient
    except ImportError:
        return None
    from agentworld_local.serve.openenv import make_openenv_app

    with _Served(make_openenv_app(folder=folder, backend=ScriptedBackend(_answers()))) as url:
        with GenericEnvClient(base_url=url).sync() as env:
            env.reset(seed=1)
            return _timed(lambda action: env.step({"action": action}), steps)


def mcp(folder: Path, steps: int) -> list[float]:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    answers = folder / "answers.json"
    answers.write_text(json.dumps({"version": 1, "answers": [{"raw": raw} for raw in _answers()]}), encoding="utf-8")
    params = StdioServerParameters(command=sys.executable, args=["-m", "agentworld_local.cli.main", "mcp", "--model",
                                                                 f"scripted:{answers}", "--out-dir", str(folder)],
                                   env={"AWL_HOME": str(folder / "home"), "PYTHONPATH": str(Path(__file__).parents[1])})

    async def run() -> list[float]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            times = []
            for index in range(steps):
                started = time.perf_counter()
                await session.call_tool("act", {"action": ACTIONS[index % len(ACTIONS)]})
                times.append(time.perf_counter() - started)
            return times[1:]

    return anyio.run(run)


def section(quick: bool) -> str:
    steps = 12 if quick else 60
    ways = [("Python (make, in-process)", python_env), ("REST (awl serve)", rest),
            ("OpenEnv WebSocket (awl serve --openenv)", openenv), ("MCP stdio (awl mcp)", mcp)]
    rows, base = [], None
    for label, way in ways:
        with tempfile.TemporaryDirectory() as folder:
            try:
                times = way(Path(folder), steps)
            except Exception as error:  # noqa: BLE001 - a way that cannot run here is reported, not fatal
                rows.append([label, f"not measured ({type(error).__name__}: {error})", "", ""])
                continue
        if times is None:
            rows.append([label, "not installed", "", ""])
            continue
        median = statistics.median(times) * 1000
        base = base or median
        rows.append([label, f"{median:.1f}", f"{statistics.quantiles(times, n=20)[-1] * 1000:.1f}", f"{median / base:.2f}x"])
    return "\n\n".join([
        "## What one step costs, by the way in",
        f"{steps - 1} timed steps of one terminal episode each, the scripted backend as the world model (its "
        "answer streams at once), so this is awl's own cost per step; a real model adds its time to every way alike.",
        table(["way in", "median ms", "p95 ms", "vs in-process"], rows),
    ])


def main() -> None:
    print_section(section, __doc__)


if __name__ == "__main__":
    main()
