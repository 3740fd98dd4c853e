"""Shared worlds under a GRPO-shaped workload: model turns, wall time, reward spread, store cost.

Each task is a group of rollouts (8) of 6 steps; a group's rollouts share their first 2 actions
and then act differently (as a policy's samples do). Without a world every rollout has its own
seed (as trainers give them, so a group is not 8 copies of one rollout) and imagines its own
world; with a world, the group's rollouts join one shared world with one seed. Printed, each
pair measured in one run:
- model turns (turns the model predicted) and wall time, with a world and without;
- the reward spread across identical action replays: the same 6 actions replayed by 8 rollouts,
  scored by a reward of the last observation (std; 0 means every replay met the same world);
- the store's cost per step (a served turn's wall time, and the store's own get/put);
- two `awl serve` processes sharing one worlds folder: identical prefixes, identical observations.

Over the scripted model (no model time: what is timed is awl's own work, one fsync per turn) and
over the tiny qwen35moe GGUF fixture (the real llama.cpp path, temperature 0.6, thinking off).

    python bench/worlds_grpo.py [--quick] [--tasks 64] [--gguf-tasks 4]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_models import model, table  # noqa: E402

from agentworld_local.domains import get_domain  # noqa: E402
from agentworld_local.engine.scripted import ScriptedBackend  # noqa: E402
from agentworld_local.engine.settings import SessionSettings  # noqa: E402
from agentworld_local.engine.types import SamplingConfig, ThinkBudget  # noqa: E402
from agentworld_local.engine.world import WORLD_KEY, World  # noqa: E402
from agentworld_local.session.core import Session  # noqa: E402
from agentworld_local.worlds.sqlite_store import SqliteWorldStore  # noqa: E402
from agentworld_local.worlds.store import StoredAnswer  # noqa: E402

ROLLOUTS, STEPS, SHARED = 8, 6, 2
COMMANDS = ["ls", "pwd", "df -h", "cat notes.txt", "whoami", "uname -a", "ps aux", "du -sh .", "id", "env",
            "date", "uptime", "free -m", "git status", "git log", "history"]


def actions(task: int, rollout: int) -> list[str]:
    """The group's first SHARED actions, then this rollout's own."""
    shared = [f"cd /task{task}", COMMANDS[task % len(COMMANDS)]]
    own = [f"{COMMANDS[(task + rollout * 3 + step) % len(COMMANDS)]} # r{rollout}s{step}" for step in range(STEPS - SHARED)]
    return shared + own


def reward(observation: str) -> float:
    """A verifier's score of the last observation (deterministic in its text)."""
    return int(hashlib.sha256(observation.encode("utf-8", "surrogatepass")).hexdigest()[:8], 16) / 2**32


def scripted_model() -> ScriptedBackend:
    texts = [f"<think>\nt\n</think>\n<predicted_observation>\nout {index}\n</predicted_observation>" for index in range(97)]
    return ScriptedBackend(texts, name="grpo-bench")


def gguf_model():
    from agentworld_local.engine.llama.backend import LlamaBackend

    return LlamaBackend(model("tiny"), n_ctx=4096, gpu_layers=0)


def settings(seed: int, world: str | None, temperature: float) -> SessionSettings:
    return SessionSettings(sampling=SamplingConfig(temperature=temperature, max_tokens=24),
                           think=ThinkBudget.parse("off"), seed=seed, shared_world=world)


def run(backend, folder: Path, tasks: int, *, world: str | None, temperature: float) -> dict[str, float]:
    """The workload; the model turns it cost and its wall time."""
    predicted = served = 0
    started = time.perf_counter()
    served_s: list[float] = []
    for task in range(tasks):
        for rollout in range(ROLLOUTS):
            seed = task * 100 if world else task * 100 + rollout
            session = Session.create(World(backend, get_domain("terminal"), settings(seed, world, temperature)),
                                     folder / f"t{task}-r{rollout}-{world or 'own'}.jsonl")
            try:
                for action in actions(task, rollout):
                    turn_started = time.perf_counter()
                    record = session.world.run_turn(action)
                    source = record.extra.get(WORLD_KEY, {}).get("from", "model")
                    if source == "model":
                        predicted += 1
                    else:
                        served += 1
                        served_s.append(time.perf_counter() - turn_started)
            finally:
                session.close()
    return {"turns": predicted, "served": served, "wall_s": time.perf_counter() - started,
            "served_ms": 1000 * statistics.median(served_s) if served_s else 0.0}


def spread(backend, folder: Path, *, world: str | None, temperature: float) -> float:
    """The std of the reward over 8 rollouts that replay the same 6 actions."""
    rewards = []
    for rollout in range(ROLLOUTS):
        seed = 7 if world else 7 + rollout
        session = Session.create(World(backend, get_domain("terminal"), settings(seed, world, temperature)),
                                 folder / f"replay-{rollout}-{world or 'own'}.jsonl")
        try:
            last = [session.world.run_turn(action) for action in actions(999, 0)][-1]
        finally:
            session.close()
        rewards.append(reward(last.observation))
    return statistics.pstdev(rewards)


def store_cost(folder: Path, count: int = 2000) -> tuple[float, float]:
    """The store's own put and get, in microseconds each (a 1 KB answer)."""
    store = SqliteWorldStore(folder / "cost", "cost")
    answer = StoredAnswer("x" * 1024, "", "x" * 1024, "tag", "stop")
    started = time.perf_counter()
    for index in range(count):
        store.put(f"k{index}", 0, answer)
    put = time.perf_counter() - started
    started = time.perf_counter()
    for index in range(count):
        store.get(f"k{index}", 0)
    got = time.perf_counter() - started
    store.close()
    return 1e6 * put / count, 1e6 * got / count


def measure(label: str, make_backend, tasks: int, temperature: float) -> list[list[object]]:
    slug = label.replace(" ", "-")
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        os.environ["AWL_WORLDS_DIR"] = str(folder / "worlds")
        backend = make_backend()
        try:
            alone = run(backend, folder, tasks, world=None, temperature=temperature)
            shared = run(backend, folder, tasks, world=f"grpo-{slug}", temperature=temperature)
            spread_alone = spread(backend, folder, world=None, temperature=temperature)
            spread_world = spread(backend, folder, world=f"replay-{slug}", temperature=temperature)
        finally:
            backend.close()
    return [
        [label, f"{tasks} x {ROLLOUTS} x {STEPS}", "without a world", alone["turns"], f"{alone['wall_s']:.1f}",
         f"{spread_alone:.3f}", "-"],
        [label, f"{tasks} x {ROLLOUTS} x {STEPS}", "shared world", shared["turns"], f"{shared['wall_s']:.1f}",
         f"{spread_world:.3f}", f"{shared['served_ms']:.2f}"],
        [label, "", "ratio (world / without)", f"{shared['turns'] / alone['turns']:.3f}",
         f"{shared['wall_s'] / alone['wall_s']:.3f}", "", ""],
    ]


def _serve(folder: Path, name: str, prefix: str, port: int) -> subprocess.Popen:
    """`awl serve` over a scripted model of its own answers (one model name for both: the file's)."""
    answers = folder / name / "answers.json"
    answers.parent.mkdir(parents=True)
    answers.write_text(json.dumps({"version": 1, "answers": [
        {"raw": f"<think>\nt\n</think>\n<predicted_observation>\n{prefix} {index}\n</predicted_observation>"}
        for index in range(97)]}), encoding="utf-8")
    env = {**os.environ, "AWL_HOME": str(folder / f"home-{name}"), "AWL_WORLDS_DIR": str(folder / "worlds"),
           "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    command = [sys.executable, "-m", "agentworld_local.cli.main", "serve", "--model", f"scripted:{answers}",
               "--dir", str(folder / name / "sessions"), "--port", str(port), "--shared-world", "two-servers",
               "--max-sessions", "100000"]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _post(url: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body or {}).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())


def two_servers(tasks: int) -> list[object]:
    """Groups whose rollouts alternate between two `awl serve` processes sharing one worlds
    folder: how many identical action prefixes met identical observations across the two."""
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        ports = []
        while len(ports) < 2:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                if (port := probe.getsockname()[1]) not in ports:
                    ports.append(port)
        servers = [_serve(folder, f"s{index}", f"P{index}", port) for index, port in enumerate(ports)]
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        try:
            for base in bases:
                while True:  # ready when /health answers (the bench waits as long as it takes)
                    try:
                        urllib.request.urlopen(f"{base}/health", timeout=5).close()
                        break
                    except OSError:
                        time.sleep(0.1)
            seen: dict[tuple[str, ...], set[str]] = {}
            started = time.perf_counter()
            for task in range(tasks):
                for rollout in range(ROLLOUTS):
                    base = bases[rollout % 2]
                    sid = _post(f"{base}/sessions", {"domain": "terminal", "seed": task, "think": "off"})["id"]
                    done: list[str] = []
                    for action in actions(task, rollout):
                        done.append(action)
                        observation = _post(f"{base}/sessions/{sid}/step", {"action": action})["observation"]
                        seen.setdefault(tuple(done), set()).add(observation)
            wall = time.perf_counter() - started
        finally:
            for server in servers:
                server.send_signal(signal.SIGTERM)
                server.wait(60)
    agreed = sum(1 for observations in seen.values() if len(observations) == 1)
    return [f"{tasks} x {ROLLOUTS} x {STEPS}", len(seen), agreed, f"{wall:.1f}"]


def section(quick: bool, tasks: int = 64, gguf_tasks: int = 4) -> str:
    tasks, gguf_tasks = (8, 1) if quick else (tasks, gguf_tasks)
    rows = measure("scripted", scripted_model, tasks, 0.6)
    rows += measure("tiny GGUF", gguf_model, gguf_tasks, 0.6)
    put_us, get_us = store_cost(Path(tempfile.mkdtemp()))
    across = two_servers(4 if quick else 16)
    expected = (SHARED + ROLLOUTS * (STEPS - SHARED)) / (ROLLOUTS * STEPS)
    return "\n".join([
        "## Shared worlds under GRPO (bench/worlds_grpo.py)",
        "",
        f"Groups of {ROLLOUTS} rollouts x {STEPS} steps sharing their first {SHARED} actions; rollouts run one "
        f"after another; temperature 0.6, thinking off. Ideal model-turn ratio: {expected:.3f}.",
        "",
        table(["model", "tasks x rollouts x steps", "run", "model turns", "wall s", "reward spread (std)",
               "served turn ms (median)"], rows),
        "",
        f"The store alone (SQLite, 1 KB answers): put {put_us:.0f} µs, get {get_us:.0f} µs.",
        "",
        "Two `awl serve` processes sharing one worlds folder, a group's rollouts alternating between them "
        "(scripted models whose answers differ; REST):",
        "",
        table(["tasks x rollouts x steps", "distinct action prefixes", "met one observation across both", "wall s"],
              [across]),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 scripted tasks, 1 GGUF task")
    parser.add_argument("--tasks", type=int, default=64)
    parser.add_argument("--gguf-tasks", type=int, default=4)
    args = parser.parse_args()
    print(section(args.quick, args.tasks, args.gguf_tasks))


if __name__ == "__main__":
    main()
