"""Work proportional to the input: checking a huge os action, resuming a long session.

Prints, for inputs of 1x, 2x and 4x a base size, the seconds and the peak memory (RSS) of
a fresh process, so linearity shows in the ratios (no pass/fail; issue 15 measured 14 s and
550 MB for a 4 MiB os action, 63 s and 285 MB before the first token of a 20,000-turn resume):

- os action: `parse_action` of a Python action of 1, 2 and 4 MiB, as many lines and as one
  line of `;`-joined statements (the check `awl run` makes on every action before the model loads);
- resume: `awl run --resume FILE` of a terminal session of 5,000, 10,000 and 20,000 turns,
  until the first token of the next turn streams (`--json` events on stdout). The scripted
  backend by default; `--gguf` resumes on the tiny qwen35moe fixture (the llama.cpp path:
  the turns record their context window as a long session's do, so the next prompt is the
  window's and only reading the history grows; without those notes the window is searched
  again over the whole history, which engine/context_window.py does by tokenizing it).

    .venv/bin/python bench/hostile_scale.py [--only os|resume] [--base-mib 1] [--base-turns 5000] [--gguf]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Run in the child: its own peak RSS (Linux reports KiB) on the last line of stderr.
PEAK = "import resource, sys; print(f'peak_kib={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}', file=sys.stderr)"

OS_CHILD = """
import sys, time
from agentworld_local.domains import get_domain
code = open(sys.argv[1], encoding="utf-8").read()
domain = get_domain("os")
start = time.perf_counter()
domain.parse_action(code)
print(f"seconds={time.perf_counter() - start:.3f}", file=sys.stderr)
""" + PEAK

RESUME_CHILD = """
import sys
from agentworld_local.cli.main import main
code = main(["run", "--resume", sys.argv[1], "-m", sys.argv[2], "--json", "--think", "off", "--max-tokens", "8"])
""" + PEAK + "\nsys.exit(code)"


def _child_env(home: Path) -> dict[str, str]:
    return {**os.environ, "AWL_HOME": str(home), "PYTHONPATH": str(REPO)}


def _peak_mib(stderr: str) -> float:
    kib = [line.split("=", 1)[1] for line in stderr.splitlines() if line.startswith("peak_kib=")]
    return int(kib[-1]) / 1024 if kib else float("nan")


#: The two shapes of a long action: many lines, or one line of statements (a script line).
OS_SHAPES = {"lines": "pyautogui.click(100, 200)  # the Save button\n", "one line": "pyautogui.click(100, 200); "}


def bench_os(base_mib: int, workdir: Path) -> None:
    print("os action check (parse_action), a fresh process each")
    for shape, unit in OS_SHAPES.items():
        for factor in (1, 2, 4):
            size = factor * base_mib * 1024 * 1024
            action = workdir / f"action-{factor}.py"
            action.write_text(unit * (size // len(unit)), encoding="utf-8")
            result = subprocess.run([sys.executable, "-c", OS_CHILD, str(action)], capture_output=True, text=True,
                                    env=_child_env(workdir / "home"), cwd=REPO, timeout=600)
            seconds = [line.split("=", 1)[1] for line in result.stderr.splitlines() if line.startswith("seconds=")]
            said = seconds[0] if seconds else f"failed: {result.stderr.strip().splitlines()[-1:]}"
            print(f"  {shape}, {factor * base_mib} MiB: {said} s, peak RSS {_peak_mib(result.stderr):.0f} MiB")


#: Turns a synthetic session's records say the model still saw (engine/context_window.py).
WINDOW = 40


def _session(path: Path, turns: int, model_ref: dict) -> None:
    from agentworld_local.trajectory import Header, TurnRecord, write_new
    from agentworld_local.trajectory.schema import ModelRef

    listing = "drwxr-xr-x 2 user user 4096 Jan  1 00:00 src\n" * 5

    def records():
        for n in range(1, turns + 1):
            observation = f"notes_{n}.txt\n{listing}user@box:~$ "
            yield TurnRecord(
                action=f"ls dir{n}", observation=observation, action_payload=[{"keystrokes": f"ls dir{n}\n", "duration": 1.0}],
                prompt=f"### Turn {n}\n**Action:**\nls dir{n}", raw_output=f"<predicted_observation>\n{observation}\n</predicted_observation>",
                parse_method="tag", tokens={"prompt_total": 100, "generated": 50}, timings={"total_s": 1.0},
                # As a long session records it: the model's window holds the last WINDOW turns.
                context={"omitted_turns": {"first": 2, "last": n - WINDOW}} if n > WINDOW + 1 else None,
            )

    header = Header(domain="terminal", initial_state="user@box:~$ ", sampling={"temperature": 0.6, "max_tokens": 8},
                    think="off", model=ModelRef(**model_ref))
    write_new(path, header, records())


def bench_resume(base_turns: int, workdir: Path, gguf: bool) -> None:
    if gguf:
        from agentworld_local.fixtures.tiny_gguf import write_qwen35moe_fixture

        model_file = write_qwen35moe_fixture(workdir / "qwen35moe.gguf")
        model, ref = str(model_file), {"name": model_file.name, "path": str(model_file),
                                       "file_size": model_file.stat().st_size}
    else:
        answers = workdir / "answers.json"
        answer = "<predicted_observation>\ntotal 0\nuser@box:~$ \n</predicted_observation>"
        answers.write_text(json.dumps({"version": 1, "answers": [{"raw": answer, "chunk": 4}]}), encoding="utf-8")
        model, ref = f"scripted:{answers}", {"name": "scripted:answers.json", "path": str(answers)}
    print(f"resume until the first token ({'llama.cpp, qwen35moe fixture' if gguf else 'scripted backend'}), a fresh process each")
    for factor in (1, 2, 4):
        turns = factor * base_turns
        path = workdir / f"session-{turns}.jsonl"
        _session(path, turns, ref)
        size_mib = path.stat().st_size / 1024 / 1024
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", RESUME_CHILD, str(path), model], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_child_env(workdir / "home"),
                                 cwd=REPO)
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write("pwd\n")
        child.stdin.close()
        first = None
        for line in child.stdout:
            if first is None and json.loads(line).get("event") in ("thinking", "answer", "observation"):
                first = time.perf_counter() - start
        stderr = child.stderr.read() if child.stderr else ""
        child.wait(timeout=600)
        shown = f"{first:.2f} s" if first is not None else f"no token (exit {child.returncode}: {stderr.strip().splitlines()[-2:]})"
        print(f"  {turns:,} turns ({size_mib:.0f} MiB): first token after {shown}, peak RSS {_peak_mib(stderr):.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("os", "resume"))
    parser.add_argument("--base-mib", type=int, default=1)
    parser.add_argument("--base-turns", type=int, default=5000)
    parser.add_argument("--gguf", action="store_true", help="resume on the tiny qwen35moe GGUF instead of scripted answers")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="awl-hostile-scale-") as directory:
        workdir = Path(directory)
        if args.only in (None, "os"):
            bench_os(args.base_mib, workdir)
        if args.only in (None, "resume"):
            bench_resume(args.base_turns, workdir, args.gguf)


if __name__ == "__main__":
    main()
