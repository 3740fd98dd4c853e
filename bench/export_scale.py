"""Time and memory of `awl export` for long trajectories (numbers only, no pass/fail).

Each exported row carries every turn of the session (the benchmark's layout), so the
output of an N-turn session is N rows of N turns: its size grows with N². The export
must cost no more than writing those bytes, and hold one row at a time: the peak memory
per row printed here should stay flat as N grows. Each size runs in its own process, so
the peak RSS is that export's own.

    .venv/bin/python bench/export_scale.py [--turns 1000 5000 10000] [--out /dev/null]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def write_session(path: Path, turns: int) -> None:
    """A session as `awl run` writes it, with short turns (a shell session)."""
    from agentworld_local.trajectory import Header, TrajectoryWriter, TurnRecord

    with TrajectoryWriter.create(path, Header(domain="terminal", system_prompt="You simulate a terminal.")) as writer:
        parent = None
        for n in range(1, turns + 1):
            record = TurnRecord(action=f"echo {n}", observation=f"{n}\n$ ", parent=parent,
                                prompt=f"### Turn {n}\n**Action:**\necho {n}")
            parent = writer.append(record).id


def child(path: str, out: str) -> None:
    """Runs in a fresh process: export `path` to `out`, print one JSON line of measurements."""
    from agentworld_local.trajectory import read_trajectory
    from agentworld_local.agentworldbench.export import ExportPlan

    started = time.perf_counter()
    traj = read_trajectory(path)
    read_s = time.perf_counter() - started
    plan = ExportPlan(traj)
    written = 0
    with open(out, "wb") as handle:
        for chunk in plan.chunks():
            handle.write(chunk)
            written += len(chunk)
    total_s = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"rows": len(plan), "bytes": written, "read_s": read_s, "total_s": total_s, "peak_kib": peak_kib}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--out", default=os.devnull, help="Where the rows go (default: discarded).")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    print(f"{'turns':>7} {'rows':>7} {'output':>10} {'read s':>8} {'export s':>9} {'MB/s':>7} {'peak RSS':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for turns in args.turns:
            path = Path(tmp) / f"s{turns}.jsonl"
            write_session(path, turns)
            result = subprocess.run([sys.executable, __file__, "--child", str(path), args.out],
                                    capture_output=True, text=True, check=True)
            m = json.loads(result.stdout)
            rate = m["bytes"] / 1e6 / max(m["total_s"], 1e-9)
            print(f"{turns:>7} {m['rows']:>7} {m['bytes'] / 1e6:>8.1f}MB {m['read_s']:>8.2f} {m['total_s']:>9.2f} "
                  f"{rate:>7.0f} {m['peak_kib'] / 1024:>7.1f}MB")


if __name__ == "__main__":
    main()
