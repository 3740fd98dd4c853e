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

from agentworld_local.cli.main import app
from agentworld_local.cli.session import (
    ScriptLine,
    TurnPrinter,
    default_session_path,
    header_for,
    open_writer,
    parse_script_line,
    play,
    stderr_console,
    read_script,
)
from agentworld_local.domains import get_domain
from agentworld_local.domains.base import Domain
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.world import SessionSettings, World
from agentworld_local.errors import InputError
from agentworld_local.models.resolve import resolve_model

MODEL_HELP = "A GGUF world model: a file path (e.g. Qwen-AgentWorld-35B-A3B-UD-Q4_K_M.gguf)."
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
        text = sys.stdin.readline()
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
) -> int:
    """Play every line, saving each finished turn; Ctrl+C keeps the completed turns."""
    err = stderr_console()
    cancel = threading.Event()
    with open_writer(out, header_for(world, scenario=scenario)) as writer:
        world.on_turn = writer.append
        try:
            for line in lines:
                if not play(world, line, printer, cancel):
                    break
        except KeyboardInterrupt:
            err.print(f"\n[yellow]interrupted[/yellow]: {len(world.history)} completed turns are saved in {out}")
            return 130
    if not printer.as_json:
        err.print(f"[dim]saved {len(world.history)} turns to {out}  (replay: awl replay {out})[/dim]")
    return 0


@app.command()
def run(
    script: Path = typer.Argument(None, help="Actions, one per line (`#` comments, `:undo`). Omit or `-` to read stdin."),
    model: str = typer.Option(..., "--model", "-m", help=MODEL_HELP),
    domain: str = typer.Option("terminal", "--domain", "-d", help="Which world to simulate."),
    initial_state: Path = typer.Option(None, "--initial-state", help="File with the starting state (e.g. a screen)."),
    task: str = typer.Option("", "--task", help="The agent's task, given to the world model as context."),
    think: str = typer.Option(None, "--think", help=THINK_HELP + " Default: 1024."),
    seed: int = typer.Option(0, "--seed", help="Sampling seed; the same seed replays the same session."),
    out: Path = typer.Option(None, "--out", "-o", help="Trajectory file to write (default: a new file in the sessions dir)."),
    as_json: bool = typer.Option(False, "--json", help="Print events as JSON lines on stdout."),
    show_thinking: bool = typer.Option(False, "--show-thinking", help="Stream the model's thinking to stderr."),
    ctx: int = typer.Option(16384, "--ctx", help="Context size in tokens."),
    gpu_layers: str = typer.Option("auto", "--gpu-layers", help="Layers to offload: auto (all when the build can), all, or N."),
    threads: int = typer.Option(None, "--threads", help="CPU threads (default: llama.cpp's choice)."),
    temperature: float = typer.Option(0.6, "--temperature", help="Sampling temperature (0 = greedy)."),
    max_tokens: int = typer.Option(4096, "--max-tokens", help="Most tokens for one observation, after thinking."),
    verbose: bool = typer.Option(False, "--verbose", help="Show llama.cpp's own log."),
) -> None:
    """Run a simulated session headless: actions in, predicted observations out.

    Example: `echo "ls -la" | awl run --model world.gguf` or `awl run actions.txt -m world.gguf --out s.jsonl`.
    """
    world_domain = get_domain(domain)
    budget = ThinkBudget.parse(think)
    state = _read_initial_state(initial_state)
    out = out or default_session_path(domain)
    ensure_new_file(out)
    from_stdin = script is None or str(script) == "-"
    lines: Any = _stdin_lines(world_domain) if from_stdin else read_script(world_domain, script)
    backend = load_backend(model, gpu_layers=gpu_layers, ctx=ctx, threads=threads, verbose=verbose, quiet=as_json)
    settings = SessionSettings(
        sampling=SamplingConfig(temperature=temperature, max_tokens=max_tokens),
        think=budget,
        seed=seed,
        task=task,
        initial_state=state,
    )
    world = World(backend, world_domain, settings)
    printer = TurnPrinter(as_json=as_json, show_thinking=show_thinking)
    code = run_session(world, lines, out=out, printer=printer)
    backend.close()
    raise typer.Exit(code)


def ensure_new_file(path: Path) -> None:
    """Refuse before the model loads: a session never overwrites a saved one."""
    if path.exists():
        raise InputError(f"{path} already exists.", "Choose another `--out` file, or delete that one first.")


def _read_initial_state(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"Cannot read the initial state file {path} ({error}).", "Pass a UTF-8 text file.") from None
