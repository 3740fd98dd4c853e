"""`awl serve`: simulated environments over HTTP (serve/app.py; FastAPI + uvicorn)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from agentworld_local.cli import session_options as opt
from agentworld_local.cli.consoles import stderr_console
from agentworld_local.cli.main import app
from agentworld_local.cli.model_options import model_or_server, offload_model_options, remote_model_options
from agentworld_local.defaults import MODEL_HELP, REVEAL_SIMULATOR_HELP
from agentworld_local.engine import events
from agentworld_local.engine.remote.options import SERVER_PARALLEL_DEFAULTS, RemoteOptions
from agentworld_local.models.offload_options import OffloadOptions
from agentworld_local.files import user_path_option

if TYPE_CHECKING:
    from agentworld_local.session.spec import SessionSpec

DEFAULT_PORT = 8760
DEFAULT_TOKEN_ENV = "AWL_SERVE_TOKEN"
#: Turns at once on a GGUF served here (each a sequence of its context) when --parallel is not given.
DEFAULT_GGUF_PARALLEL = 4


@app.command("serve")
@remote_model_options
@offload_model_options
def serve_command(
    model: str = typer.Option(None, "--model", "-m", help=MODEL_HELP, show_default=False),
    host: str = typer.Option("127.0.0.1", "--host", help="The address to listen on; any but loopback needs a token (--token-env)."),
    port: int = typer.Option(DEFAULT_PORT, "--port", help="The port to listen on."),
    token_env: str = typer.Option(DEFAULT_TOKEN_ENV, "--token-env",
                                  help="The environment variable that holds the token clients send (`Authorization: Bearer TOKEN`); when set, every request needs it."),
    folder: Path = typer.Option(None, "--dir", help="The server's session folder (default: awl's sessions folder + /serve).",
                                show_default=False, callback=user_path_option),
    max_sessions: int = typer.Option(32, "--max-sessions", help="Sessions open at once."),
    max_turns: int = typer.Option(1000, "--max-turns", help="Turns per session."),
    idle: float = typer.Option(1800, "--idle", help="Seconds after which a session nobody uses is closed (saved; resume it to go on)."),
    max_action_chars: int = typer.Option(64 * 1024, "--max-action-chars", help="The longest action accepted."),
    max_body_bytes: int = typer.Option(1024 * 1024, "--max-body-bytes", help="The largest request body accepted."),
    max_waiting: int = typer.Option(None, "--max-waiting", show_default=False, help="Turns that may wait beyond --parallel (default: no bound, every turn waits its turn; 0: none waits); one more answers 503 with Retry-After."),
    max_tokens_per_turn: int = typer.Option(None, "--max-tokens-per-turn", show_default=False, help="Tokens one turn may generate, thinking and answer together (default: no ceiling): a session asking a larger max_tokens is refused, thinking gets what is left, so no client holds one of the model's parallel turns for a whole context."),
    parallel: int = typer.Option(None, "--parallel", show_default=False, help=f"The most turns that run at once (more wait their turn, in order). A GGUF gets that many sequences in its context, decoded together, each with --ctx tokens of KV cache (default {DEFAULT_GGUF_PARALLEL}); a server's own count bounds it (default: the server's count, else {SERVER_PARALLEL_DEFAULTS})."),
    openenv: bool = typer.Option(False, "--openenv", help="Serve the OpenEnv protocol instead of awl's REST API (openenv-core's own server: /reset, /step, /state, /schema, /ws...; docs/openenv.md). Needs the `openenv` extra."),
    domain: str = typer.Option(None, "--domain", "-d", show_default=False, help="With --openenv: the world of a reset that names none (terminal, web, os, android, mcp, swe, search; default terminal)."),
    scenario: str = typer.Option(None, "--scenario", "-s", show_default=False, help="With --openenv: a scenario (a bundled name or a .toml file) as the world of a reset that names none."),
    allow_host: list[str] = typer.Option(None, "--allow-host", show_default=False, help="A host name the server also answers to (repeatable), e.g. the machine's name or a proxy's; any Host but the bind address, localhost, 127.0.0.1 and [::1] is refused (421), so a web page cannot reach the server by DNS rebinding."),
    reward: str = typer.Option(None, "--reward", show_default=False, help="What each turn earns, for every session that does not turn it off: `package.module:function` (a Python function of the episode so far) or `judge:MODEL@URL` (an OpenAI-compatible model judges at the episode's end whether its task was achieved). Written beside each turn; default: none (reward 0.0)."),
    reward_timeout: float = opt.REWARD_TIMEOUT,
    reveal_simulator: bool = typer.Option(False, "--reveal-simulator", help=REVEAL_SIMULATOR_HELP),
    shared_world: str = typer.Option(None, "--shared-world", metavar="NAME", show_default=False,
                                     help="The shared world of every session a client opens without naming one "
                                          "(`shared_world` in POST /sessions or a reset): the same actions meet the "
                                          "same stored observations, e.g. `--shared-world grpo-1`."),
    ctx: int = opt.CTX,
    gpu_layers: str = opt.GPU_LAYERS,
    threads: int = opt.THREADS,
    remote: RemoteOptions | None = None,
    offload: OffloadOptions | None = None,
) -> None:
    """Serve simulated environments over HTTP + JSON: sessions, steps (streamed as server-sent events), undo, fork.

    One model serves every session; each session is an ordinary trajectory file in --dir, so a restarted server lists and resumes them.

    API docs at http://HOST:PORT/docs (docs/serve.md). E.g. `awl serve --model PATH/TO/model.gguf`.
    """
    from agentworld_local.errors import InputError
    from agentworld_local.paths import sessions_dir

    try:
        from agentworld_local.serve.app import make_app
        from agentworld_local.serve.server import bind, check_exposure, run
    except ImportError:
        raise InputError("`awl serve` needs FastAPI, uvicorn and sse-starlette.",
                         "Install them: pip install 'agentworld-local[serve]'.") from None
    from agentworld_local.serve.bridge import AsyncRunnerBridge
    from agentworld_local.serve.limits import ServeLimits

    world = (_openenv_world(domain, scenario, max_waiting, max_tokens_per_turn, shared_world) if openenv
             else _no_world(domain, scenario))
    if shared_world is not None:  # a bad name, or a world folder that cannot be made, is said before the model loads
        from agentworld_local.worlds import shared_world as open_world

        shared_world = open_world(shared_world).name
    model_or_server(model, remote, "serve")
    from agentworld_local.session.rewards import reward_hook

    hook = reward_hook(reward)  # a mistake in it is said before the model loads
    for flag, value in (("--max-sessions", max_sessions), ("--max-turns", max_turns), ("--idle", idle),
                        ("--max-action-chars", max_action_chars), ("--max-body-bytes", max_body_bytes),
                        ("--parallel", parallel), ("--max-tokens-per-turn", max_tokens_per_turn)):
        if value is not None and value <= 0:
            raise InputError(f"{flag} must be more than 0.", f"E.g. `{flag} 10`.")
    if max_waiting is not None and max_waiting < 0:
        raise InputError("--max-waiting cannot be negative.", "Use `--max-waiting 0` to refuse every turn beyond --parallel.")
    token = os.environ.get(token_env) or None
    check_exposure(host, token, token_env)
    limits = ServeLimits(max_body_bytes=max_body_bytes, max_action_chars=max_action_chars, max_sessions=max_sessions,
                         idle_s=idle, max_turns=max_turns, max_tokens_per_turn=max_tokens_per_turn, max_waiting=max_waiting,
                         allowed_hosts=tuple(allow_host or ()))
    folder = folder if folder is not None else sessions_dir() / "serve"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"Cannot use {folder} for the sessions ({error.strerror}).", "Give another folder with --dir.") from None
    sock = bind(host, port)  # a taken port is said before the model loads
    console = stderr_console()
    load_options = {"ctx": ctx, "remote": remote, "offload": offload, "parallel": parallel}
    if remote is None:
        load_options.update(gpu_layers=gpu_layers, threads=threads, parallel=parallel or DEFAULT_GGUF_PARALLEL)
    bridge = AsyncRunnerBridge(reward_timeout=opt.check_reward_timeout(reward_timeout))
    try:
        bridge.call_blocking(lambda runner: runner.load(model, **load_options),
                             on_event=lambda event: _say_load(console, event)).raise_failure()
    except BaseException:
        bridge.close()
        sock.close()
        raise
    shown = f"{host}:{sock.getsockname()[1]}" if ":" not in host else f"[{host}]:{sock.getsockname()[1]}"
    label = bridge.runner.model or (remote.api_model if remote is not None else "")
    face = (f"the OpenEnv protocol on http://{shown} (episodes on ws://{shown}/ws; "
            f"check it: openenv validate --url http://{shown})" if openenv else f"on http://{shown} (docs: http://{shown}/docs)")
    joined = f"; sessions join the shared world {shared_world} unless they name another" if shared_world else ""
    console.print(f"awl serve: {label} {face}; sessions in {folder}{joined}"
                  f"{'; clients need the token in $' + token_env if token else ''}. Ctrl+C stops (every turn is saved).",
                  soft_wrap=True, markup=False, highlight=False)
    for line in server_lines(bridge.runner.servers()):
        console.print(f"awl serve: {line}", soft_wrap=True, markup=False, highlight=False)
    try:
        if openenv:
            from agentworld_local.serve.openenv import make_openenv_app

            served = make_openenv_app(folder=folder, runner=bridge.runner, world=world, limits=limits, token=token,
                                      reward=hook, reveal_simulator=reveal_simulator)
        else:
            served = make_app(folder=folder, limits=limits, token=token, bridge=bridge, reward=hook,
                              reveal_simulator=reveal_simulator, shared_world=shared_world)
        run(served, sock, on_exit=lambda: bridge.runner.close(timeout=0))  # turns stop before uvicorn drains
    except KeyboardInterrupt as interrupt:  # uvicorn raises the signal that stopped it again, once sessions closed
        from agentworld_local.cli.interrupts import exit_code

        raise typer.Exit(exit_code(interrupt)) from None  # a clean stop, said below: no "interrupted" after it
    finally:
        console.print("awl serve: stopped; every session's turns are saved.", soft_wrap=True, markup=False, highlight=False)


def server_lines(servers: list) -> list[str]:
    """One status line per server the turns go to (Backend.servers; GET /health has the same):
    up or down, its places, sessions and turns running, its failures."""
    lines = []
    for server in servers:
        state = "up" if server.up else f"down ({server.error}; asked again in {server.retry_in_s or 0:g} s)"
        failed = f", {server.failures} failure{'s' if server.failures != 1 else ''}" if server.failures else ""
        lines.append(f"server {server.endpoint}: {state}, {server.parallel} turns at once, {server.sessions} "
                     f"session{'s' if server.sessions != 1 else ''}, {server.running} running{failed}.")
    return lines


def _say_load(console: object, event: events.SessionEvent) -> None:
    if isinstance(event, events.Notice):
        console.print(f"awl serve: {event.text}", soft_wrap=True, markup=False, highlight=False)  # type: ignore[attr-defined]


def _openenv_world(domain: str | None, scenario: str | None, max_waiting: int | None,
                   max_tokens_per_turn: int | None, shared_world: str | None = None) -> SessionSpec:
    """The default world of `--openenv` sessions, checked (and openenv-core found) before the model loads."""
    from agentworld_local.errors import InputError
    from agentworld_local.session.spec import SessionSpec

    if max_waiting is not None or max_tokens_per_turn is not None:
        raise InputError("--max-waiting and --max-tokens-per-turn are limits of awl's REST API, not of --openenv.",
                         "Leave them out: an OpenEnv turn waits its turn; a reset's max_tokens bounds its answers.")

    try:
        import agentworld_local.serve.openenv  # noqa: F401 - openenv-core and gradio take seconds to import
    except ImportError as error:
        if not (error.name or "").startswith("openenv"):
            raise
        raise InputError("`awl serve --openenv` needs openenv-core.",
                         "Install it: pip install 'agentworld-local[openenv]'.") from None
    world = SessionSpec(domain=domain, scenario=scenario, shared_world=shared_world)
    world.resolve()
    return world


def _no_world(domain: str | None, scenario: str | None) -> None:
    from agentworld_local.errors import InputError

    if domain is not None or scenario is not None:
        raise InputError("--domain and --scenario choose the world of --openenv sessions.",
                         'Add --openenv, or name the world per session in awl\'s API (POST /sessions {"domain": ...}).')
