"""`awl models list|pull|rm|add`: the model registry and hub downloads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TextColumn, TimeRemainingColumn, TransferSpeedColumn
from rich.table import Table
from rich.markup import escape

from agentworld_local.cli.main import app
from agentworld_local.errors import AwlError, InputError
from agentworld_local.models.registry import ModelChoice, add_local_file, load_registry, remove_user_entry
from agentworld_local.models.units import format_size

if TYPE_CHECKING:
    from agentworld_local.models.hub import PullProgress

# models.hub imports huggingface_hub (a third of a second): only the commands that need it import it,
# so `awl run` and friends start as fast as before.

models_app = typer.Typer(
    help="Named models: list what is known and downloaded, pull from the Hugging Face hub, "
    "register a GGUF you already have, remove downloads. "
    "Example: `awl models pull qwen-agentworld-35b-a3b` then `awl run --model qwen-agentworld-35b-a3b`.",
    no_args_is_help=True,
)
app.add_typer(models_app, name="models")

SPEC_HELP = "A registry name, or NAME:QUANT for another quantization (e.g. qwen-agentworld-35b-a3b:UD-Q2_K_XL)."


def _size_text(choice: ModelChoice, on_disk: int | None = None) -> str:
    if on_disk is not None:  # the file the user has is what counts for their disk
        return format_size(on_disk)
    if choice.size is not None:
        return format_size(choice.size)
    return f"~{format_size(choice.approx_size)}" if choice.approx_size is not None else "?"


def _verified_text(choice: ModelChoice, on_disk: int | None) -> str:
    if choice.size is not None and on_disk is not None and on_disk != choice.size:
        return "differs"  # a copy registered with `awl models add` that is not the registry's file
    return "yes" if choice.verified else "no"


def world_model_text(value: bool | None) -> str:
    return {True: "yes", False: "no"}.get(value, "?")


def _file_size(path: Path | None) -> int | None:
    try:
        return path.stat().st_size if path is not None else None
    except OSError:
        return None


def _row(choice: ModelChoice) -> dict[str, Any]:
    from agentworld_local.models.hub import cached_path

    path = cached_path(choice)
    return {
        "spec": choice.spec,
        "name": choice.name,
        "quant": choice.quant,
        "default": choice.is_default,
        "title": choice.title,
        "world_model": choice.world_model,
        "repo": choice.repo or None,
        "revision": choice.revision,
        "file": choice.filename,
        "size": choice.size,
        "approx_size": choice.approx_size,
        "sha256": choice.sha256,
        "verified": choice.verified,
        "unverified": list(choice.unverified),
        "context_length": choice.context_length,
        "sampling": choice.sampling,
        "license": choice.license,
        "notes": choice.notes,
        "source": choice.source,
        "local_file": str(choice.local_file) if choice.local_file else None,
        "downloaded": path is not None,
        "path": str(path) if path else None,
        "file_size": _file_size(path),
    }


#: Under the table, each line within 80 columns.
LIST_LEGEND = (
    "* default quantization   ~ estimated size   ? not in the registry",
    "verified: file name and size checked; differs: your file is not the registry's",
    "world model no: a general model, fine for a first try; its answers are guesses.",
)


@models_app.command("list")
def list_models(as_json: bool = typer.Option(False, "--json", help="Print a JSON list (one object per model file).")) -> None:
    """What awl knows, what is downloaded, and sizes.

    `*` marks a model's default quantization, `~` an estimated size and `?` what the registry does
    not say; `world model: no` marks a general model (fine for trying awl out, but its observations
    are guesses); `verified: no` means the file name and size were not checked against the hub (the
    pull checks them), `differs` that your file (`awl models add`) is not the registry's. The paths of
    the files on disk follow the table. Example: `awl models list --json`.
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from agentworld_local.models.hub import hub_cache_dir

    registry = load_registry()
    choices = registry.choices()
    rows = [_row(choice) for choice in choices]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    # Fits 80 columns: paths go below the table, on lines of their own that stay copyable.
    table = Table(box=None, pad_edge=False)
    table.add_column("model", overflow="fold")
    table.add_column("size", no_wrap=True)
    table.add_column("world\nmodel", no_wrap=True)
    table.add_column("verified", no_wrap=True)
    table.add_column("downloaded", no_wrap=True)
    for choice, row in zip(choices, rows):
        table.add_row(
            ("* " if choice.is_default else "  ") + choice.spec,
            _size_text(choice, row["file_size"]),
            world_model_text(choice.world_model),
            _verified_text(choice, row["file_size"]),
            "[green]yes[/green]" if row["downloaded"] else "[dim]no[/dim]",
        )
    console = Console(highlight=False)
    console.print(table)
    on_disk = [row for row in rows if row["downloaded"]]
    if on_disk:
        console.print("\nFiles on disk:")
        for row in on_disk:
            console.print(f"  {escape(row['spec'])}  {escape(row['path'])}", soft_wrap=True)
    console.print()
    for line in LIST_LEGEND:
        console.print(line, style="dim", markup=False)
    console.print("[dim]Get one: awl models pull NAME[:QUANT]   Details: awl models info NAME[:QUANT][/dim]", soft_wrap=True)
    console.print(f"[dim]Your registry: {escape(str(registry.user_file))}.  Downloads: {escape(str(hub_cache_dir()))}[/dim]", soft_wrap=True)


class _PullDisplay:
    """A rich progress bar (bytes, speed, ETA) when stderr is a terminal; silent otherwise (logs, scripts)."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        console = Console(stderr=True)
        columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn())
        self.progress = Progress(*columns, console=console) if console.is_terminal else None
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> _PullDisplay:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def __call__(self, event: PullProgress) -> None:
        if self.progress is None:
            return
        if event.phase not in self.tasks:
            label = self.spec if event.phase == "download" else "verifying sha256"
            self.tasks[event.phase] = self.progress.add_task(label, total=event.total, completed=event.done)
        else:
            self.progress.update(self.tasks[event.phase], completed=event.done, total=event.total)


def _quiet_hub_logs() -> None:
    """huggingface_hub logs multi-line warnings while it retries; our progress and errors say enough."""
    from huggingface_hub.utils import logging as hub_logging

    hub_logging.set_verbosity_error()


@models_app.command("pull")
def pull_model(spec: str = typer.Argument(..., help=SPEC_HELP, metavar="NAME[:QUANT]")) -> None:
    """Download a model into the Hugging Face cache, verified by size and sha256; resumes an interrupted pull.

    Honours HF_ENDPOINT, HF_HUB_CACHE, HF_HUB_OFFLINE and your hub token (HF_TOKEN or `hf auth login`).
    Example: `awl models pull qwen-agentworld-35b-a3b` (the default 4-bit file, 22.1 GB).
    """
    from agentworld_local.models.hub import DownloadInterrupted, pull

    choice = load_registry().find(spec)
    _quiet_hub_logs()
    try:
        with _PullDisplay(choice.spec) as display:
            result = pull(choice, on_progress=display)
    except DownloadInterrupted as stopped:
        typer.echo(f"awl: {stopped.one_line()}", err=True)
        raise typer.Exit(stopped.exit_code) from None
    if result.already_present:
        typer.echo(f"`{choice.spec}` is already downloaded: {result.path}")
    else:
        checked = "sha256 verified" if result.sha256 else "size verified"
        resumed = f", resumed after {format_size(result.resumed_from)}" if result.resumed_from else ""
        typer.echo(f"Downloaded `{choice.spec}` to {result.path} ({format_size(result.size)}, {checked}{resumed}).")
    typer.echo(f"Use it: awl run --model {choice.spec}")


@models_app.command("rm")
def remove_model(
    spec: str = typer.Argument(..., help="NAME (every quantization) or NAME:QUANT (one file).", metavar="NAME[:QUANT]"),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Delete a model's downloaded files from the Hugging Face cache and forget what `awl models add` registered.

    A file you registered with `awl models add` is never deleted, only forgotten. Files another
    cached revision still uses are kept. Example: `awl models rm qwen-agentworld-35b-a3b:Q8_0 --yes`.
    """
    from agentworld_local.models.removal import plan_removal

    registry = load_registry()
    name, _, quant = spec.partition(":")
    whole_model = not quant.strip()
    choices = list(registry.entry(name).choices) if whole_model else [registry.find(spec)]
    removal = plan_removal(choices, include_partials=whole_model)
    # What the user file says: the whole user entry (NAME), or one registered local copy (NAME:QUANT).
    user_entry = any(c.source != "packaged" for c in choices) if whole_model else (
        choices[0].source != "packaged" and choices[0].local_file is not None
    )
    if not removal.files and not removal.partials and not user_entry:
        raise InputError(
            f"Nothing to remove for `{spec}`: it is not downloaded and your models.toml has no entry for it.",
            "See `awl models list`.",
        )
    for path in removal.files:
        typer.echo(f"delete {path}")
    for path in removal.partials:
        typer.echo(f"delete partial download {path}")
    if user_entry:
        own = [str(c.local_file) for c in choices if c.local_file]
        stays = f" (your file{'s' if len(own) > 1 else ''} {', '.join(own)} stay{'' if len(own) > 1 else 's'})" if own else ""
        typer.echo(f"forget `{spec}` in {registry.user_file}{stays}")
    if not yes and not typer.confirm(f"Remove `{spec}` and free {format_size(removal.freed)}?", default=False):
        typer.echo("Nothing removed.")
        raise typer.Exit(1)
    removal.execute()
    if user_entry:
        remove_user_entry(choices[0], whole_model=whole_model, user_file=registry.user_file)
    note = f"; updated {registry.user_file}" if user_entry else ""
    typer.echo(f"Removed `{spec}`: freed {format_size(removal.freed)}{note}.")


@models_app.command("add")
def add_model(
    spec: str = typer.Argument(..., help="A new name, or a registry name (NAME or NAME:QUANT) this file is a copy of.", metavar="NAME[:QUANT]"),
    path: str = typer.Argument(..., help="The .gguf file you already have (it is not copied or moved).", metavar="PATH"),
    force: bool = typer.Option(False, "--force", help="Point a name that already has a file to this one instead."),
) -> None:
    """Register a GGUF you already have, so `--model NAME` finds it.

    A name that already points to another file is refused unless you add `--force`.
    Examples: `awl models add my-world ~/models/world.gguf`, or, for a copy of a registry file,
    `awl models add qwen-agentworld-35b-a3b ~/Downloads/Qwen-AgentWorld-35B-A3B-UD-Q4_K_M.gguf`.
    """
    registry = load_registry()
    choice = add_local_file(spec, path, registry, force=force)
    before = _existing_local_file(registry, choice.spec)  # `registry` still holds the entries as they were
    size = _file_size(choice.local_file)
    if choice.size is not None and size is not None and size != choice.size:
        typer.echo(f"note: {choice.local_file} has {size:,} bytes, the registry's `{choice.spec}` has {choice.size:,}; "
                   "awl will use your file.", err=True)
    if before is not None and before != choice.local_file:
        typer.echo(f"`{choice.spec}` pointed to {before}; now:")
    else:
        typer.echo(f"Registered `{choice.spec}` in {registry.user_file}:")
    typer.echo(f"  file         {choice.local_file}")
    typer.echo(f"  size         {_size_text(choice, size)}" + (f" ({size:,} bytes)" if size is not None else ""))
    said = {True: "yes", False: "no (a general model: its observations are guesses)"}
    typer.echo(f"  world model  {said.get(choice.world_model, 'not said (`world_model = true` in its entry says it is one)')}")
    typer.echo(f"Use it: awl run --model {choice.spec}")


def _existing_local_file(registry: Any, spec: str) -> Path | None:
    """The file `spec` points to now, if the registry already knows it (for the before/after line)."""
    try:
        return registry.find(spec).local_file
    except AwlError:  # a new name, or a quant the registry does not list yet
        return None
