"""`awl demo`: the offline tour. Replays a bundled session, or runs it live with `--model`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from agentworld_local.cli.main import app
from agentworld_local.cli.preflight import check_ctx_value, check_sampling, check_writable
from agentworld_local.cli.run import load_backend, run_session, say_model_limits
from agentworld_local.defaults import CTX_HELP, DEFAULT_MAX_TOKENS, DEFAULT_SEED, MAX_TOKENS_HELP, MODEL_HELP, THINK_HELP
from agentworld_local.cli.session import ScriptLine, TurnPrinter, default_session_path, ensure_new_file
from agentworld_local.domains import get_domain
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.errors import InputError
from agentworld_local.paths import package_assets
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.cli.replay_plain import replay

DEMO_FILE = "examples/terminal-demo.jsonl"


def demo_path() -> Path:
    path = package_assets() / DEMO_FILE
    if not path.exists():
        raise InputError(f"The bundled demo session is missing ({path}).", "Reinstall with `pip install -e .` from the repository.")
    return path


@app.command()
def demo(
    model: str = typer.Option(None, "--model", "-m", help=MODEL_HELP + " Runs the demo scenario live."),
    speed: float = typer.Option(None, "--speed", help="Seconds between turns when replaying (default 0.6 on a terminal, 0 in a pipe)."),
    plain: bool = typer.Option(False, "--plain", help="No colours or box characters."),
    think: str = typer.Option(None, "--think", help=THINK_HELP, show_default=False),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Sampling seed for the live run."),
    out: Path = typer.Option(None, "--out", "-o", help="Where the live run's trajectory goes."),
    ctx: int = typer.Option(None, "--ctx", help=CTX_HELP, show_default=False),
    gpu_layers: str = typer.Option("auto", "--gpu-layers", help="Layers to offload: auto (as many as fit on the GPU; 0 on a CPU-only build), all, or N."),
    max_tokens: int = typer.Option(DEFAULT_MAX_TOKENS, "--max-tokens", help=MAX_TOKENS_HELP),
) -> None:
    """Show what awl does, without any model: a hand-written terminal session, replayed.

    With `--model PATH`, the same scenario (task, starting screen, actions) runs live on your model.
    """
    recorded = read_trajectory(demo_path())
    console = Console()
    if model is None:
        pause = speed if speed is not None else (0.6 if console.is_terminal and not plain else 0.0)
        replay(recorded, console, plain=plain or not console.is_terminal, speed=pause)
        console.print("\nThis was a hand-written example. Run it live with: awl demo --model PATH/TO/model.gguf", soft_wrap=True)
        return
    header = recorded.header
    domain = get_domain(header.domain)
    budget = ThinkBudget.parse(think)  # the same default as `awl run`
    check_sampling(max_tokens=max_tokens, temperature=SamplingConfig().temperature)
    check_ctx_value(ctx)
    lines = [ScriptLine(record.turn, domain.parse_action(record.action)) for record in recorded.current_branch()]
    destination = out or default_session_path(header.domain)
    ensure_new_file(destination)
    check_writable(destination)
    backend = load_backend(model, gpu_layers=gpu_layers, ctx=ctx, threads=None, verbose=False, quiet=False)
    say_model_limits(backend, think)
    settings = SessionSettings(
        sampling=SamplingConfig(max_tokens=max_tokens),
        think=budget, seed=seed, task=header.task, initial_state=header.initial_state)
    world = World(backend, domain, settings)
    printer = TurnPrinter(as_json=False, show_thinking=False)
    code = run_session(world, lines, out=destination, printer=printer, scenario=header.scenario)
    backend.close()
    raise typer.Exit(code)
