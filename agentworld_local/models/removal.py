"""Deleting downloaded models from the Hugging Face cache (`awl models rm`).

huggingface_hub finds the files (`scan_cache_dir`) and deletes them (`delete_files`: a blob
another cached file still uses is kept), so awl never removes what another tool relies on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from huggingface_hub import scan_cache_dir
from huggingface_hub.file_download import repo_folder_name

from agentworld_local.models.hub import hub_cache_dir
from agentworld_local.models.registry import ModelChoice


@dataclass
class Removal:
    """What deleting some models from the hub cache will remove, and free."""

    files: list[Path] = field(default_factory=list)  # snapshot entries
    partials: list[Path] = field(default_factory=list)  # interrupted downloads
    freed: int = 0
    _strategy: object | None = None

    def execute(self) -> None:
        if self._strategy is not None:
            self._strategy.execute()
        for partial in self.partials:
            partial.unlink(missing_ok=True)


def plan_removal(choices: Iterable[ModelChoice], *, include_partials: bool, cache_dir: Path | None = None) -> Removal:
    """The cached files of `choices` (in any revision), found with `scan_cache_dir`.

    A blob another cached file still uses is kept (huggingface_hub's `delete_files` rule).
    """
    cache = Path(cache_dir) if cache_dir else hub_cache_dir()
    if not cache.is_dir():
        return Removal()
    wanted = {(c.repo, c.filename) for c in choices if c.repo}
    info = scan_cache_dir(cache)
    selected = [
        cached
        for repo in info.repos
        if repo.repo_type == "model"
        for revision in repo.revisions
        for cached in revision.files
        if (repo.repo_id, cached.file_path.relative_to(revision.snapshot_path).as_posix()) in wanted
    ]
    partials: list[Path] = []
    if include_partials:
        storages = {cache / repo_folder_name(repo_id=repo, repo_type="model") for repo, _ in wanted}
        partials = sorted(p.file_path for p in info.incomplete_files if p.file_path.parent.parent in storages)
    strategy = info.delete_files(*selected) if selected else None
    freed = (strategy.expected_freed_size if strategy else 0) + sum(p.stat().st_size for p in partials)
    return Removal(files=sorted(c.file_path for c in selected), partials=partials, freed=freed, _strategy=strategy)
