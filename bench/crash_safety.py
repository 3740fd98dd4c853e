"""Crash safety: SIGKILL a real `awl run` at random moments and check that nothing completed is lost.

Each trial runs a script of several actions on the tiny `qwen35moe` fixture with `--json`,
kills the process after a random delay, then checks:
- every turn the process announced as done (`turn_done` on stdout, printed only after the
  turn's line was written and fsynced) is in the file, in order, with its action;
- the file reads (a line cut by the kill is skipped by the reader, never fatal);
- killed before anything was written, there is no file or an empty one, and no turn was announced.

Prints counts; no pass/fail threshold (tests/cli/test_crash_safety.py runs a few trials).

    .venv/bin/python bench/crash_safety.py [--trials 100] [--seed 1] [--max-delay 2.0]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ACTIONS = ["ls -la", "cd src", "cat main.py", "python main.py", "git status", "git diff", "pwd", "make test", "ls", "C-c"]
RUN_OPTIONS = ["--json", "--think", "16", "--max-tokens", "48", "--ctx", "8192", "--seed", "1"]


@dataclass(frozen=True)
class Trial:
    delay: float
    announced: int  # turns the process said were done before it died
    kept: int  # turns in the file afterwards
    finished: bool  # the run ended by itself before the kill
    problem: str  # "" when every announced turn is kept and the file reads

    @property
    def moment(self) -> str:
        if self.finished:
            return "after the end"
        return "mid-run" if self.announced else "before the first turn"


def run_trial(model: Path, workdir: Path, delay: float, *, after_turns: int = 0, actions: list[str] = ACTIONS) -> Trial:
    """Start `awl run` on `model`, SIGKILL it `delay` seconds after start (or after `after_turns`
    turns were announced), and check the file it left."""
    from agentworld_local.errors import AwlError
    from agentworld_local.trajectory.reader import read_trajectory

    workdir.mkdir(parents=True, exist_ok=True)
    script, out, events = workdir / "actions.txt", workdir / "s.jsonl", workdir / "events.jsonl"
    script.write_text("\n".join(actions) + "\n", encoding="utf-8")
    env = {**os.environ, "AWL_HOME": str(workdir / "home"), "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "agentworld_local.cli.main", "run", str(script), "-m", str(model), "-o", str(out),
               *RUN_OPTIONS]
    with events.open("w") as stdout:
        process = subprocess.Popen(command, stdout=stdout, stderr=subprocess.DEVNULL, env=env, cwd=REPO)
        deadline = time.monotonic() + 120
        while after_turns and process.poll() is None and time.monotonic() < deadline:
            if events.read_text(encoding="utf-8").count('"event": "turn_done"') >= after_turns:
                break
            time.sleep(0.005)
        time.sleep(delay)
        finished = process.poll() is not None
        if not finished:
            process.send_signal(signal.SIGKILL)
        process.wait()
    lines = events.read_text(encoding="utf-8").splitlines()
    done = [json.loads(line)["record"]["action"] for line in lines
            if line.endswith("}") and '"event": "turn_done"' in line]
    if not out.exists() or out.stat().st_size == 0:
        problem = f"{len(done)} turns announced but no file" if done else ""
        return Trial(delay, len(done), 0, finished, problem)
    try:
        kept = [turn.action for turn in read_trajectory(out).current_branch()]
    except AwlError as error:
        return Trial(delay, len(done), 0, finished, f"the file does not read: {error.one_line()}")
    problem = "" if kept[: len(done)] == done else f"announced {done}, kept {kept}"
    if kept != actions[: len(kept)]:
        problem = problem or f"kept turns out of order: {kept}"
    return Trial(delay, len(done), len(kept), finished, problem)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-delay", type=float, default=2.0, help="seconds; a 30-turn run takes about 2 s here")
    args = parser.parse_args()
    from agentworld_local.fixtures.tiny_gguf import ensure_fixture

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        model = ensure_fixture("qwen35moe", Path(tmp) / "gguf")
        trials = [run_trial(model, Path(tmp) / f"t{n}", rng.uniform(0.0, args.max_delay), actions=ACTIONS * 3)
                  for n in range(args.trials)]
    moments = Counter(trial.moment for trial in trials)
    bad = [trial for trial in trials if trial.problem]
    print(f"{len(trials)} SIGKILLs: " + ", ".join(f"{count} {moment}" for moment, count in sorted(moments.items())))
    print(f"turns announced as done: {sum(t.announced for t in trials)}; kept in the files: {sum(t.kept for t in trials)}")
    print(f"trials that lost a turn or left an unreadable file: {len(bad)}")
    for trial in bad[:10]:
        print(f"  after {trial.delay:.2f}s: {trial.problem}")


if __name__ == "__main__":
    main()
