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

from agentworld_local.cli import interrupts  # noqa: E402

import typer  # noqa: E402

from agentworld_local import __version__
from agentworld_local.errors import AwlError
from agentworld_local.terminal_text import safe_for_terminal

app = typer.Typer(
    name="awl",
    help="A local sandbox for language world models: simulated terminals, file systems, "
    "web pages and tool APIs, predicted by a GGUF world model on your machine.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"awl {__version__}")
        raise typer.Exit()


#: The commands that start a user's session: their new files go in the index of sessions
#: (session/files.py), so `awl sessions list` and `--resume last` find them wherever they are.
SESSION_COMMANDS = frozenset({"run", "play", "demo", "fork"})


@app.callback()
def _root(
    context: typer.Context,
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    if context.invoked_subcommand in SESSION_COMMANDS:
        from agentworld_local.session.files import remember_sessions

        remember_sessions()


# Each module adds its commands to `app` when imported; all are imported so `--help` lists them.
COMMAND_MODULES = (
    "demo",
    "play",
    "replay",
    "fork",
    "run",
    "sessions",
    "scenarios",
    "agentworldbench",
    "bench_judge",
    "models",
    "models_info",
    "doctor",
    "cache",
    "mcp",
    "serve",
)


def _register_commands() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"agentworld_local.cli.{name}")


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
    command = typer.main.get_command(app)
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
    interrupts.raise_on_signals()
    try:
        _register_commands()
        _hide_flag_types()
        args = sys.argv[1:] if argv is None else list(argv)
        if not args and sys.stdin.isatty() and sys.stdout.isatty():
            args = ["play"]  # `awl` alone at a terminal opens the start screen; in a pipe, the help
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
