"""`awl demo`: the offline tour. Replays a bundled example session, or runs it live with `--model`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from agentworld_local.cli.main import app
from agentworld_local.cli.model_options import offload_model_options, remote_model_options
from agentworld_local.cli.preflight import check_ctx_value, check_writable
from agentworld_local.cli.run import say_model_limits
from agentworld_local.cli.session_loop import load_model, play_lines, start_runner
from agentworld_local.cli.turn_output import TurnPrinter, default_session_path, ensure_new_file
from agentworld_local.defaults import CTX_HELP, DEFAULT_MAX_TOKENS, DEFAULT_SEED, MAX_TOKENS_HELP, MODEL_HELP, THINK_HELP
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.models.offload_options import OffloadOptions
from agentworld_local.errors import InputError, did_you_mean
from agentworld_local.examples import Example, bundled_examples, pick_example
from agentworld_local.session.rerun import live_plan
from agentworld_local.session.runner import NewSession
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.cli.replay_plain import replay
from agentworld_local.files import user_path_option

@app.command()
@remote_model_options
@offload_model_options
def demo(
    model: str = typer.Option(None, "--model", "-m", help=MODEL_HELP + " Runs the demo scenario live."),
    domain: str = typer.Option(None, "--domain", "-d", help="Show the bundled example of this domain (default: the terminal demo).", show_default=False),
    speed: float = typer.Option(None, "--speed", help="Seconds between turns when replaying (default 0.6 on a terminal, 0 in a pipe)."),
    plain: bool = typer.Option(False, "--plain", help="No colours or box characters."),
    think: str = typer.Option(None, "--think", help=THINK_HELP, show_default=False),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Sampling seed for the live run."),
    out: Path = typer.Option(None, "--out", "-o", help="Where the live run's trajectory goes.", callback=user_path_option),
    ctx: int = typer.Option(None, "--ctx", help=CTX_HELP, show_default=False),
    gpu_layers: str = typer.Option("auto", "--gpu-layers", help="Layers to offload: auto (as many as fit on the GPU; 0 on a CPU-only build), all, or N."),
    max_tokens: int = typer.Option(DEFAULT_MAX_TOKENS, "--max-tokens", help=MAX_TOKENS_HELP),
    remote: RemoteOptions | None = None,
    offload: OffloadOptions | None = None,
) -> None:
    """Show what awl does, without any model: a hand-written example session, replayed.

    With `--model PATH`, the same scenario (task, starting state, actions) runs live on your model; with
    `--backend openai --base-url URL --api-model NAME`, on a model an OpenAI-compatible server serves.
    """
    example = _example(domain)
    console = Console()
    if model is None and remote is None:
        recorded = read_trajectory(example.path)
        pause = speed if speed is not None else (0.6 if console.is_terminal and not plain else 0.0)
        replay(recorded, console, plain=plain or not console.is_terminal, speed=pause)
        again = f" --domain {example.domain}" if domain else ""
        console.print(f"\nThis was a hand-written example. Run it live with: awl demo{again} --model PATH/TO/model.gguf",
                      soft_wrap=True)
        return
    plan = live_plan(example.path, think=think, seed=seed, max_tokens=max_tokens)
    resolved = plan.spec.resolve()  # checks thinking and sampling before anything loads
    check_ctx_value(ctx)
    destination = out or default_session_path(plan.domain)
    ensure_new_file(destination)
    check_writable(destination)
    new = NewSession(resolved.domain, resolved.settings, destination, plan.scenario)
    runner = start_runner()
    try:
        say_model_limits(load_model(runner, model, quiet=False, gpu_layers=gpu_layers, ctx=ctx, remote=remote,
                                    offload=offload, parallel=1), think)
        code = play_lines(runner, lambda: runner.open(new), plan.lines,
                          printer=TurnPrinter(as_json=False, show_thinking=False))
    finally:
        runner.close()
    raise typer.Exit(code)


def _example(domain: str | None) -> Example:
    """pick_example, with `Did you mean android?` for a mistyped domain."""
    try:
        return pick_example(domain)
    except InputError as error:
        close = did_you_mean(domain.strip().lower(), {e.domain for e in bundled_examples()}) if domain else ""
        if not close:
            raise
        raise InputError(error.message, f"{close} {error.hint}") from None
