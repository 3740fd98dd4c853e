"""`awl cache info` and `awl cache clear`: the system-prompt states new sessions reuse
(engine/llama/state_cache.py)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from agentworld_local.cli.main import app
from agentworld_local.models.units import format_bytes

if TYPE_CHECKING:
    from agentworld_local.engine.llama.state_cache import StateCache

cache_app = typer.Typer(
    help="The system-prompt states a model evaluated, kept on disk so a new session starts at once.\n\n"
    "Example: `awl cache info`; `awl cache clear` frees the disk (the next session evaluates its prompt again).",
    no_args_is_help=True,
)
app.add_typer(cache_app, name="cache")


def _cache() -> tuple[StateCache, bool]:
    """The user's cache (even when the config turns it off: its files are still there), and whether it is off."""
    from agentworld_local import paths
    from agentworld_local.config import load_config
    from agentworld_local.engine.llama.state_cache import DEFAULT_BUDGET, StateCache

    budget = load_config().prompt_states
    return StateCache(paths.state_cache_dir(), DEFAULT_BUDGET if not budget else budget), budget == 0


@cache_app.command("info")
def info_command(as_json: bool = typer.Option(False, "--json", help="Print the facts as one JSON object.")) -> None:
    """Where the cached states are, how many, their size and the budget.

    Example: `awl cache info`.
    """
    cache, off = _cache()
    info = cache.info()
    if as_json:
        typer.echo(json.dumps({"directory": str(info.directory), "entries": info.entries, "files": info.files,
                               "bytes": info.bytes, "budget_bytes": cache.budget, "enabled": not off}, indent=2))
        return
    state = "off (config `[cache] prompt_states`)" if off else f"budget {format_bytes(cache.budget)}"
    typer.echo(f"{info.directory}\n{info.entries} cached system prompts, {info.files} files, "
               f"{format_bytes(info.bytes)} ({state})")


@cache_app.command("clear")
def clear_command() -> None:
    """Remove every cached state (new sessions then evaluate their system prompt again).

    Example: `awl cache clear`.
    """
    cache, _ = _cache()
    removed = cache.clear()
    typer.echo(f"Removed {removed.files} files ({format_bytes(removed.bytes)}) from {removed.directory}.")
