"""`awl run`: a headless session driven by a script file or stdin."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn
from rich.markup import escape

from agentworld_local.cli.consoles import stderr_console
from agentworld_local.cli.main import app
from agentworld_local.cli.session import (
    ScriptLine,
    TurnPrinter,
    ctrl_c_cancels,
    default_session_path,
    header_for,
    ensure_new_file,
    parse_script_line,
    play,
    read_script,
)
from agentworld_local.cli.resimulate import run_bench_row
from agentworld_local.domains import get_domain
from agentworld_local.domains.base import Domain
from agentworld_local.engine.session_context import with_session_tools
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.world import SessionSettings, World
from agentworld_local.errors import InputError
from agentworld_local.models.resolve import resolve_model
from agentworld_local.scenarios import load_scenario
from agentworld_local.trajectory.agentworldbench import read_bench_row
from agentworld_local.trajectory.writer import TrajectoryWriter

MODEL_HELP = (
    "A GGUF world model: a registry name from `awl models list` (e.g. qwen-agentworld-35b-a3b, or "
    "qwen-agentworld-35b-a3b:UD-Q2_K_XL for another quantization) or a file path (e.g. ~/models/world.gguf)."
)
THINK_HELP = "Thinking budget: `off` (answer at once), a number of tokens (e.g. 512), or `full` (the model decides)."


def load_backend(model: str, *, gpu_layers: str, ctx: int, threads: int | None, verbose: bool, quiet: bool) -> Any:
    """Load the model with a progress bar on stderr (llama_cpp is imported only here)."""
    from agentworld_local.engine.llama import LlamaBackend

    resolved = resolve_model(model)
    options = dict(gpu_layers=gpu_layers, n_ctx=ctx, threads=threads, verbose=verbose, name=resolved.name)
    console = Console(stderr=True)
    if quiet or not console.is_terminal:
        return LlamaBackend(resolved.path, **options)
    columns = (TextColumn("loading {task.description}"), BarColumn(), TaskProgressColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(resolved.name, total=1.0)
        return LlamaBackend(
            resolved.path, progress=lambda value: progress.update(task, completed=value), **options
        )


def _stdin_lines(domain: Domain) -> Iterator[ScriptLine]:
    interactive = sys.stdin.isatty()
    number = 0
    while True:
        if interactive:
            sys.stderr.write("action> ")
            sys.stderr.flush()
        try:
            text = sys.stdin.readline()
        except OSError:
            return  # the terminal went away: treat it as the end of input
        if not text:
            return
        number += 1
        try:
            line = parse_script_line(domain, text, number, "stdin")
        except InputError as error:
            if not interactive:
                raise
            # At a prompt, a typo should not end the session.
            sys.stderr.write(f"awl: {error.one_line()}\n")
            continue
        if line is not None:
            yield line


def run_session(
    world: World,
    lines: Iterator[ScriptLine] | list[ScriptLine],
    *,
    out: Path,
    printer: TurnPrinter,
    scenario: dict[str, Any] | None = None,
    interactive: bool = False,
) -> int:
    """Play every line, saving each finished turn; Ctrl+C keeps the completed turns.

    At an interactive prompt Ctrl+C cancels only the turn in flight and a mistake is
    reported without ending the session (reloading a 20 GB model costs minutes);
    Ctrl+C at the prompt itself, or anywhere in a script, ends the session.
    """
    err = stderr_console()
    cancel = threading.Event()
    with TrajectoryWriter.create(out, header_for(world, scenario=scenario)) as writer:
        world.on_turn = writer.append
        try:
            for line in lines:
                if not interactive:
                    if not play(world, line, printer, cancel):
                        break
                    continue
                cancel.clear()
                try:
                    with ctrl_c_cancels(cancel):
                        play(world, line, printer, cancel)
                except InputError as error:  # e.g. `:undo` with nothing to undo
                    err.print(f"awl: {error.one_line()}", markup=False)
        except KeyboardInterrupt:
            err.print(f"\n[yellow]interrupted[/yellow]: {len(world.history)} completed turns are saved in {escape(str(out))}")
            return 130
    if not printer.as_json:
        err.print(f"[dim]saved {len(world.history)} turns to {escape(str(out))}  (replay: awl replay {escape(str(out))})[/dim]")
    return 0


@app.command()
def run(
    script: Path = typer.Argument(None, help="Actions, one per line (`#` comments, `:undo`, `:control TEXT`). Omit or `-` to read stdin."),
    model: str = typer.Option(..., "--model", "-m", help=MODEL_HELP),
    domain: str = typer.Option(None, "--domain", "-d", help="Which world to simulate (default: the scenario's, else terminal).", show_default=False),
    state_format: str = typer.Option(None, "--state-format", help="How the state is written, for domains that offer a choice (web: axtree or html).", show_default=False),
    scenario: str = typer.Option(None, "--scenario", "-s", help="A starting world: a name from `awl scenarios list`, or a .toml file.", show_default=False),
    initial_state: Path = typer.Option(None, "--initial-state", help="File with the starting state (e.g. a screen); overrides the scenario's."),
    task: str = typer.Option(None, "--task", help="The agent's task, given to the world model as context; overrides the scenario's.", show_default=False),
    control: list[str] = typer.Option(None, "--control", "-c", help="A control instruction (perturbation) from turn 1, e.g. \"the disk is full\". Repeatable; adds to the scenario's.", show_default=False),
    from_bench: Path = typer.Option(None, "--from-bench", help="Re-simulate one turn of an AgentWorldBench JSONL file (with --row) and show it beside the ground truth.", show_default=False),
    row: int = typer.Option(None, "--row", help="With --from-bench: the row to re-simulate (1-based line of the file).", show_default=False),
    think: str = typer.Option(None, "--think", help=THINK_HELP + " Default: 1024."),
    seed: int = typer.Option(0, "--seed", help="Sampling seed; the same seed replays the same session."),
    out: Path = typer.Option(None, "--out", "-o", help="Trajectory file to write (default: a new file in the sessions dir)."),
    as_json: bool = typer.Option(False, "--json", help="Print events as JSON lines on stdout."),
    show_thinking: bool = typer.Option(False, "--show-thinking", help="Stream the model's thinking to stderr."),
    ctx: int = typer.Option(16384, "--ctx", help="Context size in tokens."),
    gpu_layers: str = typer.Option("auto", "--gpu-layers", help="Layers to offload: auto (as many as fit on the GPU; 0 on a CPU-only build; see `awl models info MODEL --plan`), all, or N."),
    threads: int = typer.Option(None, "--threads", help="CPU threads (default: llama.cpp's choice)."),
    temperature: float = typer.Option(0.6, "--temperature", help="Sampling temperature (0 = greedy)."),
    max_tokens: int = typer.Option(4096, "--max-tokens", help="Most tokens for one observation, after thinking."),
    verbose: bool = typer.Option(False, "--verbose", help="Show llama.cpp's own log."),
) -> None:
    """Run a simulated session headless: actions in, predicted observations out.

    Example: `echo "ls -la" | awl run --model world.gguf` or `awl run actions.txt -m world.gguf --out s.jsonl`.

    With a scenario and a perturbation: `awl run -s issue-tracker-rate-limit -c "the server is read-only" -m world.gguf`.
    In a script or at the prompt, `:control TEXT` adds a control instruction for the next turn.

    Re-simulate a benchmark turn: `awl run --from-bench terminal_test.jsonl --row 2 -m world.gguf`.
    """
    budget = ThinkBudget.parse(think)
    sampling = SamplingConfig(temperature=temperature, max_tokens=max_tokens)
    load = dict(gpu_layers=gpu_layers, ctx=ctx, threads=threads, verbose=verbose, quiet=as_json)
    if from_bench is not None or row is not None:
        conflicts = {"a script": script, "--scenario": scenario, "--domain": domain, "--task": task,
                     "--initial-state": initial_state, "--control": control or None}
        _bench_session(from_bench, row, conflicts, model=model, load=load, out=out, as_json=as_json,
                       show_thinking=show_thinking, settings=SessionSettings(sampling=sampling, think=budget, seed=seed))
    chosen = load_scenario(scenario) if scenario else None
    if chosen and domain and domain != chosen.domain:
        raise InputError(
            f"--domain {domain} conflicts with scenario `{chosen.name}`, which is a {chosen.domain} world.",
            f"Drop --domain, or pick a {domain} scenario: `awl scenarios list --domain {domain}`.",
        )
    domain_name = domain or (chosen.domain if chosen else "terminal")
    settings = SessionSettings(sampling=sampling, think=budget, seed=seed)
    if chosen is not None:
        settings = chosen.apply(settings)
    if task is not None:
        settings.task = task
    state = _read_initial_state(initial_state)
    if state is not None:
        settings.initial_state = state
    if any(not text.strip() for text in control or []):
        raise InputError("--control needs a text.", 'Write e.g. `--control "the disk is full"`.')
    settings.controls = [*settings.controls, *(text.strip() for text in control or [])]
    # Built with the session's tools, so script actions are checked against them before loading.
    world_domain = with_session_tools(get_domain(domain_name, state_format=state_format), settings.tools)
    out = out or default_session_path(domain_name)
    ensure_new_file(out)
    from_stdin = script is None or str(script) == "-"
    lines: Any = _stdin_lines(world_domain) if from_stdin else read_script(world_domain, script)
    backend = load_backend(model, **load)
    world = World(backend, world_domain, settings)
    printer = TurnPrinter(as_json=as_json, show_thinking=show_thinking)
    code = run_session(
        world, lines, out=out, printer=printer, scenario=chosen.ref() if chosen else None,
        interactive=from_stdin and sys.stdin.isatty(),
    )
    backend.close()
    raise typer.Exit(code)


def _bench_session(
    path: Path | None, row: int | None, conflicts: dict[str, Any], *, model: str, load: dict[str, Any],
    out: Path | None, as_json: bool, show_thinking: bool, settings: SessionSettings,
) -> None:
    """`--from-bench FILE --row N`; always ends the command (typer.Exit)."""
    if path is None:
        raise InputError("--row only works with --from-bench.", "Add `--from-bench BENCH.jsonl`.")
    if row is None:
        raise InputError("--from-bench needs --row N, the row to re-simulate.", "E.g. `--row 1` for the first line of the file.")
    given = [name for name, value in conflicts.items() if value is not None]
    if given:
        raise InputError(
            f"--from-bench re-simulates a row exactly as the benchmark wrote it; {given[0]} cannot change it.",
            f"Drop {given[0]}.",
        )
    bench_row = read_bench_row(path, row)  # checked before the model loads
    out = out or default_session_path(f"bench-{bench_row.domain}")
    ensure_new_file(out)
    backend = load_backend(model, **load)
    code = run_bench_row(bench_row, path, backend, settings, out=out, as_json=as_json, show_thinking=show_thinking)
    backend.close()
    raise typer.Exit(code)


def _read_initial_state(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"Cannot read the initial state file {path} ({error}).", "Pass a UTF-8 text file.") from None
