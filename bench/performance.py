"""Run the benchmark suite and write the performance report (docs/PERFORMANCE.md).

Each section is a module under bench/ with `section(quick: bool) -> str` (a markdown section
whose ratios are measured side by side in the same run, raw times beside them); each is
also runnable alone. A section whose module is missing or raises is noted in the report,
never fatal. `--quick` uses small sizes (seconds per section) to check the suite works;
the report's numbers come from a full run on a quiet machine.

    .venv/bin/python bench/performance.py [--quick] [--only NAME ...] [--out docs/PERFORMANCE.md]
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import platform
import shlex
import sys
import time
import traceback
from pathlib import Path

from agentworld_local.files import writing_whole

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

#: The report's sections in order: bench/<name>.py each (prefill, first_turn, session_loop, session_tokens,
#: state_cache, prefetch, speculation, serve_throughput, serve_parallel, serve_load, mailbox_drain,
#: serve_remote_overhead, rl_step_cost and worlds_grpo are written with the features they measure). prefill,
#: first_turn and session_tokens measure against llama.cpp's llama-server where one is found (`--llama-server
#: PATH`, AWL_LLAMA_SERVER, PATH).
SECTIONS = (
    "turn_cost",
    "restore_time",
    "decode_speed",
    "prefill",
    "first_turn",
    "session_loop",
    "session_tokens",
    "context_cost",
    "memory_growth",
    "checkpoint_copy",
    "cli_startup",
    "thinking_budget",
    "state_cache",
    "prefetch",
    "speculation",
    "serve_throughput",
    "serve_parallel",
    "swap_places",  # llama-server with as many slots; measured without it where none is found
    "serve_load",
    "mailbox_drain",
    "serve_remote_overhead",
    "fleet_affinity",  # two llama-servers; measured only where one is found, as prefill's
    "rl_step_cost",
    "worlds_grpo",
)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def ram_total() -> str:
    try:
        import psutil

        return f"{psutil.virtual_memory().total / 2**30:.1f} GiB"
    except ImportError:
        return "unknown"


def gpus() -> str:
    from agentworld_local.engine.llama import machine_hardware

    found = machine_hardware().gpus
    return ", ".join(gpu.name for gpu in found) if found else "none (this llama.cpp build runs on the CPU)"


def versions() -> tuple[str, str]:
    import llama_cpp

    system = llama_cpp.llama_print_system_info().decode(errors="replace").strip(" |")
    return llama_cpp.__version__, system


def header(command: str, quick: bool | None) -> str:
    """`quick`: every section small (True), full (False), or some of each (None)."""
    llama_version, llama_system = versions()
    from agentworld_local import __version__ as awl_version

    rows = [
        ("Date", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
        ("Command", f"`{command}`"),
        ("Mode", {True: "quick (small sizes: a check that the suite runs, not the report's numbers)", False: "full",
                  None: "mixed: the sections the contents mark `quick` ran at small sizes, the others full"}[quick]),
        ("CPU", f"{cpu_model()}, {os.cpu_count()} logical cores"),
        ("RAM", ram_total()),
        ("GPU", gpus()),
        ("OS", platform.platform()),
        ("Python", platform.python_version()),
        ("agentworld-local", awl_version),
        ("llama-cpp-python", llama_version),
        ("llama.cpp build", f"the one vendored in llama-cpp-python {llama_version}; {llama_system}"),
    ]
    lines = ["# Performance report", "",
             "Written by `bench/performance.py`; every ratio below is measured side by side in the same run, "
             "with the raw times beside it.", "", "| | |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    return "\n".join(lines)


def run_section(name: str, quick: bool) -> tuple[str, float, str]:
    """(markdown, seconds, status): a missing module or one that raises is a note, not a crash."""
    started = time.perf_counter()
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name != name:
            return _failed(name, started, error)
        return f"## {name}\n\n_Not measured: bench/{name}.py does not exist yet._", 0.0, "missing"
    except Exception as error:  # noqa: BLE001 - one broken module must not lose the rest of the report
        return _failed(name, started, error)
    try:
        text = module.section(quick)
    except Exception as error:  # noqa: BLE001 - as above
        return _failed(name, started, error)
    return text.strip(), time.perf_counter() - started, "ok"


def _failed(name: str, started: float, error: BaseException) -> tuple[str, float, str]:
    trace = "".join(traceback.format_exception(error)[-6:]).rstrip()
    text = (f"## {name}\n\n_Not measured: bench/{name}.py raised {type(error).__name__}: {error}_\n\n"
            f"```\n{trace}\n```")
    return text, time.perf_counter() - started, "failed"


def report(names: list[str], quick: bool | set[str], command: str, progress=print, write=None) -> str:
    """The report of `names`, in order. `quick`: every section small, or the set of those that
    run small (the rest full size). `write` gets the report after each section, the sections
    still to come listed as not run: a run stopped half-way keeps what it measured."""
    small = (lambda name: quick) if isinstance(quick, bool) else (lambda name: name in quick)
    parts: list[str] = []
    summary: list[str] = []

    def whole(pending: list[str]) -> str:
        rows = summary + [f"| {name} | not run (the run stopped before it) | | |" for name in pending]
        contents = "\n".join(["## Sections", "", "| section | status | sizes | seconds |", "|---|---|---|---|", *rows])
        mode = quick if isinstance(quick, bool) else (None if quick else False)
        return "\n\n".join([header(command, mode), contents, *parts]) + "\n"

    for index, name in enumerate(names):
        progress(f"[{name}] running...")
        text, seconds, status = run_section(name, small(name))
        progress(f"[{name}] {status} in {seconds:.1f}s")
        parts.append(text)
        summary.append(f"| {name} | {status} | {'quick' if small(name) else 'full'} | {seconds:.1f} |")
        if write is not None:
            write(whole(names[index + 1:]))
    return whole([])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: seconds per section")
    parser.add_argument("--quick-sections", nargs="+", metavar="NAME", choices=SECTIONS, default=[],
                        help="these sections at small sizes, the others full (the contents table says which)")
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=SECTIONS, help="these sections only")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "PERFORMANCE.md")
    parser.add_argument("--llama-server", metavar="PATH", help="llama.cpp's llama-server for the prefill and first-turn "
                        "sections to measure against (default: $AWL_LLAMA_SERVER, else llama-server on PATH)")
    args = parser.parse_args(argv)
    if args.llama_server:
        if not (Path(args.llama_server).is_file() and os.access(args.llama_server, os.X_OK)):
            parser.error(f"--llama-server {args.llama_server} is not an executable file (build llama.cpp's llama-server, "
                         "or leave the option out to measure without it)")
        os.environ["AWL_LLAMA_SERVER"] = args.llama_server  # where bench/llama_server_binary.py looks
    command = "python bench/performance.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))

    def write(text: str) -> None:  # after every section: a run stopped half-way leaves a whole report
        with writing_whole(args.out, overwrite=True) as out:
            out.write(text.encode())

    quick: bool | set[str] = True if args.quick else set(args.quick_sections) or False
    report(list(args.only or SECTIONS), quick, command.strip(), progress=lambda line: print(line, file=sys.stderr),
           write=write)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
