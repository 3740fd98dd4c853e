"""Many episodes at once over a fleet of three servers, through `awl serve`'s REST API (docs/remote.md, Fleet).

Three loopback OpenAI-compatible servers (tests/remote/fleet_servers.py) each take P requests at
once (they say so as SGLang does, `max_running_requests`, and answer 429 beyond it: a "busy
refusal") and answer each after a fixed delay. awl serve's app (serve/app.py `make_app`) runs
in this process under uvicorn over a Fleet of the three (`awl serve --base-url A --base-url B
--base-url C`). N episodes run at once, each from its own client task: open a session, T
turns one after the other, close. Printed:

- errors (a turn or an open that did not answer 200) and busy refusals (429 from awl serve or
  from a server: awl should keep each server to its places and never meet one);
- the wall time of the turns against the ideal, N / (3 P) x T x delay, as a ratio;
- awl's memory per idle episode: this process's RSS after every session is open (before any
  turn) less before, over N (the clients run in a process of their own);
- then the same (each run a fresh process) with one server killed once half the turns are done (its port closed and its
  answers in flight cut): the sessions on it move to the others (one notice each) and their
  turn runs again there; "lost" counts turns a client was told were done that are not in the
  session files (must be 0), and the files' notices count the moves.

    .venv/bin/python bench/fleet_scale.py [--quick] [--episodes N] [--places P] [--turns T] [--delay S]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

from bench_models import table  # noqa: E402

from agentworld_local.engine.remote.fleet import Fleet  # noqa: E402
from agentworld_local.engine.remote.options import RemoteOptions  # noqa: E402
from agentworld_local.trajectory.reader import read_trajectory  # noqa: E402
from tests.remote.fake_openai import Reply  # noqa: E402
from tests.remote.fleet_servers import FleetServer  # noqa: E402

ANSWER = "<predicted_observation>\nfile.txt  notes.md  src\n</predicted_observation>"
SESSION = {"domain": "terminal", "think": "off", "max_tokens": 64}


@dataclass
class Run:
    opened: int = 0
    done_turns: int = 0
    errors: int = 0
    busy: int = 0  # 429/503 from awl serve
    first_error: str = ""
    turns_by_session: dict[str, int] = field(default_factory=dict)


def rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Served:
    """A uvicorn server on a free loopback port, in a thread, for one app (as bench/rl_step_cost.py)."""

    def __init__(self, app) -> None:
        import uvicorn

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4096)  # thousands of clients connect at once
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_keep_alive=600))
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
        self.thread.join(120)
        self.sock.close()


# -- the clients: a process of their own, so the memory measured is awl's alone ---------------

def _failed(run: Run, what: str, response) -> None:
    if response.status_code in (429, 503):
        run.busy += 1
    run.errors += 1
    if not run.first_error:
        run.first_error = f"{what}: {response.status_code} {response.text[:160]}"


async def clients(url: str, n: int, turns: int) -> None:
    """Open `n` sessions, say `opened`, wait for `go` on stdin, then play every episode at once
    (saying `half` once half the turns are done), and print what happened as JSON."""
    import httpx2

    run = Run()
    limits = httpx2.Limits(max_connections=n + 16, max_keepalive_connections=n + 16)
    async with httpx2.AsyncClient(base_url=url, timeout=httpx2.Timeout(900.0), limits=limits) as client:
        async def open_one(number: int) -> str | None:
            response = await client.post("/sessions", json={**SESSION, "seed": number})
            if response.status_code != 201:
                _failed(run, "open", response)
                return None
            run.opened += 1
            return response.json()["id"]

        sids = [sid for sid in await asyncio.gather(*(open_one(number) for number in range(n))) if sid]
        print("opened", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        half = n * turns // 2
        started = time.perf_counter()

        async def play(sid: str) -> None:
            done = 0
            for turn in range(1, turns + 1):
                response = await client.post(f"/sessions/{sid}/step", json={"action": f"echo {sid[:8]}-{turn}"})
                if response.status_code != 200:
                    _failed(run, "step", response)
                    continue
                done += 1
                run.done_turns += 1
                if run.done_turns == half:
                    print("half", flush=True)
            run.turns_by_session[sid] = done

        await asyncio.gather(*(play(sid) for sid in sids))
        seconds = time.perf_counter() - started
        await asyncio.gather(*(client.delete(f"/sessions/{sid}") for sid in sids))
    print(json.dumps({**asdict(run), "seconds": seconds}), flush=True)


# -- awl serve and the servers: this process ---------------------------------------------------

def one_run(n: int, places: int, turns: int, delay: float, kill_halfway: bool) -> dict:
    from agentworld_local.serve.app import make_app
    from agentworld_local.serve.limits import ServeLimits

    servers = [FleetServer(delay=delay, places=places) for _ in range(3)]
    for server in servers:
        server.replies[:] = [Reply(ANSWER, chunks=(len(ANSWER),))]
        server.server_info = {"max_running_requests": places, "context_length": 32768}
    try:
        with tempfile.TemporaryDirectory() as folder:
            fleet = Fleet(RemoteOptions([server.base_url for server in servers], "world"))
            app = make_app(folder=Path(folder), backend=fleet,
                           # Room to spare: the registry counts a session that is just opening twice for a moment.
                           limits=ServeLimits(max_sessions=2 * n + 8, max_turns=turns + 1, idle_s=3600))
            with Served(app) as url:
                child = subprocess.Popen([sys.executable, __file__, "--client", url, str(n), str(turns)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                         env={**os.environ, "PYTHONPATH": str(BENCH.parent)})
                before = rss()
                assert child.stdout.readline().strip() == "opened", "the clients could not open their sessions"
                grown = rss() - before
                child.stdin.write("go\n")
                child.stdin.flush()
                for line in child.stdout:
                    if line.strip() == "half":
                        if kill_halfway:
                            servers[1].kill()
                        continue
                    result = json.loads(line)
                    break
                child.wait()
            in_files, moved = {}, 0
            for path in Path(folder).glob("*.jsonl"):
                trajectory = read_trajectory(path)
                in_files[path.stem] = len(trajectory.turns)
                moved += sum(len(turn.extra.get("notices", [])) for turn in trajectory.turns)
            lost = sum(max(done - in_files.get(sid, 0), 0) for sid, done in result["turns_by_session"].items())
            return {**result, "grown": grown, "lost": lost, "moved": moved,
                    "refused": sum(server.refused for server in servers),
                    "requests": [len(server.requests) for server in servers]}
    finally:
        for server in servers:
            server.close()


def section(quick: bool, *, episodes_n: int | None = None, places: int | None = None, turns: int | None = None,
            delay: float | None = None) -> str:
    n = episodes_n or (150 if quick else 2000)
    places = places or (16 if quick else 64)
    turns = turns or (2 if quick else 3)
    delay = 1.0 if delay is None else delay
    ideal = n / (3 * places) * turns * delay
    rows = []
    for label, kill in (("3 servers", False), ("1 of 3 killed halfway", True)):
        # Each run in a fresh process: memory the first one freed would hide the second one's growth.
        ran = subprocess.run([sys.executable, __file__, "--run", str(n), str(places), str(turns), str(delay), str(int(kill))],
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(BENCH.parent)})
        if ran.returncode != 0:
            rows.append([label, f"failed: {ran.stderr.strip().splitlines()[-1:]}"] + [""] * 9)
            continue
        run = json.loads(ran.stdout.strip().splitlines()[-1])
        rows.append([label, f"{run['done_turns']:,}/{n * turns:,}", run["errors"], f"{run['busy']} + {run['refused']}",
                     f"{run['seconds']:.1f}", f"{ideal:.1f}", f"{run['seconds'] / ideal:.2f}x",
                     f"{run['grown'] / max(run['opened'], 1) / 1024:.1f}", run["lost"], run["moved"],
                     " / ".join(str(count) for count in run["requests"])])
        if run["first_error"]:
            rows[-1][2] = f"{run['errors']} (first: {run['first_error']})"
    return "\n\n".join([
        "## Many episodes over a fleet of three servers (awl serve, REST)",
        f"{n:,} episodes at once, {turns} turns each, over 3 loopback servers of {places} places each that answer "
        f"after {delay:g} s (429 beyond their places). Ideal: {n:,} / {3 * places} places x {turns} turns x "
        f"{delay:g} s = {ideal:.1f} s. Busy: 429/503 from awl serve + 429 from a server. Memory: RSS growth with "
        "every session open, before any turn, per episode.",
        table(["run", "turns done", "errors", "busy", "wall s", "ideal s", "wall / ideal", "KiB per idle episode",
               "completed turns lost", "moves (notices)", "requests per server"], rows),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="150 episodes, 16 places, 2 turns")
    parser.add_argument("--episodes", type=int)
    parser.add_argument("--places", type=int)
    parser.add_argument("--turns", type=int)
    parser.add_argument("--delay", type=float)
    parser.add_argument("--client", nargs=3, metavar=("URL", "N", "TURNS"), help=argparse.SUPPRESS)
    parser.add_argument("--run", nargs=5, metavar=("N", "PLACES", "TURNS", "DELAY", "KILL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        n, places, turns, delay, kill = args.run
        print(json.dumps(one_run(int(n), int(places), int(turns), float(delay), kill == "1")))
        return
    if args.client:
        url, n, turns = args.client
        asyncio.run(clients(url, int(n), int(turns)))
        return
    print(section(args.quick, episodes_n=args.episodes, places=args.places, turns=args.turns, delay=args.delay))


if __name__ == "__main__":
    main()
