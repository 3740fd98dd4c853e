"""`awl play` (and `awl` alone): the full-screen session, a face over the session core."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from agentworld_local.cli.main import app
from agentworld_local.cli.preflight import check_ctx_value, check_threads, check_writable
from agentworld_local.defaults import CTX_HELP, DEFAULT_SEED, MODEL_HELP, SEED_HELP, THINK_HELP
from agentworld_local.errors import InputError


def has_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


@app.command()
def play(
    model: str = typer.Option(None, "--model", "-m", help=MODEL_HELP + " Without one, the start screen lets you choose.", show_default=False),
    domain: str = typer.Option(None, "--domain", "-d", help="Which world to simulate (default: the scenario's, else terminal).", show_default=False),
    scenario: str = typer.Option(None, "--scenario", "-s", help="A starting world: a name from `awl scenarios list`, or a .toml file.", show_default=False),
    resume: Path = typer.Option(None, "--resume", help="Continue a saved session in its file.", show_default=False),
    think: str = typer.Option(None, "--think", help=THINK_HELP, show_default=False),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help=SEED_HELP),
    out: Path = typer.Option(None, "--out", "-o", help="Trajectory file to write (default: a new file in the sessions dir).", show_default=False),
    ctx: int = typer.Option(None, "--ctx", help=CTX_HELP, show_default=False),
    gpu_layers: str = typer.Option("auto", "--gpu-layers", help="Layers to offload: auto, all, or N."),
    threads: int = typer.Option(None, "--threads", help="CPU threads (default: llama.cpp's choice).", show_default=False),
) -> None:
    """Sit in front of a simulated world: type actions, watch the model think, undo, fork.

    `awl` with no arguments opens the same screen. Example: `awl play -m world.gguf -s python-web-app`.
    """
    from agentworld_local.session.spec import SessionSpec

    # Every mistake is said before the screen opens, by the rules the session will apply.
    SessionSpec(domain=domain, scenario=scenario, think=think, seed=seed).resolve()
    check_ctx_value(ctx)
    threads = check_threads(threads)
    if resume is not None and not resume.is_file():
        raise InputError(f"{resume} is not a saved session file.", "Give the path of a .jsonl session, e.g. from `awl replay`.")
    if out is not None:
        from agentworld_local.session.files import ensure_new_file

        ensure_new_file(out)
        check_writable(out)
    if not has_terminal():
        raise InputError("awl play needs a terminal (stdin and stdout are not one).",
                         "Run it in a terminal, or use `awl run` for a headless session.")
    from agentworld_local.cli.screens import run_screen
    from agentworld_local.tui.app import make_app

    start_screen = model is None
    run_screen(make_app(model=model, domain=domain, scenario=scenario, resume=resume, think=think, out=out, seed=seed,
                        ctx=ctx, gpu_layers=gpu_layers, threads=threads, start_screen=start_screen))
