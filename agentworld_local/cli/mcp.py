"""`awl mcp`: a simulated machine as an MCP server on stdio (serve/mcp.py; the `mcp` extra)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import typer

from agentworld_local.cli import session_options as opt
from agentworld_local.cli.consoles import stderr_console
from agentworld_local.cli.main import app
from agentworld_local.cli.model_options import offload_model_options, remote_model_options
from agentworld_local.defaults import MODEL_HELP, REVEAL_SIMULATOR_HELP
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.errors import InputError
from agentworld_local.models.offload_options import OffloadOptions
from agentworld_local.files import user_path_option


@app.command("mcp")
@remote_model_options
@offload_model_options
def mcp_command(
    model: str = typer.Option(None, "--model", "-m", help=MODEL_HELP, show_default=False),
    domain: str = opt.DOMAIN,
    scenario: str = opt.SCENARIO,
    task: str = opt.TASK,
    control: list[str] = opt.CONTROL,
    think: str = opt.THINK,
    seed: int = opt.SEED,
    shared_world: str = opt.SHARED_WORLD,
    temperature: float = opt.TEMPERATURE,
    max_tokens: int = opt.MAX_TOKENS,
    ctx: int = opt.CTX,
    gpu_layers: str = opt.GPU_LAYERS,
    threads: int = opt.THREADS,
    out_dir: Path = typer.Option(None, "--out-dir", help="Where the session file goes (default: awl's sessions folder).",
                                 show_default=False, callback=user_path_option),
    reveal_simulator: bool = typer.Option(False, "--reveal-simulator", help=REVEAL_SIMULATOR_HELP + " Here: the "
                                          "`trajectory` field of `act` and `reset` and the resource awl://trajectory."),
    remote: RemoteOptions | None = None,
    offload: OffloadOptions | None = None,
) -> None:
    """Serve a simulated machine to an agent over MCP (stdio): tools `act`, `state`, `undo`, `reset`.

    Every `act` is a turn of an ordinary session file (the resource awl://trajectory with --reveal-simulator); nothing is
    executed. `reset` starts a new episode in a new file. E.g. in an MCP client's config:
    `awl mcp --model PATH/TO/model.gguf --scenario disk-full-server`.
    """
    try:
        from agentworld_local.serve.mcp import serve_stdio
    except ImportError:
        raise InputError("`awl mcp` needs the MCP SDK.", "Install it: pip install 'agentworld-local[mcp]'.") from None
    from agentworld_local.env import make

    if model is None and remote is None:
        raise InputError("`awl mcp` needs a model.", "Add `--model PATH/TO/model.gguf` (or a registry name, or scripted:FILE).")
    if scenario and domain:  # the session spec's own check, said before a model loads
        from agentworld_local.session.spec import SessionSpec

        SessionSpec(domain=domain, scenario=scenario).resolve()
    load_options = {"ctx": ctx, "remote": remote, "offload": offload}
    if remote is None:
        load_options.update(gpu_layers=gpu_layers, threads=threads)
    env = make(scenario or domain or "terminal", model, task=task, controls=list(control or []), think=think, seed=seed,
               temperature=temperature, max_tokens=max_tokens, out_dir=out_dir, load_options=load_options,
               reveal_simulator=reveal_simulator, shared_world=shared_world)
    # The SDK reads stdin on a worker thread that only the end of input stops, so Ctrl+C or
    # SIGTERM would wait for the client. Stop here instead: the env is closed first (a turn
    # in flight is cancelled, every finished one is saved), then the process leaves.
    def stop(signum: int, frame: object) -> None:
        env.close()
        kept = (f"the session is saved in {env.trajectory}" if env.turns  # earlier episodes were saved at their reset
                else "no action came in this episode, so it left no file")
        stderr_console().print(f"awl mcp: interrupted; {kept}", soft_wrap=True, markup=False, highlight=False)
        sys.stderr.flush()
        os._exit(128 + signum)

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, stop)
    try:
        _, info = env.reset(seed=seed)
    except BaseException:
        env.close()
        raise
    # stdout is the MCP channel: what people read goes to stderr.
    stderr_console().print(f"awl mcp: serving a simulated {env.domain.title} on stdio; turns go to {env.trajectory}",
                           soft_wrap=True, markup=False, highlight=False)
    serve_stdio(env)  # closes the env (every turn saved) when the client disconnects
