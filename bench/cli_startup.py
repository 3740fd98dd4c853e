"""Start-up of the command line and replay of long sessions, against `python -c pass`.

Each command runs as a fresh process (the way a user runs it), several times alternating;
the median wall time and the child's own peak resident memory (wait4's rusage) are kept.
`python -c pass` is the floor every Python command pays. The replay rows read a session
file written as `awl run` writes it (short shell turns) and print it with `--plain`.

    .venv/bin/python bench/cli_startup.py [--quick]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import print_section, table  # noqa: E402
from export_scale import write_session  # noqa: E402

AWL = Path(sys.executable).with_name("awl")


# The child's peak resident set is read from its own /proc/self/status (VmHWM) as it exits: a
# fork's rusage would count the parent's memory at the fork too.
def run_once(argv: list[str]) -> tuple[float, int]:
    """(wall seconds, peak RSS bytes) of one run of `argv` (a Python script and its arguments,
    or [] for `python -c pass`), its output discarded."""
    with tempfile.NamedTemporaryFile("r", suffix=".peak") as peak:
        script = ("import atexit, runpy, sys\n"
                  f"def _peak():\n    with open('/proc/self/status') as f, open({peak.name!r}, 'w') as out:\n"
                  "        out.write(next(l for l in f if l.startswith('VmHWM')).split()[1])\n"
                  "atexit.register(_peak)\n")
        if argv:
            script += f"sys.argv = {argv!r}\nrunpy.run_path(sys.argv[0], run_name='__main__')\n"
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env={**os.environ, "COLUMNS": "100", "NO_COLOR": "1"})
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}")
        return seconds, int(peak.read() or 0) * 1024  # VmHWM is in kB


def measure(commands: dict[str, list[str]], repeats: int) -> dict[str, tuple[float, int]]:
    times: dict[str, list[float]] = {name: [] for name in commands}
    peaks: dict[str, int] = dict.fromkeys(commands, 0)
    for _ in range(repeats):
        for name, argv in commands.items():  # alternate, so a busy moment touches every command
            seconds, peak = run_once(argv)
            times[name].append(seconds)
            peaks[name] = max(peaks[name], peak)
    return {name: (statistics.median(times[name]), peaks[name]) for name in commands}


def section(quick: bool) -> str:
    repeats, short, long = (2, 10, 500) if quick else (7, 40, 10_000)
    with tempfile.TemporaryDirectory() as tmp:
        short_file, long_file = Path(tmp) / "short.jsonl", Path(tmp) / "long.jsonl"
        write_session(short_file, short)
        write_session(long_file, long)
        commands = {
            "`python -c pass`": [],
            "`awl --help`": [str(AWL), "--help"],
            f"`awl replay FILE --plain` ({short} turns)": [str(AWL), "replay", str(short_file), "--plain"],
        }
        results = measure(commands, repeats)
        long_name = f"`awl replay FILE --plain` ({long:,} turns, {long_file.stat().st_size / 1e6:.1f} MB)"
        results.update(measure({long_name: [str(AWL), "replay", str(long_file), "--plain"]}, max(1, repeats // 3)))
    floor = results["`python -c pass`"][0]
    rows = [[name, f"{seconds:.3f}", f"{seconds / floor:.1f}x", f"{seconds - floor:+.3f}", f"{peak / 2**20:.1f}"]
            for name, (seconds, peak) in results.items()]
    return "\n\n".join([
        "## Command start-up and replay",
        f"Each command as a fresh process, median of {repeats} alternating runs (the {long:,}-turn replay: "
        f"{max(1, repeats // 3)}), output discarded; peak memory is the child's own maximum resident set.",
        "`awl --help` is answered from cli/main.py's table of commands (no command, typer or rich is "
        "imported); the goal is within 0.15 s of `python -c pass`.",
        table(["command", "wall s", "/ python -c pass", "s over python -c pass", "peak RSS MiB"], rows),
    ])


def main() -> None:
    print_section(section, __doc__)


if __name__ == "__main__":
    main()
