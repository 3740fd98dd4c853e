"""Sessions beyond the model's places, against llama.cpp's llama-server with as many slots and clients.

RL runs more episodes than the model has places (sequences). For each model (the hybrid
``big`` fixture, the attention-only ``llama`` test fixture, Gemma 3 270M) and N = 2, 4, 8 places:

* awl, N on N: a model loaded with N places (`LlamaBackend(parallel=N)`), N terminal sessions
  (`--think off`, temperature 0, 16-token answers) through one SessionRunner as `awl serve` runs them;
* awl, 2N on N: the same model, 2N sessions: a session's place is taken by another between its
  turns, its state parked (engine/llama/parking.py) and set back when it gets a place again;
* llama-server, 2N on N: llama.cpp's server (bench/llama_server_binary.py) with `-np N`, the same
  n_ctx per slot (`-c N x n_ctx`), threads and batch sizes as the awl side, its prompt cache,
  cache reuse and context checkpoints as it ships, and 2N clients at once: the same sessions
  through awl's runner with the remote backend, the same chat messages (the server renders them
  with the model's template), each turn's counts from the server's own `timings`.

Each session's actions are its own from its first turn (a run's tag in the first), so nothing but
the system prompt is shared between sessions or with an earlier run on the same model or server.
Every session's first turn is sent at once and not timed (each evaluates the system prompt, or
finds it in its place: a one-off that another section measures); then every session is a client
that sends its next action as soon as its answer came. Per setting: prompt tokens each turn
evaluated (median and mean over every session's turns after its first; mean over all turns),
generated tokens per second of all sessions' later turns together (wall clock from their first
action to the last answer), and awl's parked states (parked / set back / spilled, milliseconds
per copy, MiB held at the end). The
targets (issue 43): awl 2N on N evaluates per later session-turn within 1.2x of N on N, and its
tokens/s is at least 1.5x llama-server's with 2N clients on N slots. The 2N settings of awl and
llama-server alternate (`repeats` times; medians), both loaded, so a busy neighbour slows both.

    .venv/bin/python bench/swap_places.py [--quick] [--llama-server PATH]
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import CACHE, LABELS, model, table  # noqa: E402
from llama_server_binary import LlamaServer, binary_from_args, print_section_with_server  # noqa: E402

from agentworld_local.engine.llama import LlamaBackend  # noqa: E402
from agentworld_local.fixtures.tiny_gguf import ensure_fixture  # noqa: E402
from agentworld_local.models.offload_options import OffloadOptions  # noqa: E402
from agentworld_local.session.runner import NewSession, SessionRunner  # noqa: E402
from agentworld_local.session.spec import SessionSpec  # noqa: E402
from agentworld_local.testing import LentBackend  # noqa: E402
from agentworld_local.trajectory.reader import read_trajectory  # noqa: E402

N_CTX = 4096  # per place (awl) and per slot (llama-server)
N_BATCH = 512  # awl loads with n_batch = n_ubatch
MAX_TOKENS = 16
#: Session s's turn t runs ACTIONS[(s + t) % len]; its first names the run and the session.
ACTIONS = ("ls -la", "cat README.md", "pwd", "git status", "echo hello", "cd src", "whoami", "df -h",
           "cat notes.txt", "python3 --version", "head -n 3 /etc/passwd", "uname -a")
PROMPT_TARGET, RATE_TARGET = 1.2, 1.5
KIND_LABELS = {**LABELS, "big": "qwen35moe hybrid fixture, hidden 512",
               "llama": "llama test fixture, hidden 64, 2 layers (attention only)"}


def bench_path(kind: str) -> Path | None:
    if kind == "llama":
        return ensure_fixture("llama", CACHE)
    return model(kind)


def actions(run: str, session: int, turns: int) -> list[str]:
    first = f"mkdir -p /tmp/{run}-{session} && cd /tmp/{run}-{session} && {ACTIONS[session % len(ACTIONS)]}"
    return [first] + [ACTIONS[(session + t) % len(ACTIONS)] for t in range(1, turns)]


@dataclass
class Result:
    later: list[int]  # prompt tokens evaluated by every session's turns after its first
    every: list[int]  # ... by all turns
    generated: int
    seconds: float
    parked: int = 0
    restored: int = 0
    spilled: int = 0
    move_ms: float = 0.0
    held: int = 0  # bytes of parked states at the end (the sessions waiting for a place)
    estimated: int = 0  # turns whose prompt count was awl's estimate (the server said none)

    @property
    def rate(self) -> float:
        return self.generated / self.seconds


class Clients(LentBackend):
    """A backend lent to one runner that sends `parallel` turns at once (llama-server: its -np N
    slots take N, the others wait in its queue, as 2N clients would have them)."""

    def __init__(self, backend: Any, parallel: int) -> None:
        super().__init__(backend)
        self.parallel = parallel


def drive(backend: Any, sessions: int, turns: int, folder: Path, run: str) -> Result:
    """`sessions` sessions through one runner: every session's first turn at once (each evaluates
    the system prompt, or finds it in its place: not timed), then each session a client that sends
    its next action as soon as its answer came, timed from the first of those to the last answer;
    every count read back from the trajectories."""
    folder.mkdir(parents=True)
    runner = SessionRunner(backend=backend)
    files = [folder / f"s{number}.jsonl" for number in range(sessions)]
    plans = [actions(run, number, turns) for number in range(sessions)]
    failures: list[BaseException] = []
    try:
        for number, out in enumerate(files):
            spec = SessionSpec(domain="terminal", think="off", temperature=0.0, max_tokens=MAX_TOKENS, seed=number)
            runner.open(NewSession.from_spec(spec.resolve(), out)).wait().raise_failure()
        for sending in [runner.step(str(out), plans[number][0]) for number, out in enumerate(files)]:
            sending.wait().raise_failure()

        def client(number: int) -> None:
            try:
                for action in plans[number][1:]:
                    runner.step(str(files[number]), action).wait().raise_failure()
            except BaseException as error:  # noqa: BLE001 - said after the run
                failures.append(error)

        threads = [threading.Thread(target=client, args=(number,)) for number in range(sessions)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - started
    finally:
        runner.close().wait()
    if failures:
        raise failures[0]
    later, every, generated, estimated = [], [], 0, 0
    for out in files:
        records = read_trajectory(out).turns
        assert len(records) == turns, (out, len(records))
        counts = [record.token_count("prompt_evaluated") or 0 for record in records]
        every += counts
        later += counts[1:]
        generated += sum(record.token_count("generated") or 0 for record in records[1:])
        estimated += sum(record.estimated("prompt_evaluated") for record in records)
    return Result(later, every, generated, seconds, estimated=estimated)


def awl_run(backend: LlamaBackend, sessions: int, turns: int, folder: Path, run: str) -> Result:
    parked = backend.parked
    before = (parked.parked, parked.restored, parked.spilled, parked.seconds)
    result = drive(LentBackend(backend), sessions, turns, folder, run)
    result.held = parked.bytes + parked.disk_bytes  # measured after the runner closed: sessions dropped theirs
    result.parked, result.restored, result.spilled = (parked.parked - before[0], parked.restored - before[1],
                                                      parked.spilled - before[2])
    moves = result.parked + result.restored
    result.move_ms = (parked.seconds - before[3]) * 1000 / max(moves, 1)
    return result


def _mean(values: list[int]) -> float:
    return statistics.fmean(values) if values else 0.0


def _row(label: str, setting: str, runs: list[Result], awl: bool) -> list[str]:
    last = runs[-1]
    return [label, setting, f"{statistics.median(last.later):.0f} / {_mean(last.later):.1f}", f"{_mean(last.every):.1f}",
            f"{last.generated:,}", f"{statistics.median(r.rate for r in runs):.1f}",
            f"{statistics.median(r.seconds for r in runs):.1f}",
            f"{last.parked}/{last.restored}/{last.spilled}" if awl else "",
            f"{statistics.median(r.move_ms for r in runs):.2f}" if awl else "",
            f"{last.held / 2**20:.1f}" if awl else (f"{last.estimated} estimated" if last.estimated else "")]


def measure(kind: str, n: int, turns: int, repeats: int, binary: Path | None, folder: Path,
            rows: list[list[str]], summary: list[list[str]]) -> None:
    path = bench_path(kind)
    if path is None:
        rows.append([f"{KIND_LABELS[kind]}, N = {n}", "not measured (not installed)"] + [""] * 8)
        return
    label = f"{KIND_LABELS[kind]}, N = {n}"
    # No idle prefetch between turns: what it evaluates would be counted by no turn.
    backend = LlamaBackend(path, n_ctx=N_CTX, gpu_layers=0, parallel=n, n_batch=N_BATCH, notice=lambda text: None,
                           offload=OffloadOptions(prefetch=False))
    import llama_cpp

    threads, batch_threads = llama_cpp.llama_n_threads(backend._ctx), llama_cpp.llama_n_threads_batch(backend._ctx)
    with contextlib.ExitStack() as stack:
        stack.callback(backend.close)
        server = remote = None
        if binary is not None:
            from agentworld_local.engine.remote.backend import OpenAIBackend
            from agentworld_local.engine.remote.options import RemoteOptions

            server = stack.enter_context(LlamaServer(
                binary, path, n_ctx=n * N_CTX, threads=threads, threads_batch=batch_threads, n_batch=N_BATCH,
                n_ubatch=N_BATCH, extra=("--parallel", str(n), "--jinja", "--alias", "world")))
            remote = OpenAIBackend(RemoteOptions(server.url + "/v1", "world"), parallel=n)
            stack.callback(remote.close)
        tag = f"{kind}{n}"
        alone = awl_run(backend, n, turns, folder / f"{tag}-alone", f"{tag}a")  # first: it warms the model
        swapped: list[Result] = []
        served: list[Result] = []
        for repeat in range(repeats):
            swapped.append(awl_run(backend, 2 * n, turns, folder / f"{tag}-swapped{repeat}", f"{tag}s{repeat}"))
            if remote is not None:
                served.append(drive(Clients(remote, 2 * n), 2 * n, turns, folder / f"{tag}-server{repeat}",
                                    f"{tag}l{repeat}"))
    rows.append(_row(label, f"awl, {n} on {n}", [alone], True))
    rows.append(_row("", f"awl, {2 * n} on {n}", swapped, True))
    if served:
        rows.append(_row("", f"llama-server -np {n}, {2 * n} clients", served, False))
    prompt_ratio = _mean(swapped[-1].later) / max(_mean(alone.later), 1e-9)
    rate = statistics.median(r.rate for r in swapped)
    server_prompt = f"{_mean(served[-1].later):.1f}" if served else "not measured"
    if served:
        rate_ratio = rate / statistics.median(r.rate for r in served)
        rate_cell = f"{rate_ratio:.2f}x {'met' if rate_ratio >= RATE_TARGET else 'NOT met'}"
    else:
        rate_cell = "not measured (no llama-server)"
    summary.append([label, f"{_mean(alone.later):.1f}", f"{_mean(swapped[-1].later):.1f}",
                    f"{prompt_ratio:.2f}x {'met' if prompt_ratio <= PROMPT_TARGET else 'NOT met'}", server_prompt,
                    f"{rate / alone.rate:.2f}x", rate_cell])
    print(f"  {time.strftime('%H:%M:%S')} measured {label}: {summary[-1][1:]}; "
          + " || ".join(" | ".join(row) for row in rows[-3:]),
          file=sys.stderr, flush=True)


def section(quick: bool, binary: Path | None = None) -> str:
    binary = binary or binary_from_args()
    if quick:
        kinds, places, turns, repeats = ["tiny"], (2,), 3, 1
    else:
        kinds, places, turns, repeats = ["big", "llama", "gemma"], (2, 4, 8), 4, 1
    rows: list[list[str]] = []
    summary: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="awl-swap-places-") as directory:
        for kind in kinds:
            for n in places:
                measure(kind, n, turns, repeats, binary, Path(directory), rows, summary)
    waits = os.environ.get("OMP_WAIT_POLICY")
    server = (f"OpenMP threads wait {'as OMP_WAIT_POLICY=' + waits + ' says' if waits else 'as libgomp defaults (spinning first)'} "
              "on both sides. " if binary else "")
    server += (f"llama-server: `{binary}`" if binary else
              "_llama-server not measured: give `--llama-server PATH` or set AWL_LLAMA_SERVER._")
    return "\n\n".join([
        "## Sessions beyond the model's places (parked states) against llama-server",
        f"N places (awl `--parallel N`; llama-server `-np N`, `-c` N x {N_CTX:,} so each slot has {N_CTX:,} tokens "
        "like each awl place, the same threads and batch sizes, everything else as it ships), N or 2N terminal "
        f"sessions of {turns} turns each (temperature 0, {MAX_TOKENS}-token answers, each session's own actions; awl "
        "without idle prefetch, so each turn counts all it evaluates): every session's first turn at once, not "
        "timed, then every session a client that sends its next action as soon as its answer came. Prompt tokens "
        "evaluated per session-turn after each session's first (median / mean) and over all turns (mean); tokens "
        "generated in the later turns of all sessions, per second of wall clock, and the wall time (the median of "
        f"{repeats} alternating run(s) of the 2N settings); awl's states "
        "parked / set back / spilled, the milliseconds each copy took (with the wait for the round in flight) and "
        f"MiB parked at the end. Measured in one run, CPU. {server}",
        table(["model, places", "setting", "later turns: prompt tokens (median / mean)", "all turns (mean)",
               "generated", "tokens/s", "wall s", "parked / restored / spilled", "ms each", "parked MiB"], rows),
        f"Targets: awl's prompt tokens per later session-turn with 2N on N within {PROMPT_TARGET}x of N on N, and "
        f"awl's tokens/s with 2N on N at least {RATE_TARGET}x llama-server's with 2N clients on N slots.",
        table(["model, places", "awl N on N (mean)", "awl 2N on N (mean)", f"2N / N (<= {PROMPT_TARGET}x)",
               "llama-server 2N on N (mean)", "tokens/s awl 2N / N on N",
               f"tokens/s awl / llama-server, 2N on N (>= {RATE_TARGET}x)"], summary),
    ])


if __name__ == "__main__":
    print_section_with_server(section, __doc__)
