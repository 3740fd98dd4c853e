"""The `awl` entry point and the CLI's one error boundary."""

from __future__ import annotations

import importlib
import sys

import typer

from agentworld_local import __version__
from agentworld_local.errors import AwlError

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


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    pass


# Each module adds its commands to `app` when imported; all are imported so `--help` lists them.
COMMAND_MODULES = (
    "demo",
    "replay",
    "run",
    "scenarios",
    "bench",
    "models",
    "models_info",
    "doctor",
)


def _register_commands() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"agentworld_local.cli.{name}")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI. AwlError becomes one line on stderr and its exit code; nothing else is caught."""
    _register_commands()
    try:
        # Outside standalone mode click returns the code of `typer.Exit` instead of raising it.
        result = app(args=argv, standalone_mode=False)
    except AwlError as error:
        typer.echo(f"awl: error: {error.one_line()}", err=True)
        return error.exit_code
    except KeyboardInterrupt:
        typer.echo("awl: interrupted.", err=True)
        return 130
    except typer.Exit as done:
        return done.exit_code
    except typer.Abort:
        typer.echo("awl: aborted.", err=True)
        return 130
    except typer.TyperException as error:  # usage errors (bad option, missing argument)
        error.show()
        return 2
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    # Re-import so `python -m` uses the same `app` that the command modules register on.
    from agentworld_local.cli.main import main as _main

    sys.exit(_main())
