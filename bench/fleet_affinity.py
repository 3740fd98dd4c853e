"""Affinity against a real fleet: prompt tokens two llama-servers evaluate per turn when awl keeps
each session on its server (sticky, awl's placement) against round-robin (docs/remote.md, Fleet).

Two llama.cpp `llama-server`s on 127.0.0.1 (bench/llama_server_binary.py: `-np 2` each, context
checkpoints on, its RAM prompt cache as it ships, one thread each) over the same model; awl's
runner drives K terminal sessions over a Fleet of the two (`--base-url A --base-url B`), T turns
each, every session's turn at once per round (the fleet's places bound what runs together).
Sticky: a session opens on the least-loaded server and every turn goes there. Round-robin: each
turn after the first goes to the other server, as a router with no affinity sends it (the
Fleet's internal `placement="round-robin"`). A fresh pair of servers for each run, so both start
from empty caches.

Each session has its own actions from its first turn (no two sessions' conversations share more
than the system prompt), temperature 0, so both placements send the same conversations (the
`prompt tokens sent` column shows it). Counted: each turn's prompt tokens the server evaluated
(its `timings.prompt_n`, as awl records it in the turn's `tokens.prompt_evaluated`), per turn
(median and mean over every session's turns; turn 1 apart, as it is cold either way), in total,
and per server from each server's own `/metrics` (`llamacpp:prompt_tokens_total`, a cross-check
of the records); the ratio is round-robin over sticky. With more sessions than slots, the same
again with `--slot-prompt-similarity 0` (a slot by age, the session's state from the RAM cache).

    .venv/bin/python bench/fleet_affinity.py [--quick] [--llama-server PATH]
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import LABELS, model, table  # noqa: E402
from llama_server_binary import LlamaServer, binary_from_args, print_section_with_server  # noqa: E402

from agentworld_local.engine.remote.fleet import ROUND_ROBIN, STICKY, Fleet  # noqa: E402
from agentworld_local.engine.remote.options import RemoteOptions  # noqa: E402
from agentworld_local.session.runner import NewSession, SessionRunner  # noqa: E402
from agentworld_local.session.spec import SessionSpec  # noqa: E402
from agentworld_local.trajectory.reader import read_trajectory  # noqa: E402

#: Session s's turn t runs ACTIONS[(s + t) % len]: no two of up to 12 sessions send the same action in a turn.
ACTIONS = ("ls -la", "cat README.md", "pwd", "git status", "echo hello", "cd src", "whoami", "df -h",
           "cat notes.txt", "python3 --version", "head -n 3 /etc/passwd", "uname -a")
#: Each server: two slots, context checkpoints on (32 a slot: the shipped default, named), metrics to cross-check.
SERVER_ARGS = ("-np", "2", "--ctx-checkpoints", "32", "--jinja", "--alias", "world", "--metrics")
MAX_TOKENS = 32
#: A slot chosen by age, never by prompt similarity: the RAM prompt cache is asked for the request's best state.
SLOT_BY_AGE = ("--slot-prompt-similarity", "0")


@dataclass
class Run:
    placement: str
    sessions: int
    turns: int
    evaluated: list[list[int]] = field(default_factory=list)  # [session][turn]
    sent: list[list[int]] = field(default_factory=list)  # prompt_total
    estimated: int = 0  # turns whose counts were awl's estimate (the server said nothing)
    per_server: list[int] = field(default_factory=list)  # /metrics prompt_tokens_total
    cached: list[int] = field(default_factory=list)  # /metrics prompt_tokens_cached_total
    seconds: float = 0.0

    def flat(self, first: bool | None = None) -> list[int]:
        """Every turn's evaluated count (`first`: turn 1 only, False: the later turns)."""
        return [n for row in self.evaluated for t, n in enumerate(row) if first is None or (t == 0) == first]


def metrics(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/metrics", timeout=30) as reply:
        text = reply.read().decode()
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            found[name.split(":", 1)[-1]] = float(value)
    return found


def one_run(binary: Path, path: Path, sessions: int, turns: int, placement: str, folder: Path,
            extra: tuple[str, ...] = ()) -> Run:
    """K sessions x T turns over a fresh pair of servers (`extra`: more llama-server arguments)."""
    run = Run(placement, sessions, turns)
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(LlamaServer(binary, path, n_ctx=16384, threads=1, threads_batch=1, n_batch=512,
                                                   n_ubatch=512, extra=SERVER_ARGS + extra)) for _ in range(2)]
        fleet = Fleet(RemoteOptions([server.url + "/v1" for server in servers], "world"), placement=placement)
        runner = SessionRunner(backend=fleet)
        files = [folder / f"{placement}-{sessions}-{number}.jsonl" for number in range(sessions)]
        try:
            for number, out in enumerate(files):
                spec = SessionSpec(domain="terminal", think="off", temperature=0.0, max_tokens=MAX_TOKENS, seed=number)
                runner.open(NewSession.from_spec(spec.resolve(), out)).wait().raise_failure()
            started = time.perf_counter()
            for turn in range(turns):
                sent = [runner.step(str(out), ACTIONS[(number + turn) % len(ACTIONS)])
                        for number, out in enumerate(files)]
                for sending in sent:
                    sending.wait().raise_failure()
            run.seconds = time.perf_counter() - started
        finally:
            runner.close().wait()
        counts = [metrics(server.url) for server in servers]
    run.per_server = [int(c.get("prompt_tokens_total", 0)) for c in counts]
    run.cached = [int(c.get("prompt_tokens_cached_total", 0)) for c in counts]
    for out in files:
        records = read_trajectory(out).turns
        assert len(records) == turns, (out, len(records))
        run.evaluated.append([record.token_count("prompt_evaluated") or 0 for record in records])
        run.sent.append([record.token_count("prompt_total") or 0 for record in records])
        run.estimated += sum(record.estimated("prompt_evaluated") for record in records)
    return run


def later(run: Run) -> int:
    """Prompt tokens evaluated by every turn after the first (turn 1 is cold with either placement)."""
    return sum(run.flat(first=False))


def _stats(values: list[int]) -> str:
    return f"{statistics.median(values):,.0f} / {statistics.fmean(values):,.0f}" if values else ""


def section(quick: bool, binary: Path | None = None) -> str:
    binary = binary or binary_from_args()
    title = "## Sticky placement against round-robin: prompt tokens on a fleet of two llama-servers"
    if binary is None:
        return (f"{title}\n\n_Not measured: no llama-server (give `--llama-server PATH`, set AWL_LLAMA_SERVER, "
                "or put `llama-server` on PATH)._")
    attention = "gemma" if model("gemma") is not None else "llama"  # attention only: real weights where installed
    # (model, sessions, turns, more llama-server arguments): 4 sessions fill the fleet's 2 + 2 slots, 8 are twice
    # that; `-sps 0` makes llama-server pick a slot by age and restore the session's own state from its RAM cache.
    plan = ([("tiny", 4, 3, ())] if quick else
            [("big", 4, 10, ()), ("big", 8, 10, ()), ("big", 8, 10, SLOT_BY_AGE), (attention, 4, 10, ())])
    rows, by_turn = [], []
    with tempfile.TemporaryDirectory(prefix="awl-fleet-affinity-") as directory:
        for kind, sessions, turns, extra in plan:
            path = _model(kind)
            label = _label(kind)
            runs = {}
            for placement in (STICKY, ROUND_ROBIN):
                folder = Path(directory) / f"{kind}-{sessions}-{placement}{'-'.join(('',) + extra)}"
                folder.mkdir()
                runs[placement] = run = one_run(binary, path, sessions, turns, placement, folder, extra)
                print(f"[fleet_affinity] {kind} {sessions}x{turns} {' '.join(extra)} {placement}: "
                      f"evaluated {sum(run.flat()):,} "
                      f"(turns 2+: {sum(run.flat(first=False)):,}), per server {run.per_server}, {run.seconds:.1f} s",
                      file=sys.stderr, flush=True)
            sticky, robin = runs[STICKY], runs[ROUND_ROBIN]
            for run in (sticky, robin):
                total = sum(run.flat())
                rows.append([
                    label if run is sticky else "", f"{sessions} x {turns}" if run is sticky else "",
                    (" ".join(extra) or "as shipped") if run is sticky else "", run.placement,
                    f"{sum(map(sum, run.sent)):,}", f"{total:,}",
                    _stats(run.flat(first=True)), _stats(run.flat(first=False)),
                    " / ".join(f"{n:,}" for n in run.per_server), " / ".join(f"{n:,}" for n in run.cached),
                    f"{run.seconds:.1f}",
                    f"{total / sum(sticky.flat()):.2f}x" if run is robin else "1.00x",
                    f"{later(robin) / max(later(sticky), 1):.2f}x" if run is robin else "1.00x",
                    run.estimated,
                ])
            if not by_turn:
                for t in range(turns):
                    column = [statistics.fmean(row[t] for row in run.evaluated) for run in (sticky, robin)]
                    by_turn.append([t + 1, f"{statistics.fmean(row[t] for row in sticky.sent):,.0f}",
                                    f"{column[0]:,.0f}", f"{column[1]:,.0f}", f"{column[1] / max(column[0], 1):.1f}x"])
                first_label = f"{label}, {sessions} sessions"
    header = ["model", "sessions x turns", "llama-server", "placement", "prompt tokens sent", "evaluated, total",
              "turn 1: median / mean", "turns 2+: median / mean", "evaluated per server (/metrics)",
              "cached per server (/metrics)", "wall s", "total vs sticky", "turns 2+ vs sticky", "estimated turns"]
    intro = (
        "Two llama.cpp `llama-server`s on 127.0.0.1 (`-np 2` each, `--ctx-checkpoints 32`, the RAM prompt cache as "
        "shipped, one thread each), a fleet of both in awl (`--base-url` twice); awl's runner drives K terminal "
        f"sessions, T turns each (`--think off`, temperature 0, {MAX_TOKENS}-token answers, every session's own "
        "actions), once with awl's sticky placement and once round-robin (each turn after the first on the other "
        "server, as a router with no affinity), a fresh pair of servers for each. Prompt tokens evaluated per turn "
        "are the servers' own (`timings.prompt_n`, in each turn record); per server from `/metrics` "
        "(`prompt_tokens_total`, `prompt_tokens_cached_total`). Turn 1 is cold either way; the ratios are "
        "round-robin over sticky. `llama-server`: its arguments beyond these; as shipped it gives a request the slot "
        "whose prompt shares the most with it (`--slot-prompt-similarity 0.10`), which a long shared system prompt "
        "always passes, so with more sessions than slots a session's turn overwrites another session's slot and its "
        "own saved state in the RAM cache is not looked at; `--slot-prompt-similarity 0` takes the oldest slot and "
        "restores the request's best state from the RAM cache. Wall seconds are the turns' (the servers' time, "
        f"on whatever else the machine ran). llama-server: `{binary}`."
    )
    per_turn = table(["turn", "prompt tokens sent (mean)", "sticky evaluated (mean)", "round-robin evaluated (mean)",
                      "ratio"], by_turn)
    return "\n\n".join([title, intro, table(header, rows), f"Per turn ({first_label}):", per_turn])


def _model(kind: str) -> Path:
    if kind == "llama":
        from bench_models import CACHE
        from agentworld_local.fixtures.tiny_gguf import ensure_fixture

        return ensure_fixture("llama", CACHE)
    found = model(kind)
    if found is None:
        raise RuntimeError(f"model {kind!r} is not installed")
    return found


def _label(kind: str) -> str:
    return "llama test fixture, hidden 64, 2 layers (attention only)" if kind == "llama" else LABELS[kind]


if __name__ == "__main__":
    print_section_with_server(section, __doc__)
