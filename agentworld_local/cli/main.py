"""The `awl` entry point and the CLI's one error boundary."""

from __future__ import annotations

# First, before any import that takes time: a Ctrl+C or SIGTERM while awl starts ends it at
# once and quietly (nothing is written yet), never with a traceback from inside an import.
# Only when run as `awl` or with `python -m`: a program that imports this module keeps its
# own handlers. `signal`, `os` and `sys` are loaded with the interpreter: importing them is free.
import os
import signal
import sys


def _quit_while_starting(signum: int, frame: object) -> None:
    os.write(2, b"\nawl: interrupted.\n")
    os._exit(128 + signum)


if __name__ == "__main__" or os.path.splitext(os.path.basename(sys.argv[0] if sys.argv else ""))[0] == "awl":
    for _number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_number, _quit_while_starting)

import importlib  # noqa: E402
from typing import Any  # noqa: E402

from agentworld_local import __version__  # noqa: E402

# `awl --help`, `awl --version` and `awl` alone in a pipe are answered from this table
# without importing typer, rich or any command (start-up is then close to `python -c pass`,
# bench/cli_startup.py); any other command imports only the module that defines it.
# tests/cli/test_lazy_commands.py checks the table against the commands' own help.
ROOT_HELP = ("A local sandbox for language world models: simulated terminals, file systems, "
             "web pages and tool APIs, predicted by a GGUF world model on your machine.")
#: Each command: the modules that define it (in import order), and its help's first paragraph;
#: in the order `awl --help` lists them.
COMMANDS: dict[str, tuple[tuple[str, ...], str]] = {
    "run": (("run",), "Run a simulated session headless: actions in, predicted observations out."),
    "demo": (("demo",), "Show what awl does, without any model: a hand-written example session, replayed."),
    "play": (("play",), "Sit in front of a simulated world: type actions, watch the model think, undo, fork."),
    "export": (("agentworldbench",), "Export a session: benchmark rows (one JSONL row per turn of its current branch), "
               "a terminal session as an asciinema recording, or a web or desktop session's pages as one HTML file."),
    "import": (("agentworldbench",), "Turn benchmark rows into trajectories that `awl replay` shows."),
    "replay": (("replay",), "Replay a saved session turn by turn, without loading a model."),
    "fork": (("fork",), "Copy a session's current branch, up to a turn, into a new clean file."),
    "doctor": (("doctor",), "Check this machine for running world models: Python, llama-cpp-python and its GPU "
               "backend (CUDA, Metal, Vulkan or CPU only), GPUs and their free memory, RAM, CPU threads."),
    "mcp": (("mcp",), "Serve a simulated machine to an agent over MCP (stdio): tools `act`, `state`, `undo`, `reset`."),
    "serve": (("serve",), "Serve simulated environments over HTTP + JSON: sessions, steps (streamed as server-sent "
              "events), undo, fork."),
    "bench": (("agentworldbench", "bench_judge"), "Run a world model over AgentWorldBench files."),
    "sessions": (("sessions",), "The sessions awl saved: in the sessions dir, and wherever `--out` put them."),
    "scenarios": (("scenarios",), "Ready-made starting worlds: domain, task, initial state, tools and control "
                  "instructions."),
    "models": (("models", "models_info"), "Named models: list what is known and downloaded, pull from the Hugging Face "
               "hub, register a GGUF you already have, remove downloads. Example: `awl models pull "
               "qwen-agentworld-35b-a3b` then `awl run --model qwen-agentworld-35b-a3b`."),
    "worlds": (("worlds",), "Shared worlds: sessions that join one by name (`--shared-world NAME`) meet the same "
               "answers to the same actions, predicted once and kept in the world's store (a folder, or a PostgreSQL "
               "database: AWL_WORLDS_DIR=postgresql://user:password@host/db)."),
    "cache": (("cache",), "The system-prompt states a model evaluated, kept on disk so a new session starts at once."),
}
#: Every command module; importing all lists every command (tests; an unknown command's error).
COMMAND_MODULES = tuple(dict.fromkeys(module for modules, _ in COMMANDS.values() for module in modules))

#: The commands that start a user's session: their new files go in the index of sessions
#: (session/files.py), so `awl sessions list` and `--resume last` find them wherever they are.
SESSION_COMMANDS = frozenset({"run", "play", "demo", "fork"})

_APP: Any = None


def __getattr__(name: str) -> Any:
    """`from agentworld_local.cli.main import app` (every command module): the Typer app,
    made (and typer imported) on first use."""
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _app() -> Any:
    global _APP
    if _APP is not None:
        return _APP
    import typer

    app = typer.Typer(name="awl", help=ROOT_HELP, no_args_is_help=True, pretty_exceptions_enable=False,
                      add_completion=False)

    def _version_callback(value: bool) -> None:
        if value:
            typer.echo(f"awl {__version__}")
            raise typer.Exit()

    def _root(
        context: typer.Context,
        version: bool = typer.Option(
            False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
        ),
    ) -> None:
        if context.invoked_subcommand in SESSION_COMMANDS:
            from agentworld_local.session.files import remember_sessions

            remember_sessions()
            context.call_on_close(lambda: remember_sessions(False))  # this command's files only, not a host program's

    # typer reads the annotations (strings here) in this module's globals, which have no typer.
    _root.__annotations__ = {"context": typer.Context, "version": bool, "return": None}
    app.callback()(_root)
    _APP = app
    return app


def _register_commands(name: str | None = None) -> None:
    """Import the modules of command `name` (every command when None or unknown)."""
    modules = COMMANDS[name][0] if name in COMMANDS else COMMAND_MODULES
    for module in modules:
        importlib.import_module(f"agentworld_local.cli.{module}")
    # A module imported before (a program, a test) registered its commands first: the help keeps the table's order.
    order = {command: index for index, command in enumerate(COMMANDS)}
    app = _app()
    app.registered_commands.sort(key=lambda info: order.get(_command_name(info), len(order)))
    app.registered_groups.sort(key=lambda info: order.get(info.name or "", len(order)))


def _command_name(info: Any) -> str:
    return info.name or info.callback.__name__.replace("_", "-")


def root_help(width: int | None = None) -> str:
    """`awl --help`, from the COMMANDS table (no command is imported)."""
    import shutil
    import textwrap

    width = max(40, min(width or shutil.get_terminal_size((80, 24)).columns, 100))
    column = max(len(name) for name in COMMANDS) + 4

    def block(text: str, indent: str, first: str = "") -> str:
        return textwrap.fill(text, width, initial_indent=first or indent, subsequent_indent=indent)

    lines = ["Usage: awl [OPTIONS] COMMAND [ARGS]...", "", block(ROOT_HELP, "  "), "", "Options:"]
    for option, text in (("--version", "Print the version and exit."), ("--help", "Show this message and exit.")):
        lines.append(block(text, " " * column, f"  {option:<{column - 2}}"))
    lines += ["", "Commands:"]
    for name, (_, text) in COMMANDS.items():
        lines.append(block(text, " " * column, f"  {name:<{column - 2}}"))
    lines += ["", block("`awl COMMAND --help` shows a command's options and an example; `awl` alone at a "
                        "terminal opens the full-screen sandbox.", "")]
    return "\n".join(lines) + "\n"


def _hide_flag_types() -> None:
    """typer's help shows `<bool>` beside a flag such as `--json`, as if it took a value: drop it."""
    from typer.core import TyperOption

    if getattr(TyperOption.display_type_rich, "_awl", False):
        return
    shown = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        if self.is_flag and self.metavar is None:
            return None
        return shown(self, ctx)

    display_type_rich._awl = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


def _invoke(args: list[str]) -> Any:
    """Parse and run one command, letting its exceptions through. (`app()` would turn a
    KeyboardInterrupt into a silent exit 130, and a SIGTERM into the same.)"""
    import typer

    command = typer.main.get_command(_app())
    try:
        with command.make_context("awl", args) as context:
            return command.invoke(context)
    except BrokenPipeError:
        # The reader went away (`awl ... | head`): say nothing more to it.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - kept open until exit
        return 1


def main(argv: list[str] | None = None) -> int:
    """Run the CLI. AwlError becomes one line on stderr and its exit code; nothing else is caught.

    Ctrl+C (exit 130) and SIGTERM (exit 143) end it with one line, never a traceback.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    if not args and sys.stdin.isatty() and sys.stdout.isatty():
        args = ["play"]  # `awl` alone at a terminal opens the start screen; in a pipe, the help
    if args in ([], ["--help"]):
        sys.stdout.write(root_help())
        return 2 if not args else 0  # no command given: a usage mistake, as click says it
    if args == ["--version"]:
        sys.stdout.write(f"awl {__version__}\n")
        return 0
    from agentworld_local.cli import interrupts

    import typer

    from agentworld_local.errors import AwlError
    from agentworld_local.terminal_text import safe_for_terminal

    # Only now: a signal while these imports ran was the quiet start-up handler's (above).
    interrupts.raise_on_signals()
    try:
        _register_commands(args[0])
        _hide_flag_types()
        if "--help" in args or "-h" in args:  # option names in one column: help text fits 80 columns
            from agentworld_local.cli.help_layout import fit_option_help

            fit_option_help()
        result = _invoke(args)
    except AwlError as error:
        typer.echo(f"awl: error: {safe_for_terminal(error.one_line())}", err=True)
        return error.exit_code
    except KeyboardInterrupt as interrupt:
        interrupts.handled()
        typer.echo("awl: interrupted.", err=True)
        return interrupts.exit_code(interrupt)
    except typer.Exit as done:
        if done.exit_code in (130, 143):  # a session that kept its turns after Ctrl+C or SIGTERM
            interrupts.handled()
        return done.exit_code
    except (typer.Abort, EOFError):  # a question answered with Ctrl+C or Ctrl+D
        typer.echo("\nawl: aborted.", err=True)
        return 130
    except typer.TyperException as error:  # usage errors (bad option, missing argument)
        error.show()
        return 2
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    # Re-import so `python -m` uses the same `app` that the command modules register on.
    from agentworld_local.cli.main import main as _main

    sys.exit(_main())
