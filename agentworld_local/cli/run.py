"""`awl run`: a headless session driven by a script file or stdin."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from agentworld_local.cli.action_prompt import PROMPT, ActionPrompt
from agentworld_local.cli.agent_run import check_agent_options, load_agent, run_agent_session
from agentworld_local.cli.consoles import stderr_console
from agentworld_local.cli.model_options import offload_model_options, remote_model_options
from agentworld_local.cli import session_options as options
from agentworld_local.cli.session_options import check_reward_timeout
from agentworld_local.cli.main import app
from agentworld_local.cli.preflight import check_ctx_value, check_threads, check_writable
from agentworld_local.cli.session_loop import load_display, load_model, play_lines, say_notice, start_runner
from agentworld_local.cli.turn_output import (
    ScriptLine,
    TurnPrinter,
    default_session_path,
    ensure_new_file,
    parse_script_line,
    read_script,
)
from agentworld_local.cli.resimulate import bench_context, bench_settings, run_bench_row
from agentworld_local.domains.base import Domain
from agentworld_local.defaults import MODEL_HELP
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.models.offload_options import OffloadOptions
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.errors import InputError
from agentworld_local.files import read_text, user_path_option
from agentworld_local.paths import action_history_file
from agentworld_local.terminal_text import safe_for_terminal
from agentworld_local.session.core import domain_from_header
from agentworld_local.session.listing import resolve_session_file
from agentworld_local.session.resume_rules import ResumeOptions, plan_resume, same_model
from agentworld_local.session.rewards import reward_hook
from agentworld_local.session.runner import NewSession
from agentworld_local.engine.loading import SCRIPTED, load_backend as load_session_backend, model_limits
from agentworld_local.session.spec import SessionSpec
from agentworld_local.agentworldbench.rows import file_name_part, read_bench_row


def load_backend(model: str | None, *, gpu_layers: str, ctx: int | None, threads: int | None, verbose: bool, quiet: bool,
                 console: Console | None = None, remote: RemoteOptions | None = None,
                 offload: OffloadOptions | None = None) -> Any:
    """Load a model in this thread for work that is not a session (`awl bench predict`), with
    the same progress bar and notices as a session's load (cli/session_loop.load_display)."""
    options = dict(gpu_layers=gpu_layers, ctx=ctx, threads=threads, verbose=verbose, remote=remote, offload=offload)
    label = model or (remote.api_model if remote is not None else "")
    with load_display(label, quiet=quiet, console=console,
                      bar=remote is None and not label.startswith(SCRIPTED)) as (progress, notice):
        return load_session_backend(model, progress=progress, notice=notice, **options)


def say_model_limits(info: Any, think: str | None) -> None:
    """What the model (its ModelInfo) cannot do as asked, said once, before the first turn."""
    for text in model_limits(info, think):
        say_notice(text)


def _stdin_lines(domain: Domain) -> Iterator[ScriptLine]:
    """Actions from stdin, read as bytes and decoded line by line: a line that is not UTF-8
    is named (at a prompt it is reported and the session goes on), never half-decoded.
    At a terminal, the prompt has line editing and a history (cli/action_prompt.py)."""
    interactive = sys.stdin.isatty()
    prompt = ActionPrompt(action_history_file()) if interactive and ActionPrompt.usable() else None
    number = 0
    while True:
        try:
            if prompt is not None:
                data: str | bytes | None = prompt.read()
            else:
                if interactive:
                    sys.stderr.write(PROMPT)
                    sys.stderr.flush()
                data = sys.stdin.buffer.readline()
        except OSError:
            return  # the terminal went away: treat it as the end of input
        except UnicodeDecodeError as problem:  # readline's line, decoded by Python
            data = problem.object if isinstance(problem.object, bytes) else b"\xff"
        if data is None or data == b"":  # the end of input (an empty line typed is "")
            return
        number += 1
        try:
            text = data if isinstance(data, str) else _decode_line(data, number)
            line = parse_script_line(domain, text, number, "stdin")
        except InputError as error:
            if not interactive:
                raise
            # At a prompt, a typo should not end the session.
            stderr_console().print(f"awl: {safe_for_terminal(error.one_line())}", markup=False)
            continue
        if line is not None:
            yield line


def _decode_line(data: bytes, number: int) -> str:
    try:
        return data.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as problem:
        raise InputError(
            f"stdin:{number}: the line is not UTF-8 text (byte 0x{data[problem.start]:02x} at column {problem.start + 1}).",
            "Send actions as UTF-8.",
        ) from None


def _action_forms_epilog() -> str:
    """Each domain's friendly and raw action forms, for `awl run --help` (plain data: fast)."""
    from agentworld_local.domains.forms import action_forms_summary

    # Typer's rich help joins single newlines; a blank line keeps one domain per line.
    return "Actions per domain (friendly forms; raw form):\n\n" + "\n\n".join(action_forms_summary())


@app.command(epilog=_action_forms_epilog())
@remote_model_options
@offload_model_options
def run(
    context: typer.Context,
    script: Path = typer.Argument(None, help="Actions, one per line (`#` comments, `:undo`, `:regenerate`, `:control TEXT`). Omit or `-` to read stdin.", callback=user_path_option),
    model: str = typer.Option(None, "--model", "-m", help=MODEL_HELP + " With --resume, the session's own model when not given.", show_default=False),
    domain: str = options.DOMAIN,
    state_format: str = typer.Option(None, "--state-format", help="How the state is written, for domains that offer a choice (web: axtree or html).", show_default=False),
    scenario: str = options.SCENARIO,
    prompts: Path = options.PROMPTS,
    initial_state: Path = typer.Option(None, "--initial-state", help="File with the starting state (e.g. a screen); overrides the scenario's.", callback=user_path_option),
    task: str = options.TASK,
    control: list[str] = options.CONTROL,
    from_bench: Path = typer.Option(None, "--from-bench", help="Re-simulate one turn of an AgentWorldBench JSONL file (with --row) and show it beside the ground truth.", show_default=False, callback=user_path_option),
    row: int = typer.Option(None, "--row", help="With --from-bench: the row to re-simulate (1-based line of the file).", show_default=False),
    stop_at_observation: bool = typer.Option(False, "--stop-at-observation", help="With --from-bench: end the answer at its first closed observation block (the official evaluation generates to the end of the turn; a session always stops there)."),
    repetition_guard: bool = typer.Option(False, "--repetition-guard", help="With --from-bench: end an answer that falls into a degenerate loop (the official evaluation has no such guard; a session always has it)."),
    resume: Path = typer.Option(None, "--resume", help="Continue a saved session (a file, or `last` for the newest in the sessions dir), appending to its file, on the branch it was on. Its model, domain, task, tools and prompts come from the file; --max-tokens, --temperature, --think and --seed may change for the new turns, which record them.", show_default=False, callback=user_path_option),
    allow_other_model: bool = typer.Option(False, "--allow-other-model", help="With --resume: go on with a --model other than the one the session was made with (each new turn records its model)."),
    think: str = options.THINK,
    seed: int = options.SEED,
    shared_world: str = options.SHARED_WORLD,
    out: Path = typer.Option(None, "--out", "-o", help="Trajectory file to write (default: a new file in the sessions dir).", callback=user_path_option),
    as_json: bool = typer.Option(False, "--json", help="Print events as JSON lines on stdout."),
    show_thinking: bool = typer.Option(False, "--show-thinking", help="Stream the model's thinking to stderr."),
    ctx: int = options.CTX,
    gpu_layers: str = options.GPU_LAYERS,
    threads: int = options.THREADS,
    temperature: float = options.TEMPERATURE,
    max_tokens: int = options.MAX_TOKENS,
    verbose: bool = typer.Option(False, "--verbose", help="Show llama.cpp's own log."),
    agent: str = typer.Option(None, "--agent", help="An agent model proposes every action: openai:MODEL@URL (key from OPENAI_API_KEY), a .gguf path or a registry name (loaded beside the world model), or scripted:FILE.", show_default=False),
    agent_steps: int = typer.Option(None, "--agent-steps", help="With --agent: the most turns the agent takes (default 10); the domain's own ending (`[]` in the terminal) ends the episode sooner.", show_default=False),
    agent_key_env: str = typer.Option(None, "--agent-key-env", help="With --agent openai:...: the environment variable that holds the agent server's key (default: OPENAI_API_KEY when set). The key itself is never written.", show_default=False),
    approve: bool = typer.Option(False, "--approve", help="With --agent, at a terminal: ask about each proposal (run it, edit it, replace it, let the agent run, quit)."),
    reward: str = typer.Option(None, "--reward", help="What each turn earns, written beside it: `package.module:function` (a Python function of the episode so far) or `judge:MODEL@URL` (an OpenAI-compatible model judges at the episode's end whether the task was achieved). Default: none.", show_default=False),
    reward_timeout: float = options.REWARD_TIMEOUT,
    remote: RemoteOptions | None = None,
    offload: OffloadOptions | None = None,
) -> None:
    """Run a simulated session headless: actions in, predicted observations out.

    Example: `echo "ls -la" | awl run --model world.gguf` or `awl run actions.txt -m world.gguf --out s.jsonl`.

    With a scenario and a perturbation: `awl run -s issue-tracker-rate-limit -c "the server is read-only" -m world.gguf`.
    In a script or at the prompt, `:control TEXT` adds a control instruction for the next turn.

    Re-simulate a benchmark turn: `awl run --from-bench terminal_test.jsonl --row 2 -m world.gguf`.

    Continue a saved session in its file, with its own model: `echo "cat notes.txt" | awl run --resume s.jsonl`
    (`--resume last`: the newest session; `awl sessions list` shows them).

    An agent model acts: `awl run -m world.gguf --agent openai:qwen3@http://127.0.0.1:8000/v1 --agent-steps 5 --task "..."`.
    """
    # Everything that can be checked without the model is checked before it loads.
    spec = SessionSpec(domain=domain, scenario=scenario, task=task, controls=list(control or []),
                       state_format=state_format, temperature=temperature, max_tokens=max_tokens,
                       think=think, seed=seed, prompts=prompts, shared_world=shared_world)
    spec.check()
    check_ctx_value(ctx)
    threads = check_threads(threads)
    steps = check_agent_options(agent, agent_steps, approve, {"a script": script is not None and str(script) != "-",
                                                             "--resume": resume, "--from-bench": from_bench},
                                agent_key_env)
    # One session: one turn at a time (a server's capacity is not this command's to say).
    load = dict(gpu_layers=gpu_layers, ctx=ctx, threads=threads, verbose=verbose, quiet=as_json, remote=remote,
                offload=offload, parallel=1)
    if resume is not None:
        conflicts = {"--from-bench": from_bench, "--row": row, "--scenario": scenario, "--domain": domain, "--prompts": prompts,
                     "--state-format": state_format, "--task": task, "--initial-state": initial_state,
                     "--control": control or None, "--out": out, "--shared-world": shared_world}
        given = set(_given(context, ("seed", "--seed"), ("temperature", "--temperature"), ("max_tokens", "--max-tokens")))
        options = ResumeOptions(model=model, remote=remote, allow_other_model=allow_other_model, think=think,
                                temperature=temperature if "--temperature" in given else None,
                                max_tokens=max_tokens if "--max-tokens" in given else None,
                                seed=seed if "--seed" in given else None)
        _resume_session(resume, script, conflicts, options, load=load, as_json=as_json, show_thinking=show_thinking)
    if allow_other_model:
        raise InputError("--allow-other-model only works with --resume.", "Add `--resume FILE`, or drop it.")
    if model is None and remote is None:
        raise InputError("awl run needs a model.", "Give one with `--model NAME|PATH` (see `awl models list`), "
                         "a server with `--backend openai --base-url URL --api-model NAME`, "
                         "or continue a saved session with `--resume FILE`.")
    if (stop_at_observation or repetition_guard) and from_bench is None:
        flag = "--stop-at-observation" if stop_at_observation else "--repetition-guard"
        raise InputError(f"{flag} only works with --from-bench: a session always has it.", f"Drop {flag}.")
    if from_bench is not None or row is not None:
        conflicts = {"a script": script, "--scenario": scenario, "--domain": domain, "--task": task, "--prompts": prompts,
                     "--initial-state": initial_state, "--control": control or None, "--shared-world": shared_world}
        given = set(_given(context, ("temperature", "--temperature"), ("max_tokens", "--max-tokens")))
        # The official evaluation's generation, except for what was given (--max-tokens counts thinking too).
        settings = bench_settings(think=think, temperature=temperature if "--temperature" in given else None,
                                  max_tokens=max_tokens if "--max-tokens" in given else None, seed=seed,
                                  stop_at_observation=stop_at_observation, repetition_guard=repetition_guard)
        _bench_session(from_bench, row, conflicts, model=model, load=load, out=out, as_json=as_json,
                       show_thinking=show_thinking, settings=settings)
    spec.initial_state = _read_initial_state(initial_state)
    resolved = spec.resolve()
    world_domain, settings = resolved.domain, resolved.settings
    if resolved.prompts_from_config is not None and settings.prompt_pack:
        stderr_console().print(f"awl: the prompt pack {settings.prompt_pack['path']} (set in {resolved.prompts_from_config}; "
                               "--prompts overrides it)", markup=False, style="dim")
    out = out or default_session_path(world_domain.name)
    ensure_new_file(out)
    check_writable(out)
    from_stdin = script is None or str(script) == "-"
    lines: Any = _stdin_lines(world_domain) if from_stdin else read_script(world_domain, script)
    if not from_stdin and not any(line.action is not None for line in lines):
        stderr_console().print(f"awl: the script {script} holds no actions (only blank lines, comments or "
                               "session commands); nothing to run, and no model was loaded.", markup=False, style="yellow")
        raise typer.Exit(0)
    printer = TurnPrinter(as_json=as_json, show_thinking=show_thinking)
    new = NewSession.from_spec(resolved, out, reward=reward_hook(reward))
    runner = start_runner(reward_timeout=check_reward_timeout(reward_timeout))
    if agent is not None:
        _agent_session(runner, new, agent, load, steps=steps, approve=approve, printer=printer, think=think, model=model,
                       key_env=agent_key_env)
    try:
        say_model_limits(load_model(runner, model, **load), think)
        code = play_lines(runner, lambda: runner.open(new), lines, printer=printer,
                          interactive=from_stdin and sys.stdin.isatty())
    finally:
        runner.close()
    raise typer.Exit(code)


def _agent_session(runner: Any, new: NewSession, spec: str, load: dict[str, Any], *, steps: int,
                   approve: bool, printer: TurnPrinter, think: str, model: str | None, key_env: str | None) -> None:
    """`--agent`: the agent model proposes every action; always ends the command (typer.Exit)."""
    agent_model = None
    try:
        say_model_limits(load_model(runner, model, **load), think)
        agent_model = load_agent(spec, load, key_env)
        code = run_agent_session(runner, new, agent_model, steps=steps, approve=approve, printer=printer)
    finally:
        runner.close()
        if agent_model is not None:
            agent_model.close()
    raise typer.Exit(code)


def _given(context: typer.Context, *options: tuple[str, str]) -> list[str]:
    """The options (of `(parameter, flag)` pairs) written on the command line, defaults aside."""
    sources = {name: context.get_parameter_source(name) for name, _ in options}
    return [flag for name, flag in options if sources[name] is not None and sources[name].name != "DEFAULT"]


def _resume_session(
    path: Path, script: Path | None, conflicts: dict[str, Any], options: ResumeOptions, *, load: dict[str, Any],
    as_json: bool, show_thinking: bool,
) -> None:
    """`--resume FILE`: the saved session goes on in the same file; always ends the command.
    The rules (which model, which settings may change) are the core's: session/resume_rules.py."""
    given = [name for name, value in conflicts.items() if value is not None]
    if given:
        raise InputError(
            f"--resume continues {path} with the world it was saved with; {given[0]} cannot change it.",
            f"Drop {given[0]}, or start a new session from a copy: `awl fork {path} --out NEW.jsonl`.",
        )
    path = resolve_session_file(path)
    # Checked before the model loads: a damaged or foreign file (refused, with `awl fork`), an
    # unfinished last line (cut off), a bad option, a model file that is not the session's.
    plan = plan_resume(path, options)
    domain = domain_from_header(plan.header)
    from_stdin = script is None or str(script) == "-"
    lines: Any = _stdin_lines(domain) if from_stdin else read_script(domain, script)
    printer = TurnPrinter(as_json=as_json, show_thinking=show_thinking)
    runner = start_runner()
    try:
        info = load_model(runner, plan.model, **load)
        say_model_limits(info, options.think)
        made_with = plan.made_with
        if made_with is not None and options.allow_other_model and not same_model(made_with, info):
            say_notice(f"{path} was made with {made_with.path or made_with.name}; it goes on with "
                       f"{info.path or info.name}, and each new turn records it.")
        code = play_lines(runner, lambda: runner.resume(path, options=options), lines, printer=printer,
                          interactive=from_stdin and sys.stdin.isatty())
    finally:
        runner.close()
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
    out = out or default_session_path(f"bench-{file_name_part(bench_row.domain)}")
    ensure_new_file(out)
    check_writable(out)
    load = {**load, "ctx": bench_context(model, [bench_row], settings, load["ctx"])}
    runner = start_runner()
    try:
        load_model(runner, model, **load)
        code = run_bench_row(runner, bench_row, path, settings, out=out, as_json=as_json,
                             show_thinking=show_thinking)
    finally:
        runner.close()
    raise typer.Exit(code)


def _read_initial_state(path: Path | None) -> str | None:
    return None if path is None else read_text(path, "initial state file")
