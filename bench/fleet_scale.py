"""Many episodes at once over a fleet of three servers, through `awl serve`'s REST API and
OpenEnv's WebSocket (`awl serve --openenv`) (docs/remote.md, Fleet; issue 42's scale point).

Three loopback OpenAI-compatible servers (bench/fleet_fake_server.py, each a process of its own)
each take P requests at once (they say so as SGLang does, `max_running_requests`, and answer 429
beyond it: a "busy refusal") and answer each after a fixed delay. awl serve's app (serve/app.py
`make_app`, or serve/openenv.py `make_openenv_app`) runs in this process under uvicorn over a
Fleet of the three (`awl serve --base-url A --base-url B --base-url C`). N episodes run at once
from a client process of their own (bench/fleet_clients.py), each on its own connection: open,
T turns one after the other, close. Printed, for each face:

- errors (a turn or an open that did not answer) and busy refusals (429/503 from awl serve, or
  429 from a server: awl should keep each server to its places and never meet one);
- the wall time of the turns against the ideal, N / (3 P) x T x delay, as a ratio;
- awl's CPU per turn: this process's CPU time (awl serve alone: the servers and the clients are
  other processes) while the turns ran, over the turns, and over the wall time (awl serve is one
  process: its Python runs on one core at a time, so near 1 it is CPU-bound); the load average;
- awl's memory per idle episode: this process's RSS after every episode is open (before any
  turn) less before, over N;
- then the same (each run a fresh process) with one server killed (its process, as a crash)
  once half the turns are done: the sessions on it move to the others (one notice each) and
  their turn runs again there; "lost" counts turns a client was told were done that are not
  in the session files (must be 0), and the files' notices count the moves. The turns cut by
  the kill are retried on the dead server first (awl's --retries, with the client's backoff)
  before they move: that, not the move, is most of the time the killed run takes beyond the
  others (`--retries 0` shows it).

    .venv/bin/python bench/fleet_scale.py [--quick] [--episodes N] [--places P] [--turns T] [--delay S]
                                         [--face rest|openenv|both] [--no-kill] [--retries N]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

from bench_models import table  # noqa: E402

ANSWER = "<predicted_observation>\nfile.txt  notes.md  src\n</predicted_observation>"
FACES = {"rest": "REST", "openenv": "OpenEnv WebSocket"}
ENV = {**os.environ, "PYTHONPATH": str(BENCH.parent)}


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
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_keep_alive=600,
                                                    ws_ping_interval=None, backlog=4096))
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


class FakeServer:
    """bench/fleet_fake_server.py in a process of its own."""

    def __init__(self, places: int, delay: float) -> None:
        self.process = subprocess.Popen([sys.executable, str(BENCH / "fleet_fake_server.py"), str(places), str(delay),
                                         ANSWER], stdout=subprocess.PIPE, text=True, env=ENV)
        self.port = int(self.process.stdout.readline())
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.last_stats: dict = {}

    def stats(self) -> dict:
        if self.process.poll() is None:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=30) as answer:
                self.last_stats = json.loads(answer.read())
        return self.last_stats

    def cpu(self) -> float:
        """Its CPU seconds so far (its last known once it is gone)."""
        try:
            with open(f"/proc/{self.process.pid}/stat") as stat:
                fields = stat.read().rpartition(")")[2].split()
            self._cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError):
            pass
        return getattr(self, "_cpu", 0.0)

    def kill(self) -> None:
        self.stats()  # what it took before it dies
        self.cpu()
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _app(face: str, folder: Path, fleet, n: int, turns: int):
    from agentworld_local.serve.limits import ServeLimits

    # Room to spare: the registry counts a session that is just opening twice for a moment.
    limits = ServeLimits(max_sessions=2 * n + 8, max_turns=turns + 1, idle_s=3600)
    if face == "rest":
        from agentworld_local.serve.app import make_app

        return make_app(folder=folder, backend=fleet, limits=limits)
    from agentworld_local.serve.openenv import make_openenv_app

    return make_openenv_app(folder=folder, backend=fleet, limits=limits)


def one_run(face: str, n: int, places: int, turns: int, delay: float, kill_halfway: bool,
            retries: int | None = None) -> dict:
    from agentworld_local.engine.remote.fleet import Fleet
    from agentworld_local.engine.remote.options import RemoteOptions
    from agentworld_local.trajectory.reader import read_trajectory

    servers = [FakeServer(places, delay) for _ in range(3)]
    try:
        with tempfile.TemporaryDirectory() as folder:
            options = RemoteOptions([server.base_url for server in servers], "world")
            fleet = Fleet(replace(options, retries=retries) if retries is not None else options)
            with Served(_app(face, Path(folder), fleet, n, turns)) as url:
                child = subprocess.Popen([sys.executable, str(BENCH / "fleet_clients.py"), face, url, str(n), str(turns)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ENV)
                before = rss()
                assert child.stdout.readline().strip() == "opened", "the clients could not open their episodes"
                grown = rss() - before
                servers_cpu = [server.cpu() for server in servers]
                cpu_before, times_before = time.process_time(), os.times()
                child.stdin.write("go\n")
                child.stdin.flush()
                for line in child.stdout:
                    if line.strip() == "half":
                        if kill_halfway:
                            servers[1].kill()
                    elif line.strip() == "played":
                        cpu = time.process_time() - cpu_before  # awl serve's, while the turns ran
                        system = os.times().system - times_before.system  # of which in the kernel
                        servers_cpu = sum(server.cpu() for server in servers) - sum(servers_cpu)
                        load = os.getloadavg()[0]
                    else:
                        result = json.loads(line)
                        break
                child.wait()
                stats = [server.stats() for server in servers]
            in_files, moved = {}, 0
            for path in Path(folder).glob("*.jsonl"):
                trajectory = read_trajectory(path)
                in_files[path.stem] = len(trajectory.turns)
                moved += sum(len(turn.extra.get("notices", [])) for turn in trajectory.turns)
            lost = sum(max(done - in_files.get(sid, 0), 0) for sid, done in result["turns_by_session"].items())
            return {**result, "client_cpu": result["cpu"], "grown": grown, "lost": lost, "moved": moved, "cpu": cpu, "system": system, "servers_cpu": servers_cpu,
                    "load": load, "refused": sum(stat.get("refused", 0) for stat in stats),
                    "requests": [stat.get("requests", "?") for stat in stats],
                    "connections": [stat.get("connections", "?") for stat in stats]}
    finally:
        for server in servers:
            server.close()


def section(quick: bool, *, episodes_n: int | None = None, places: int | None = None, turns: int | None = None,
            delay: float | None = None, faces: tuple[str, ...] = ("rest", "openenv"), kills: tuple[bool, ...] = (False, True),
            retries: int | None = None) -> str:
    n = episodes_n or (150 if quick else 2000)
    places = places or (16 if quick else 64)
    turns = turns or (2 if quick else 3)
    delay = 1.0 if delay is None else delay
    ideal = n / (3 * places) * turns * delay
    rows = []
    for face in faces:
        for kill in kills:
            label = f"{FACES[face]}, {'1 of 3 killed halfway' if kill else '3 servers'}"
            # Each run in a fresh process: memory the first one freed would hide the second one's growth.
            ran = subprocess.run([sys.executable, __file__, "--run", face, str(n), str(places), str(turns), str(delay),
                                  str(int(kill)), "-" if retries is None else str(retries)],
                                 capture_output=True, text=True, env=ENV)
            if ran.returncode != 0:
                rows.append([label, f"failed: {ran.stderr.strip().splitlines()[-1:]}"] + [""] * (len(HEADER) - 2))
                continue
            run = json.loads(ran.stdout.strip().splitlines()[-1])
            done = max(run["done_turns"], 1)
            rows.append([label, f"{run['done_turns']:,}/{n * turns:,}", run["errors"], f"{run['busy']} + {run['refused']}",
                         f"{run['seconds']:.1f}", f"{ideal:.1f}", f"{run['seconds'] / ideal:.2f}x",
                         f"{run['cpu'] / done * 1000:.2f} ({run['client_cpu'] / done * 1000:.1f} / "
                         f"{run['servers_cpu'] / done * 1000:.1f})", f"{run['cpu'] / run['seconds']:.2f}",
                         f"{run['load']:.1f}",
                         f"{run['grown'] / max(run['opened'], 1) / 1024:.1f}", run["lost"], run["moved"],
                         " / ".join(str(count) for count in run["requests"])])
            if run["first_error"]:
                rows[-1][2] = f"{run['errors']} (first: {run['first_error']})"
    return "\n\n".join([
        "## Many episodes over a fleet of three servers (awl serve: REST and OpenEnv WebSocket)",
        f"{n:,} episodes at once, {turns} turns each, over 3 loopback servers of {places} places each that answer "
        f"after {delay:g} s (429 beyond their places). Ideal: {n:,} / {3 * places} places x {turns} turns x "
        f"{delay:g} s = {ideal:.1f} s (with one server killed halfway, its places are gone for the second half). "
        "Busy: 429/503 from awl serve + 429 from a server. CPU: awl serve's process while the turns ran, per turn "
        "(the clients' / the servers' processes in brackets), and per second of wall time (one process: its Python "
        "runs on one core at a time); load: the 1-minute load average at the end (2 cores). Memory: awl serve's RSS "
        "growth with every episode open, before any turn, per episode.",
        table(HEADER, rows),
    ])


HEADER = ["run", "turns done", "errors", "busy", "wall s", "ideal s", "wall / ideal", "awl CPU ms per turn",
          "awl CPU s per s", "load", "KiB per idle episode", "completed turns lost", "moves (notices)",
          "requests per server"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="150 episodes, 16 places, 2 turns")
    parser.add_argument("--episodes", type=int)
    parser.add_argument("--places", type=int)
    parser.add_argument("--turns", type=int)
    parser.add_argument("--delay", type=float)
    parser.add_argument("--face", choices=("rest", "openenv", "both"), default="both")
    parser.add_argument("--no-kill", action="store_true", help="only the run with every server up")
    parser.add_argument("--retries", type=int, help="awl's --retries (default: awl serve's)")
    parser.add_argument("--run", nargs=7, metavar=("FACE", "N", "PLACES", "TURNS", "DELAY", "KILL", "RETRIES"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        face, n, places, turns, delay, kill, retries = args.run
        print(json.dumps(one_run(face, int(n), int(places), int(turns), float(delay), kill == "1",
                                 None if retries == "-" else int(retries))))
        return
    faces = ("rest", "openenv") if args.face == "both" else (args.face,)
    print(section(args.quick, episodes_n=args.episodes, places=args.places, turns=args.turns, delay=args.delay,
                  faces=faces, kills=(False,) if args.no_kill else (False, True), retries=args.retries))


if __name__ == "__main__":
    main()
