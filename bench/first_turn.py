"""A warm first turn's first token: awl in a new process and inside `awl serve`, against llama-server's second request.

Every side answers the same terminal sessions (the domain's system prompt, `--think off`,
greedy, 16-token answers), one action each: session 1 stores (untimed), sessions 2..N are
timed, the sides alternating per session on the same token ids.

* llama-server (the reference): the same model file, n_ctx, threads and batch sizes, one
  slot, its prompt cache as it ships. Session 1's prompt fills its cache; each later session's
  prompt ids, streamed (/completion, greedy): seconds from the request to the first streamed
  token on the client, and its `timings.prompt_n`.
* awl, a new process (`awl run`'s way): session 1 runs in a process of its own with an empty
  state-cache folder and exits; each later session is a new process on that folder whose first
  turn comes as soon as the model is loaded (no idle prefetch before it: a script's or an RL
  episode's action). Seconds from World.step to the first answer token (and to the first
  observation text); the prompt tokens the turn evaluated.
* awl serve: one `awl serve` (its own places and state cache, `--reveal-simulator`). Session 1
  is created and stepped and stays open; each later one is created, stepped at once
  (step/stream) and closed: once with the server idle, once right after session 1's next turn
  ended (its idle prefetch of the turn after has begun). Seconds from the step request to the
  first `answer` event (and the first `observation` or `untagged` text) on the client; the
  evaluated tokens from `turn_done`'s record.

    .venv/bin/python bench/first_turn.py [--quick] [--llama-server PATH] [--threads N]
    (`--worker` is the new-process side, started by the bench itself)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

from bench_models import LABELS, evaluated, model, table  # noqa: E402
from llama_server_binary import LlamaServer, binary_from_args, print_section_with_server  # noqa: E402

N_CTX, N_BATCH, MAX_TOKENS = 8192, 512, 16
ACTIONS = ["ls -la", "cat README.md", "git status", "pwd", "make test", "cd src", "python main.py", "git diff",
           "uname -a", "df -h", "whoami", "echo hello"]
SESSION = {"domain": "terminal", "think": "off", "temperature": 0, "max_tokens": MAX_TOKENS, "seed": 1}
TARGET = 1.3
#: CPU threads of every side (`--threads N`); None: llama.cpp's choice (llama-cpp-python's: half the
#: CPUs for one-token decodes, all for batches). One thread each keeps a loaded machine's timings
#: from measuring how two threads wait for each other's core.
THREADS: int | None = None
SIDES = (("process", "a new process"), ("serve", "`awl serve`, a later session, the server idle"),
         ("serve_after", "`awl serve`, a later session right after another session's turn"))


# -- awl in a process of its own (`--worker`) ----------------------------------------------------


def worker(path: Path, cache_dir: Path, actions: list[str], others: list[str]) -> None:
    """Load the model with the state cache in `cache_dir`, play each action as a new session's
    first turn at once, print one JSON line per session (after one with the threads; then one
    with the prompt token ids of the `others` actions' first turns)."""
    from agentworld_local.domains import get_domain
    from agentworld_local.engine import events
    from agentworld_local.engine.llama import LlamaBackend
    from agentworld_local.engine.llama.state_cache import StateCache
    from agentworld_local.engine.settings import SessionSettings
    from agentworld_local.engine.types import SamplingConfig, ThinkBudget
    from agentworld_local.engine.world import World

    first_token = (events.ThinkingDelta, events.AnswerDelta, events.UntaggedDelta)
    shown_text = (events.ObservationDelta, events.UntaggedDelta)
    backend = LlamaBackend(path, n_ctx=N_CTX, n_batch=N_BATCH, gpu_layers=0, state_cache=StateCache(cache_dir),
                           threads=THREADS, notice=lambda text: None)
    params = backend._llm.context_params
    settings = SessionSettings(sampling=SamplingConfig(temperature=0, max_tokens=MAX_TOKENS),
                               think=ThinkBudget.parse("off"), seed=1)
    print(json.dumps({"threads": params.n_threads, "threads_batch": params.n_threads_batch}), flush=True)
    try:
        for action in actions:
            backend.reset()
            world = World(backend, get_domain("terminal"), settings)
            started = time.perf_counter()
            first = shown = None
            for event in world.step(action):
                now = time.perf_counter() - started
                if first is None and isinstance(event, first_token):
                    first = now
                if shown is None and isinstance(event, shown_text):
                    shown = now
                if isinstance(event, events.TurnFinished):
                    record = event.record
            total = time.perf_counter() - started
            print(json.dumps({"first": first if first is not None else total, "shown": shown,
                              "evaluated": record.tokens["prompt_evaluated"],
                              "prompt": evaluated(world.backend)[: record.tokens["prompt_total"]]}), flush=True)
        prompts = []
        for action in others:  # rendered and tokenized only, after the timed turns
            world = World(backend, get_domain("terminal"), settings)
            messages = world.messages_for(world.turn_prompt(world.domain.parse_action(action)))
            prompts.append(backend.tokenize(backend.render(messages, think=settings.think)[1]))
        print(json.dumps({"others": prompts}), flush=True)
    finally:
        backend.close()


def new_process(path: Path, cache_dir: Path, actions: list[str], others: list[str] = ()) -> tuple[dict, list[dict]]:
    """(threads and the others' prompts, one result per action) from a new worker process."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", str(path), str(cache_dir),
               json.dumps(actions), json.dumps(list(others)), str(THREADS or 0)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1200,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    if done.returncode != 0:
        raise RuntimeError(f"the worker failed: {done.stderr.strip().splitlines()[-1:]}")
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {**lines[0], **lines[-1]}, lines[1:-1]


# -- awl serve ------------------------------------------------------------------------------------


class Served:
    """One `awl serve` on loopback with `path`, a home and session folder of its own."""

    def __init__(self, path: Path, folder: Path) -> None:
        import httpx2

        from serve_load import free_port, start_server, wait_ready

        folder.mkdir(parents=True, exist_ok=True)
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        args = ["-m", str(path), "--ctx", str(N_CTX), "--gpu-layers", "0", "--reveal-simulator",
                *(["--threads", str(THREADS)] if THREADS else [])]
        self.process = start_server(args, folder, port, folder / "serve.log")
        wait_ready(self.base, self.process, timeout=600)
        self.http = httpx2.Client(base_url=self.base, timeout=600)

    def create(self) -> str:
        return self.http.post("/sessions", json=SESSION).raise_for_status().json()["id"]

    def step(self, sid: str, action: str) -> dict:
        """One turn of `sid`, streamed: seconds from the step request to the first answer token
        and to the first observation text, tokens evaluated."""
        first = shown = record = None
        started = time.perf_counter()
        with self.http.stream("POST", f"/sessions/{sid}/step/stream", json={"action": action}) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue
                now = time.perf_counter() - started
                event = json.loads(line[5:])
                name = event.get("event")
                if first is None and name in ("answer", "thinking", "untagged"):
                    first = now
                if shown is None and name in ("observation", "untagged"):
                    shown = now
                if name == "turn_done":
                    record = event.get("record") or {}
        total = time.perf_counter() - started
        return {"first": first if first is not None else total, "shown": shown,
                "evaluated": (record or {}).get("tokens", {}).get("prompt_evaluated", -1)}

    def session(self, action: str, *, after: str | None = None) -> dict:
        """A new session's first turn, stepped as soon as it exists, then closed; `after`: a
        session whose next turn ends just before (its idle prefetch then starts, as when RL
        episodes start back to back)."""
        if after is not None:
            self.step(after, "ls")
        sid = self.create()
        result = self.step(sid, action)
        self.http.delete(f"/sessions/{sid}").raise_for_status()
        return result

    def stop(self) -> None:
        self.http.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# -- llama-server ---------------------------------------------------------------------------------


def server_session(server: LlamaServer, prompt: list[int]) -> tuple[float, int]:
    """(seconds to the first streamed token, tokens llama-server evaluated) for one prompt."""
    body = {"prompt": prompt, "n_predict": MAX_TOKENS, "temperature": 0, "cache_prompt": True}
    first, prompt_n = None, -1
    for seconds, event in server.stream(body):
        if first is None:
            first = seconds
        if event.get("stop") and "timings" in event:
            prompt_n = event["timings"]["prompt_n"]
    return first, prompt_n


def start_server(binary: Path | None, path: Path, threads: dict) -> tuple[LlamaServer | None, str]:
    if binary is None:
        return None, "not found"
    from agentworld_local.engine.llama import loading

    # Repacking as awl loads it: where awl turns it off (AMX CPUs), llama-server's crashes some models.
    extra = () if loading._extra_buffers_safe() else ("--no-repack",)
    try:
        server = LlamaServer(binary, path, n_ctx=N_CTX, threads=threads["threads"],
                             threads_batch=threads["threads_batch"], n_batch=N_BATCH, n_ubatch=N_BATCH, extra=extra)
    except (RuntimeError, OSError) as error:
        return None, f"failed: {str(error).split(':')[0]}"
    return server, "ran" + (" (--no-repack)" if extra else "")


# -- one model --------------------------------------------------------------------------------------


def measure(path: Path, sessions: int, binary: Path | None, folder: Path) -> dict[str, object]:
    cache_dir = folder / "states"
    threads, (store,) = new_process(path, cache_dir, ACTIONS[:1])  # evaluates the prompt, stores its states
    server, server_status = start_server(binary, path, threads)
    served = None
    result: dict[str, object] = {"server": server_status, "store": store}
    runs: dict[str, list] = {"process": [], "serve": [], "serve_after": [], "server": []}
    try:
        if server is not None:
            server_session(server, store["prompt"])  # untimed: fills its cache
        served = Served(path, folder / "serve")
        first_session = served.create()  # session 1 stays open, as a client's would
        result["serve_store"] = served.step(first_session, ACTIONS[0])
        for number in range(1, sessions):
            # The serve sides' actions differ from the one their place held last (a closed session's).
            action, other = ACTIONS[number], ACTIONS[number + len(ACTIONS) // 2]
            told, (fresh,) = new_process(path, cache_dir, [action], [other])
            runs["process"].append(fresh)
            if server is not None:
                runs["server"].append(server_session(server, fresh["prompt"]))
            runs["serve"].append(served.session(action))
            if server is not None:
                runs["server"].append(server_session(server, told["others"][0]))
            runs["serve_after"].append(served.session(other, after=first_session))
    finally:
        if server is not None:
            server.stop()
        if served is not None:
            served.stop()
    result["prompt"] = statistics.median(len(s["prompt"]) for s in runs["process"])
    for side in ("process", "serve", "serve_after"):
        shown = [s["shown"] for s in runs[side] if s["shown"] is not None]
        result[side] = {"s": statistics.median(s["first"] for s in runs[side]),
                        "shown_s": statistics.median(shown) if shown else None,
                        "evaluated": statistics.median(s["evaluated"] for s in runs[side]),
                        "all": [s["first"] for s in runs[side]]}
    if runs["server"]:
        result["server_run"] = {"s": statistics.median(s for s, _ in runs["server"]),
                                "evaluated": statistics.median(n for _, n in runs["server"]),
                                "all": [s for s, _ in runs["server"]]}
    return result


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{value:.2f}" for value in values)


def section(quick: bool, binary: Path | None = None) -> str:
    binary = binary or binary_from_args()
    kinds, sessions = (["tiny"], 3) if quick else (["gemma", "big"], 6)
    rows = []
    load = os.getloadavg()
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="awl-first-turn-") as directory:
        for kind in kinds:
            path = model(kind)
            if path is None:
                rows.append([LABELS[kind], "not installed"] + [""] * 8)
                continue
            r = measure(path, sessions, binary, Path(directory) / kind)
            reference = r.get("server_run")
            for side, label in SIDES:
                mine = r[side]
                ratio = mine["s"] / reference["s"] if reference else None
                rows.append([
                    LABELS[kind], label, f"{r['prompt']:,.0f}",
                    f"{mine['evaluated']:,.0f}",
                    f"{reference['evaluated']:,.0f}" if reference else "",
                    f"{mine['s']:.3f}" + (f" / {mine['shown_s']:.3f}" if mine["shown_s"] is not None else ""),
                    f"{reference['s']:.3f}" if reference else r["server"],
                    (f"{ratio:.2f}x" + ("" if ratio <= TARGET and mine["evaluated"] <= reference["evaluated"]
                                        else " (not met)")) if reference else "",
                    _seconds(mine["all"]) + (" / " + _seconds(reference["all"]) if reference else ""),
                ])
    ended = os.getloadavg()
    threads = THREADS or "llama.cpp's choice (llama-cpp-python's: half the CPUs for one-token decodes, all for batches)"
    server_note = (f"llama-server: `{binary}`, repacking as awl loads." if binary else
                   "llama-server: not found (no `--llama-server`, AWL_LLAMA_SERVER or `llama-server` on PATH); "
                   "only awl is measured.")
    return "\n\n".join([
        "## A warm first turn's first token: awl's state cache against llama-server's prompt cache",
        f"A new terminal session's first turn (the domain's system prompt, `--think off`, greedy, {MAX_TOKENS}-token "
        f"answers, n_ctx {N_CTX:,}, n_batch = n_ubatch = {N_BATCH}, the same threads on every side) after session 1 "
        "stored its prompt: in a new awl process (the state cache on disk, written by session 1's own process; the "
        "action comes as soon as the model is loaded); as a later session of one `awl serve` (created, stepped at once "
        "over HTTP, closed; session 1 stays open), with the server idle, and right after session 1's next turn ended "
        "(its idle prefetch of its following turn has started: RL episodes started back to back); and as "
        "llama-server's next request (its slot's prompt cache, one slot). Median of sessions "
        f"2..{sessions}, each a different action (the serve sides' two sessions each another one), the sides "
        "alternating on the same token ids (llama-server answers each prompt awl answered). Seconds to the first "
        "answer token (awl also to the first observation text; the serve side on the client, as llama-server's), and "
        f"the prompt tokens each evaluated. Target: awl / llama-server at most {TARGET}x, evaluating no more tokens. "
        f"{server_note} Threads: {threads} on every side. Load average (1, 5, 15 min) when it started: "
        f"{load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}; when it ended, {(time.time() - started) / 60:.0f} min later: "
        f"{ended[0]:.2f}, {ended[1]:.2f}, {ended[2]:.2f}.",
        table(["model", "awl side", "prompt tokens", "awl evaluated", "llama-server evaluated",
               "awl first token / observation (s)", "llama-server first token (s)", "awl / llama-server",
               "each session: awl / llama-server (s)"], rows),
    ])


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        THREADS = int(sys.argv[6]) or None
        worker(Path(sys.argv[2]), Path(sys.argv[3]), json.loads(sys.argv[4]), json.loads(sys.argv[5]))
    else:
        if "--threads" in sys.argv:
            at = sys.argv.index("--threads")
            THREADS = int(sys.argv[at + 1])
            del sys.argv[at : at + 2]
        print_section_with_server(section, __doc__)
