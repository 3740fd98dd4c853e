"""`awl play` (and `awl` alone): the full-screen session, a face over the session core."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from agentworld_local.cli import session_options as options
from agentworld_local.cli.agent_run import check_agent_options, load_agent
from agentworld_local.cli.main import app
from agentworld_local.cli.model_options import offload_model_options, remote_model_options
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.models.offload_options import OffloadOptions
from agentworld_local.cli.preflight import check_ctx_value, check_threads, check_writable
from agentworld_local.defaults import MODEL_HELP
from agentworld_local.errors import InputError
from agentworld_local.files import user_path_option


def has_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


@app.command()
@remote_model_options
@offload_model_options
def play(
    model: str = typer.Option(None, "--model", "-m", help=MODEL_HELP + " Without one, the start screen lets you choose.", show_default=False),
    domain: str = options.DOMAIN,
    scenario: str = options.SCENARIO,
    task: str = options.TASK,
    control: list[str] = options.CONTROL,
    prompts: Path = options.PROMPTS,
    resume: Path = typer.Option(None, "--resume", help="Continue a saved session in its file (`last`: the newest), with the model it was made with unless --model names the same file.", show_default=False, callback=user_path_option),
    think: str = options.THINK,
    seed: int = options.SEED,
    shared_world: str = options.SHARED_WORLD,
    temperature: float = options.TEMPERATURE,
    max_tokens: int = options.MAX_TOKENS,
    out: Path = typer.Option(None, "--out", "-o", help="Trajectory file to write (default: a new file in the sessions dir).", show_default=False, callback=user_path_option),
    ctx: int = options.CTX,
    gpu_layers: str = options.GPU_LAYERS,
    threads: int = options.THREADS,
    agent: str = typer.Option(None, "--agent", help="An agent model proposes each action into the action line (Enter runs it, edit or replace it first, ctrl+l lets it run, Esc stops it): openai:MODEL@URL, a .gguf path or a registry name, or scripted:FILE.", show_default=False),
    agent_steps: int = typer.Option(None, "--agent-steps", help="With --agent: the most turns the agent proposes (default 10).", show_default=False),
    agent_key_env: str = typer.Option(None, "--agent-key-env", help="With --agent openai:...: the environment variable that holds the agent server's key (default: OPENAI_API_KEY when set).", show_default=False),
    remote: RemoteOptions | None = None,
    offload: OffloadOptions | None = None,
) -> None:
    """Sit in front of a simulated world: type actions, watch the model think, undo, fork.

    `awl` with no arguments opens the same screen. Example: `awl play -m world.gguf -s python-web-app`.
    """
    from agentworld_local.session.spec import SessionSpec

    # Every mistake is said before the screen opens, by the rules the session will apply.
    SessionSpec(domain=domain, scenario=scenario, task=task, controls=list(control or []), prompts=prompts,
                think=think, seed=seed, temperature=temperature, max_tokens=max_tokens, shared_world=shared_world).resolve()
    if resume is not None:
        given = next((flag for flag, value in (("--task", task), ("--control", control), ("--prompts", prompts),
                                               ("--shared-world", shared_world)) if value), None)
        if given:
            raise InputError(f"--resume continues a session with the setup it was saved with; {given} cannot change it.",
                             f"Drop {given}, or start a new session.")
    check_ctx_value(ctx)
    threads = check_threads(threads)
    steps = check_agent_options(agent, agent_steps, False, {}, agent_key_env)
    if resume is not None:
        from agentworld_local.session.listing import resolve_session_file
        from agentworld_local.session.resume_rules import ResumeOptions, plan_resume

        resume = resolve_session_file(resume)
        if not resume.is_file():
            raise InputError(f"{resume} is not a saved session file.", "Give the path of a .jsonl session, e.g. from `awl sessions list`.")
        model = plan_resume(resume, ResumeOptions(model=model, remote=remote)).model  # the session's model; another is refused
    if out is not None:
        from agentworld_local.session.files import ensure_new_file

        ensure_new_file(out)
        check_writable(out)
    if not has_terminal():
        raise InputError("awl play needs a terminal (stdin and stdout are not one).",
                         "Run it in a terminal, or use `awl run` for a headless session.")
    from agentworld_local.cli.screens import run_screen
    from agentworld_local.tui.app import make_app

    if remote is not None:
        model = remote.spec  # what the start screen's model field shows
    start_screen = model is None
    agent_model = load_agent(agent, dict(gpu_layers=gpu_layers, threads=threads), agent_key_env) if agent is not None else None
    run_screen(make_app(agent=agent_model, agent_steps=steps, model=model, remote=remote, domain=domain, scenario=scenario, task=task, controls=list(control or []),
                        prompts=prompts, resume=resume, think=think, out=out, seed=seed, temperature=temperature,
                        max_tokens=max_tokens, ctx=ctx, gpu_layers=gpu_layers, threads=threads, start_screen=start_screen,
                        offload=offload, shared_world=shared_world))
