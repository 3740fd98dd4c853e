"""`awl run`: a headless session driven by a script file or stdin."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from agentworld_local.cli.action_prompt import PROMPT, ActionPrompt
from agentworld_local.cli.consoles import stderr_console
from agentworld_local.cli.interrupts import SessionSignals, exit_code
from agentworld_local.cli.main import app
from agentworld_local.cli.preflight import check_ctx_value, check_threads, check_writable
from agentworld_local.cli.turn_output import (
    ScriptLine,
    TurnPrinter,
    count,
    default_session_path,
    ensure_new_file,
    parse_script_line,
    play,
    read_script,
)
from agentworld_local.cli.resimulate import bench_context, bench_settings, run_bench_row
from agentworld_local.domains.base import Domain
from agentworld_local.defaults import (
    CTX_HELP,
    DEFAULT_MAX_TOKENS,
    DEFAULT_SEED,
    DEFAULT_TEMPERATURE,
    MAX_TOKENS_HELP,
    MODEL_HELP,
    SEED_HELP,
    TEMPERATURE_HELP,
    THINK_HELP,
)
from agentworld_local.engine.types import SamplingConfig
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.errors import AwlError, InputError
from agentworld_local.files import read_text
from agentworld_local.paths import action_history_file
from agentworld_local.terminal_text import safe_for_terminal
from agentworld_local.session import events
from agentworld_local.session.core import Session, Shield, domain_from_header
from agentworld_local.session.listing import resolve_session_file
from agentworld_local.session.resume_rules import ResumeOptions, plan_resume, same_model
from agentworld_local.session.loading import SCRIPTED, load_backend as load_session_backend, model_limits
from agentworld_local.session.spec import SessionSpec
from agentworld_local.agentworldbench.rows import read_bench_row


def load_backend(model: str, *, gpu_layers: str, ctx: int | None, threads: int | None, verbose: bool, quiet: bool,
                 console: Console | None = None) -> Any:
    """Load the model (session/loading.py) with a progress bar and its notices on stderr.

    `quiet` (--json, or no terminal): no progress bar; notices are still said on stderr.
    The bar pulses (with the time so far) while the file is read and planned: llama.cpp only
    reports progress while it places the weights, which with mmap is the last moment of a
    load. Notices go through the bar's own console, so each starts on a line of its own.
    """
    console = console or Console(stderr=True)
    options = dict(gpu_layers=gpu_layers, ctx=ctx, threads=threads, verbose=verbose)
    if quiet or not console.is_terminal or model.startswith(SCRIPTED):
        return load_session_backend(model, notice=say_notice, **options)
    columns = (TextColumn("loading {task.description}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(model_label(model), total=None)  # a pulse until llama.cpp says how far

        def advance(fraction: float) -> None:
            progress.update(task, total=1.0, completed=fraction)

        def notice(text: str) -> None:
            # A styled Text, not print(style=): the style must not carry over to the bar.
            progress.console.print(Text(f"awl: {safe_for_terminal(text)}", style="yellow"), soft_wrap=True)

        return load_session_backend(model, progress=advance, notice=notice, **options)


def model_label(model: str) -> str:
    """The name the progress bar shows: a path's file name, a registry name as given."""
    return Path(model).name if ("/" in model or model.endswith(".gguf")) else model


def say_notice(text: str) -> None:
    """A notice from the session core (loading, model limits), on stderr."""
    stderr_console().print(f"awl: {safe_for_terminal(text)}", markup=False, style="yellow")


def say_model_limits(backend: Any, think: str | None) -> None:
    """What the model cannot do as asked, said once, before the first turn."""
    for text in model_limits(backend.info, think):
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


def run_session(
    world: World,
    lines: Iterator[ScriptLine] | list[ScriptLine],
    *,
    out: Path,
    printer: TurnPrinter,
    scenario: dict[str, Any] | None = None,
    interactive: bool = False,
) -> int:
    """A new session in `out`, playing every line (see `play_session`)."""
    return play_session(lambda shield: Session.create(world, out, scenario=scenario, shield=shield),
                        lines, printer=printer, interactive=interactive)


def play_session(
    open_session: Callable[[Shield], Session],
    lines: Iterator[ScriptLine] | list[ScriptLine],
    *,
    printer: TurnPrinter,
    interactive: bool = False,
) -> int:
    """Play every line, saving each finished turn; however it ends, the completed turns are
    kept and the user is told how many and where (`--json`: a last `saved` event).

    Ctrl+C and SIGTERM: see cli/interrupts.SessionSignals (every write to the file is
    shielded). A failing turn (a full disk, a full context) ends the session with one error
    line that says what is saved.
    """
    signals = SessionSignals(threading.Event(), interactive=interactive)
    actions = 0
    with signals.installed():
        session = open_session(signals.saving)
        out = session.path
        try:
            for line in lines:
                actions += line.action is not None
                with signals.turn():
                    _play_line(session, line, printer, signals.cancel, interactive=interactive)
        except KeyboardInterrupt as interrupt:
            session.close()
            turns = len(session.history)
            stderr_console().print(Text.assemble(
                ("\ninterrupted", "yellow"), f": {_saved_in(turns, out)} (replay: awl replay {out})"))
            printer.saved(out, turns)
            return exit_code(interrupt)
        except AwlError as error:
            session.close()
            message = error.message.rstrip()
            error.message = f"{message}{'' if message.endswith('.') else '.'} {_saved_note(len(session.history), out)}"
            if printer.as_json:  # a program reads why the session ended, then where its turns are
                printer.show(events.ErrorEvent(error.message, error.hint or ""))
            printer.saved(out, len(session.history))
            raise
        except BaseException:
            session.close()
            raise
        session.close()
    turns = len(session.history)
    if not actions:
        printer.notice("no actions were given, so no turn was run.")
    printer.saved(out, turns)
    if not printer.as_json:
        stderr_console().print(Text(f"saved {count(turns, 'turn')} to {out}  (replay: awl replay {out})", style="dim"))
    return 0


def _play_line(session: Session, line: ScriptLine, printer: TurnPrinter, cancel: threading.Event, *, interactive: bool) -> None:
    if not interactive:
        play(session, line, printer, cancel)
        return
    try:
        play(session, line, printer, cancel)
    except InputError as error:  # e.g. `:undo` with nothing to undo: the session goes on
        stderr_console().print(f"awl: {safe_for_terminal(error.one_line())}", markup=False)


def _saved_note(turns: int, out: Path) -> str:
    if not turns:
        return f"No turn was completed; {out} holds the session's setup."
    return f"{_saved_in(turns, out)}; continue from {'it' if turns == 1 else 'them'} with `awl fork {out} --out NEW.jsonl`."


def _saved_in(turns: int, out: Path) -> str:
    return f"{count(turns, 'completed turn')} {'is' if turns == 1 else 'are'} saved in {out}"


def _action_forms_epilog() -> str:
    """Each domain's friendly and raw action forms, for `awl run --help` (plain data: fast)."""
    from agentworld_local.domains.forms import action_forms_summary

    # Typer's rich help joins single newlines; a blank line keeps one domain per line.
    return "Actions per domain (friendly forms; raw form):\n\n" + "\n\n".join(action_forms_summary())


@app.command(epilog=_action_forms_epilog())
def run(
    context: typer.Context,
    script: Path = typer.Argument(None, help="Actions, one per line (`#` comments, `:undo`, `:regenerate`, `:control TEXT`). Omit or `-` to read stdin."),
    model: str = typer.Option(None, "--model", "-m", help=MODEL_HELP + " With --resume, the session's own model when not given.", show_default=False),
    domain: str = typer.Option(None, "--domain", "-d", help="Which world to simulate (default: the scenario's, else terminal).", show_default=False),
    state_format: str = typer.Option(None, "--state-format", help="How the state is written, for domains that offer a choice (web: axtree or html).", show_default=False),
    scenario: str = typer.Option(None, "--scenario", "-s", help="A starting world: a name from `awl scenarios list`, or a .toml file.", show_default=False),
    prompts: Path = typer.Option(None, "--prompts", help="A prompt pack: a directory laid out like the official prompts/ (<domain>/system_prompt.txt), e.g. a checkout's prompts/ folder. See docs/domains.md.", show_default=False),
    initial_state: Path = typer.Option(None, "--initial-state", help="File with the starting state (e.g. a screen); overrides the scenario's."),
    task: str = typer.Option(None, "--task", help="The agent's task, given to the world model as context; overrides the scenario's.", show_default=False),
    control: list[str] = typer.Option(None, "--control", "-c", metavar="<str>", help="A control instruction (perturbation) from turn 1, e.g. \"the disk is full\". Repeatable; adds to the scenario's.", show_default=False),
    from_bench: Path = typer.Option(None, "--from-bench", help="Re-simulate one turn of an AgentWorldBench JSONL file (with --row) and show it beside the ground truth.", show_default=False),
    row: int = typer.Option(None, "--row", help="With --from-bench: the row to re-simulate (1-based line of the file).", show_default=False),
    resume: Path = typer.Option(None, "--resume", help="Continue a saved session (a file, or `last` for the newest in the sessions dir), appending to its file, on the branch it was on. Its model, domain, task, tools and prompts come from the file; --max-tokens, --temperature, --think and --seed may change for the new turns, which record them.", show_default=False),
    allow_other_model: bool = typer.Option(False, "--allow-other-model", help="With --resume: go on with a --model other than the one the session was made with (each new turn records its model)."),
    think: str = typer.Option(None, "--think", help=THINK_HELP, show_default=False),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help=SEED_HELP),
    out: Path = typer.Option(None, "--out", "-o", help="Trajectory file to write (default: a new file in the sessions dir)."),
    as_json: bool = typer.Option(False, "--json", help="Print events as JSON lines on stdout."),
    show_thinking: bool = typer.Option(False, "--show-thinking", help="Stream the model's thinking to stderr."),
    ctx: int = typer.Option(None, "--ctx", help=CTX_HELP, show_default=False),
    gpu_layers: str = typer.Option("auto", "--gpu-layers", help="Layers to offload: auto (as many as fit on the GPU; 0 on a CPU-only build; see `awl models info MODEL --plan`), all, or N."),
    threads: int = typer.Option(None, "--threads", help="CPU threads (default: llama.cpp's choice; at most this machine's CPUs).", show_default=False),
    temperature: float = typer.Option(DEFAULT_TEMPERATURE, "--temperature", help=TEMPERATURE_HELP),
    max_tokens: int = typer.Option(DEFAULT_MAX_TOKENS, "--max-tokens", help=MAX_TOKENS_HELP),
    verbose: bool = typer.Option(False, "--verbose", help="Show llama.cpp's own log."),
) -> None:
    """Run a simulated session headless: actions in, predicted observations out.

    Example: `echo "ls -la" | awl run --model world.gguf` or `awl run actions.txt -m world.gguf --out s.jsonl`.

    With a scenario and a perturbation: `awl run -s issue-tracker-rate-limit -c "the server is read-only" -m world.gguf`.
    In a script or at the prompt, `:control TEXT` adds a control instruction for the next turn.

    Re-simulate a benchmark turn: `awl run --from-bench terminal_test.jsonl --row 2 -m world.gguf`.

    Continue a saved session in its file, with its own model: `echo "cat notes.txt" | awl run --resume s.jsonl`
    (`--resume last`: the newest session; `awl sessions list` shows them).
    """
    # Everything that can be checked without the model is checked before it loads.
    spec = SessionSpec(domain=domain, scenario=scenario, task=task, controls=list(control or []),
                       state_format=state_format, temperature=temperature, max_tokens=max_tokens,
                       think=think, seed=seed, prompts=prompts)
    budget = spec.check()
    check_ctx_value(ctx)
    threads = check_threads(threads)
    sampling = SamplingConfig(temperature=temperature, max_tokens=max_tokens)
    load = dict(gpu_layers=gpu_layers, ctx=ctx, threads=threads, verbose=verbose, quiet=as_json)
    if resume is not None:
        conflicts = {"--from-bench": from_bench, "--row": row, "--scenario": scenario, "--domain": domain, "--prompts": prompts,
                     "--state-format": state_format, "--task": task, "--initial-state": initial_state,
                     "--control": control or None, "--out": out}
        given = set(_given(context, ("seed", "--seed"), ("temperature", "--temperature"), ("max_tokens", "--max-tokens")))
        options = ResumeOptions(model=model, allow_other_model=allow_other_model, think=think,
                                temperature=temperature if "--temperature" in given else None,
                                max_tokens=max_tokens if "--max-tokens" in given else None,
                                seed=seed if "--seed" in given else None)
        _resume_session(resume, script, conflicts, options, load=load, as_json=as_json, show_thinking=show_thinking)
    if allow_other_model:
        raise InputError("--allow-other-model only works with --resume.", "Add `--resume FILE`, or drop it.")
    if model is None:
        raise InputError("awl run needs a model.", "Give one with `--model NAME|PATH` (see `awl models list`), "
                         "or continue a saved session with `--resume FILE`.")
    if from_bench is not None or row is not None:
        conflicts = {"a script": script, "--scenario": scenario, "--domain": domain, "--task": task, "--prompts": prompts,
                     "--initial-state": initial_state, "--control": control or None}
        given = set(_given(context, ("temperature", "--temperature"), ("max_tokens", "--max-tokens")))
        # The official evaluation's generation, except for what was given (--max-tokens counts thinking too).
        settings = bench_settings(think=think, temperature=temperature if "--temperature" in given else None,
                                  max_tokens=max_tokens if "--max-tokens" in given else None, seed=seed)
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
    backend = load_backend(model, **load)
    say_model_limits(backend, think)
    world = World(backend, world_domain, settings)
    printer = TurnPrinter(as_json=as_json, show_thinking=show_thinking)
    code = run_session(
        world, lines, out=out, printer=printer, scenario=resolved.scenario_ref,
        interactive=from_stdin and sys.stdin.isatty(),
    )
    backend.close()
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
    backend = load_backend(plan.model, **load)
    say_model_limits(backend, options.think)
    made_with = plan.made_with
    if made_with is not None and options.allow_other_model and not same_model(made_with, backend.info):
        say_notice(f"{path} was made with {made_with.path or made_with.name}; it goes on with "
                   f"{backend.info.path or backend.info.name}, and each new turn records it.")
    printer = TurnPrinter(as_json=as_json, show_thinking=show_thinking)
    code = play_session(lambda shield: Session.resume(path, backend, shield=shield, options=options), lines,
                        printer=printer, interactive=from_stdin and sys.stdin.isatty())
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
    check_writable(out)
    load = {**load, "ctx": bench_context(model, [bench_row], settings, load["ctx"])}
    backend = load_backend(model, **load)
    code = run_bench_row(bench_row, path, backend, settings, out=out, as_json=as_json, show_thinking=show_thinking)
    backend.close()
    raise typer.Exit(code)


def _read_initial_state(path: Path | None) -> str | None:
    return None if path is None else read_text(path, "initial state file")
