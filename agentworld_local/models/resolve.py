"""Turn a `--model` argument into a file: a path, or a registry name (`name` or `name:QUANT`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agentworld_local.errors import ModelError
from agentworld_local.models.gguf_file import check_gguf_path
from agentworld_local.models.registry import ModelChoice, load_registry
from agentworld_local.models.units import format_size


@dataclass(frozen=True)
class ResolvedModel:
    path: Path
    name: str  # what trajectories record: the registry spec (`name:QUANT`), or the file name
    choice: ModelChoice | None = None  # the registry entry, when `--model` named one


def looks_like_path(spec: str) -> bool:
    """Registry names never contain a path separator or end in .gguf; paths usually do."""
    if not spec.strip():
        return False  # blank: the registry says so in words (Path("") would be the current directory)
    return (
        spec.lower().endswith(".gguf")
        or any(sep in spec for sep in ("/", "\\"))
        or spec.startswith(("~", "."))
        or os.path.exists(os.path.expanduser(spec))  # False, not ENAMETOOLONG, for a name too long
    )


def resolve_model(spec: str) -> ResolvedModel:
    """Resolve `spec` to a GGUF on disk or raise an AwlError that names the next step."""
    if looks_like_path(spec):
        path = check_gguf_path(spec)
        # Absolute: the header records it, and a resume finds it from any directory.
        return ResolvedModel(path=path.absolute(), name=path.name)
    from agentworld_local.models.hub import cached_path  # huggingface_hub only when needed

    choice = load_registry().find(spec)  # unknown names and quants: InputError with suggestions
    path = cached_path(choice)
    if path is None:
        if choice.local_file is not None and not choice.repo:
            raise ModelError(
                f"`{choice.spec}` was added from {choice.local_file}, which no longer exists.",
                f"Run `awl models add {choice.spec} NEW_PATH`, or `awl models rm {choice.name}`.",
            )
        size = format_size(choice.expected_size)
        approx = "" if choice.size is not None or choice.approx_size is None else "about "
        raise ModelError(
            f"`{choice.spec}` is not downloaded yet.",
            f"Run `awl models pull {choice.spec}` ({approx}{size}), or `awl models add {choice.spec} PATH` for a copy you have.",
        )
    return ResolvedModel(path=check_gguf_path(path), name=choice.spec, choice=choice)
