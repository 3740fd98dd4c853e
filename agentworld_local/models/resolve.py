"""Turn a `--model` argument into a file: a path today; registry names join here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentworld_local.models.gguf_file import check_gguf_path


@dataclass(frozen=True)
class ResolvedModel:
    path: Path
    name: str  # what trajectories record: the registry name, or the file name


def resolve_model(spec: str) -> ResolvedModel:
    """Resolve `spec` (a path to a GGUF) or raise a ModelError that names the next step."""
    path = check_gguf_path(spec)
    return ResolvedModel(path=path, name=path.name)
