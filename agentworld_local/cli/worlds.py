"""`awl worlds`: the shared worlds (worlds/) where AWL_WORLDS_DIR or the config file's `[worlds] store` keeps
them (a folder, or a PostgreSQL database): list, create with settings, info, remove."""

from __future__ import annotations

import json
import re

import typer

from agentworld_local.cli.main import app
from agentworld_local.errors import InputError
from agentworld_local.models.units import format_bytes

worlds_app = typer.Typer(
    help="Shared worlds: sessions that join one by name (`--shared-world NAME`) meet the same answers to the "
    "same actions, predicted once and kept in the world's store (a folder, or a PostgreSQL database: "
    "AWL_WORLDS_DIR=postgresql://user:password@host/db).\n\n"
    "Example: `awl worlds create grpo-1 --shared-reads`, then `awl serve --shared-world grpo-1`.",
    no_args_is_help=True,
)
app.add_typer(worlds_app, name="worlds")

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str) -> int:
    """`512MiB`, `2G`, `1000000` as bytes (at least 1 MiB: a smaller bound would evict every turn)."""
    match = _SIZE.fullmatch(text)
    value = int(float(match.group(1)) * _UNITS[match.group(2).lower()]) if match else 0
    if value < 1024**2:
        raise InputError(f"`--max-size {text}` is not a size of at least 1 MiB.", "Give one such as `512MiB` or `4GiB`.")
    return value


@worlds_app.command("list")
def list_command(as_json: bool = typer.Option(False, "--json", help="Print one JSON object per world.")) -> None:
    """The shared worlds there are, with their size.

    Example: `awl worlds list`.
    """
    from agentworld_local.worlds.locations import shown_location, world_names
    from agentworld_local.worlds.names import worlds_location

    location = worlds_location()
    names = world_names(location)
    if not names and not as_json:
        typer.echo(f"No shared worlds yet in {shown_location(location)}. Join one with `--shared-world NAME` "
                   "(it is created then).")
    for name in names:
        _print(name, as_json)


@worlds_app.command("create")
def create_command(
    name: str = typer.Argument(..., help="The world's name: letters, digits, `-`, `_`, `.`."),
    shared_reads: bool = typer.Option(False, "--shared-reads", help="Actions that only read (a page at a URL, a "
                                      "search query, a read-only tool call) meet the world's first answer in every "
                                      "episode, whatever came before (docs/worlds.md)."),
    max_size: str = typer.Option("1GiB", "--max-size", help="The store's bound; past it the least recently used "
                                 "answers are removed (and predicted again when reached)."),
) -> None:
    """Create a shared world with settings (joining an unknown name creates one with the defaults).

    Example: `awl worlds create web-1 --shared-reads --max-size 4GiB`.
    """
    from agentworld_local.worlds import WorldSettings, create_world

    create_world(name, WorldSettings(shared_reads=shared_reads, max_bytes=parse_size(max_size)))
    _print(name, False)


@worlds_app.command("info")
def info_command(name: str = typer.Argument(..., help="The world's name."),
                 as_json: bool = typer.Option(False, "--json", help="Print the facts as one JSON object.")) -> None:
    """A world's settings and how much its store holds.

    Example: `awl worlds info grpo-1`.
    """
    _existing(name)
    _print(name, as_json)


@worlds_app.command("remove")
def remove_command(name: str = typer.Argument(..., help="The world's name.")) -> None:
    """Remove a world and everything its store holds (sessions' files keep their turns).

    Example: `awl worlds remove grpo-1`.
    """
    from agentworld_local.worlds.locations import remove_world, shown_location
    from agentworld_local.worlds.names import worlds_location

    location = worlds_location()
    if not remove_world(name, location):
        raise _none(name, location)
    typer.echo(f"Removed the shared world `{name}` ({shown_location(location)}).")


def _existing(name: str) -> None:
    from agentworld_local.worlds.locations import world_exists
    from agentworld_local.worlds.names import worlds_location

    location = worlds_location()
    if not world_exists(name, location):
        raise _none(name, location)


def _none(name: str, location) -> InputError:
    from agentworld_local.worlds.locations import shown_location

    return InputError(f"There is no shared world `{name}` in {shown_location(location)}.",
                      "`awl worlds list` shows the worlds there are.")


def _print(name: str, as_json: bool) -> None:
    from agentworld_local.worlds import shared_world

    world = shared_world(name)
    stats, settings = world.store.stats(), world.settings
    if as_json:
        typer.echo(json.dumps({"name": name, "path": str(world.store.location), "answers": stats.answers,
                               "bytes": stats.bytes, "evicted": stats.evicted, "max_bytes": settings.max_bytes,
                               "shared_reads": settings.shared_reads}))
        return
    typer.echo(f"{name}: {stats.answers} answers, {format_bytes(stats.bytes)} of {format_bytes(settings.max_bytes)}"
               f"{f', {stats.evicted} evicted' if stats.evicted else ''}; shared reads "
               f"{'on' if settings.shared_reads else 'off'} ({world.store.location})")
