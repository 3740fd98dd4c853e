"""Model downloads from the Hugging Face hub, into its cache, resumable across runs.

huggingface_hub does the hub work: metadata (HEAD with redirects, the usual token,
`HF_ENDPOINT`, error types), the transfer (`http_get`: Range resume and retries when the
connection drops) and the cache layout (`try_to_load_from_cache`, `scan_cache_dir`). So
files other tools downloaded are reused, and ours are theirs.

We do not call `hf_hub_download` because huggingface_hub 2.4 writes each download to a
per-process temporary file and deletes it on any failure (`_download_to_tmp_and_move`), so
a 22 GB download stopped at 90% would start over. We keep the partial file as
`blobs/<sha256>.incomplete` (the name the library used to resume, which `scan_cache_dir`
still reports) and resume it with a Range request on the next `awl models pull`.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal
from urllib.parse import urlparse

import httpx2
from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url, try_to_load_from_cache
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.file_download import http_get, repo_folder_name
from huggingface_hub.utils import WeakFileLock, build_hf_headers

from agentworld_local.errors import AwlError, ModelError
from agentworld_local.files import writing_whole
from agentworld_local.models.registry import ModelChoice
from agentworld_local.models.units import format_size

#: Keep this share of a download free on top of it (a full disk breaks everything else)...
DISK_MARGIN_FRACTION = 0.05
#: ...but never ask for more than this on top.
DISK_MARGIN_MAX = 1024**3
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_HASH_BLOCK = 8 * 1024 * 1024


@dataclass(frozen=True)
class PullProgress:
    phase: Literal["download", "verify"]
    done: int
    total: int | None


ProgressCallback = Callable[[PullProgress], None]


@dataclass(frozen=True)
class PullResult:
    path: Path
    size: int
    sha256: str | None  # the checksum the file was verified against (None: the hub gave none)
    already_present: bool
    resumed_from: int = 0  # bytes kept from an earlier, interrupted download


class DownloadInterrupted(ModelError):
    """Ctrl+C during a download: the partial file stays for the next pull."""

    exit_code = 130


def hub_cache_dir() -> Path:
    """huggingface_hub's cache (`HF_HUB_CACHE`, or `HF_HOME/hub`, by default ~/.cache/huggingface/hub)."""
    return Path(constants.HF_HUB_CACHE)




def cached_path(choice: ModelChoice, *, cache_dir: Path | None = None) -> Path | None:
    """The file for `choice` if it is on disk: the user's own copy, else the hub cache's."""
    if choice.local_file is not None and choice.local_file.is_file():
        return choice.local_file
    if not choice.repo:
        return None
    cache = Path(cache_dir) if cache_dir else hub_cache_dir()
    found = try_to_load_from_cache(choice.repo, choice.filename, cache_dir=str(cache), revision=choice.revision)
    if isinstance(found, str):
        return Path(found)
    # The branch may have moved on since this file was downloaded: a copy in an older snapshot
    # is still the file the user has (and `awl models pull` would only re-link it).
    if _COMMIT.match(choice.revision):
        return None  # pinned to a commit: only that snapshot will do
    storage = cache / repo_folder_name(repo_id=choice.repo, repo_type="model")
    older = [p for p in storage.glob(f"snapshots/*/{choice.filename}") if p.is_file()]
    return max(older, key=lambda p: p.stat().st_mtime) if older else None


# ---------------------------------------------------------------------------- pull


@dataclass(frozen=True)
class _RemoteFile:
    url: str  # the hub's /resolve URL
    location: str  # where the bytes are (a CDN, after the hub's redirect)
    etag: str
    commit: str
    size: int | None
    sha256: str | None


def pull(choice: ModelChoice, *, on_progress: ProgressCallback | None = None, cache_dir: Path | None = None) -> PullResult:
    """Download `choice` into the hub cache (or find it there), verified by size and sha256."""
    if choice.local_file is not None and choice.local_file.is_file():
        return PullResult(choice.local_file, choice.local_file.stat().st_size, None, already_present=True)
    if not choice.repo:
        raise ModelError(
            f"`{choice.spec}` was added from {choice.local_file}, which no longer exists, and has no hub repo.",
            f"Run `awl models add {choice.spec} PATH` with its new location, or `awl models rm {choice.name}`.",
        )
    cache = Path(cache_dir) if cache_dir else hub_cache_dir()
    present = cached_path(replace(choice, local_file=None), cache_dir=cache)
    if present is not None:
        return PullResult(present, present.stat().st_size, None, already_present=True)
    if constants.is_offline_mode():
        raise ModelError(
            f"`{choice.spec}` is not in the Hugging Face cache ({cache}) and HF_HUB_OFFLINE is set, so nothing was downloaded.",
            f"Unset HF_HUB_OFFLINE to download it, or register a copy you have with `awl models add {choice.spec} PATH`.",
        )
    remote = _remote_file(choice)
    storage = cache / repo_folder_name(repo_id=choice.repo, repo_type="model")
    blob = storage / "blobs" / remote.etag
    resumed_from = 0
    lock = cache / ".locks" / storage.name / f"{remote.etag}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    # The same lock huggingface_hub takes, so `hf download` and `awl models pull` never write the same blob.
    with WeakFileLock(lock):
        if not blob.exists():
            resumed_from = _download(choice, remote, blob, on_progress)
        pointer = _link_into_snapshot(storage, blob, remote.commit, choice)
    return PullResult(pointer, pointer.stat().st_size, remote.sha256, already_present=False, resumed_from=resumed_from)


def _remote_file(choice: ModelChoice) -> _RemoteFile:
    url = hf_hub_url(choice.repo, choice.filename, revision=choice.revision)
    try:
        # token=None: huggingface_hub reads HF_TOKEN or the `hf auth login` token, as every hub tool does.
        meta = get_hf_file_metadata(url)
    except Exception as error:  # noqa: BLE001 - every failure becomes one line with a next step
        raise _hub_error(error, choice, stage="metadata") from None
    if meta.commit_hash is None or meta.etag is None:
        raise ModelError(
            f"The server at {constants.ENDPOINT} did not answer like a Hugging Face hub (no commit or ETag for {choice.filename}).",
            "Check HF_ENDPOINT and your proxy settings.",
        )
    sha256 = meta.etag if _SHA256.match(meta.etag) else choice.sha256  # an LFS file's ETag is its sha256
    return _RemoteFile(url, meta.location, meta.etag, meta.commit_hash, meta.size or choice.size, sha256)


def _download(choice: ModelChoice, remote: _RemoteFile, blob: Path, on_progress: ProgressCallback | None) -> int:
    """Fetch into `<blob>.incomplete` (resuming it), verify, then move it into place."""
    partial = blob.with_name(blob.name + ".incomplete")
    have = partial.stat().st_size if partial.exists() else 0
    if remote.size is not None and have > remote.size:
        partial.unlink()  # longer than the file: not a prefix of it
        have = 0
    if remote.size is not None:
        ensure_free_space(blob.parent, remote.size - have, what=f"`{choice.spec}` ({format_size(remote.size)})", spec=choice.spec)
    # Both folders, as huggingface_hub makes them: `scan_cache_dir` reads a repo without snapshots as corrupt.
    blob.parent.mkdir(parents=True, exist_ok=True)
    (blob.parent.parent / "snapshots" / remote.commit).mkdir(parents=True, exist_ok=True)
    headers = build_hf_headers()
    if _origin(remote.location) != _origin(remote.url):
        headers.pop("authorization", None)  # signed CDN URLs must not receive the hub token
    bar = functools.partial(_ProgressBridge, report=on_progress)
    try:
        with partial.open("ab") as sink:
            http_get(remote.location, sink, resume_size=have, headers=headers, expected_size=remote.size, tqdm_class=bar)
    except KeyboardInterrupt:
        kept = partial.stat().st_size if partial.exists() else 0
        raise DownloadInterrupted(
            f"Download of `{choice.spec}` interrupted: {format_size(kept)} of {format_size(remote.size)} kept in {partial}.",
            f"Run `awl models pull {choice.spec}` again to resume.",
        ) from None
    except Exception as error:  # noqa: BLE001
        raise _hub_error(error, choice, stage="download", partial=partial, total=remote.size) from None
    _verify(choice, remote, partial, on_progress)
    os.replace(partial, blob)  # same directory: atomic, so a blob is always complete
    return have


def _verify(choice: ModelChoice, remote: _RemoteFile, partial: Path, on_progress: ProgressCallback | None) -> None:
    size = partial.stat().st_size
    problem = None
    if remote.size is not None and size != remote.size:
        problem = f"it has {size} bytes, the hub says {remote.size}"
    elif remote.sha256:
        digest = file_sha256(partial, on_progress)
        if digest != remote.sha256:
            problem = f"its sha256 is {digest[:16]}..., the hub says {remote.sha256[:16]}..."
    if problem:
        partial.unlink(missing_ok=True)
        raise ModelError(
            f"The downloaded `{choice.spec}` is corrupt ({problem}); the bad file was deleted.",
            f"Run `awl models pull {choice.spec}` again; if it fails again, a proxy or a failing disk may be damaging data.",
        )


def file_sha256(path: Path, on_progress: ProgressCallback | None = None) -> str:
    total = path.stat().st_size
    digest = hashlib.sha256()
    done = 0
    with path.open("rb") as handle:
        while block := handle.read(_HASH_BLOCK):
            digest.update(block)
            done += len(block)
            if on_progress:
                on_progress(PullProgress("verify", done, total))
    return digest.hexdigest()


def _link_into_snapshot(storage: Path, blob: Path, commit: str, choice: ModelChoice) -> Path:
    """Lay the file out as huggingface_hub does: snapshots/<commit>/<file> -> ../../blobs/<etag>, refs/<rev>."""
    pointer = storage / "snapshots" / commit / choice.filename
    pointer.parent.mkdir(parents=True, exist_ok=True)
    if not pointer.exists():
        if pointer.is_symlink():
            pointer.unlink()  # a dangling link from a deleted blob
        try:
            os.symlink(os.path.relpath(blob, pointer.parent), pointer)
        except OSError:
            shutil.move(blob, pointer)  # no symlinks here (Windows without developer mode): keep one copy
    if choice.revision != commit:
        with writing_whole(storage / "refs" / choice.revision, overwrite=True) as handle:
            handle.write(commit.encode())
    return pointer


def ensure_free_space(directory: Path, needed: int, *, what: str, spec: str) -> None:
    """Refuse before downloading when `needed` bytes (plus a margin) do not fit."""
    probe = directory
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    margin = min(DISK_MARGIN_MAX, int(needed * DISK_MARGIN_FRACTION))
    if free < needed + margin:
        raise ModelError(
            f"Not enough disk space for {what}: it needs {format_size(needed + margin)} "
            f"({format_size(margin)} of it a safety margin) and {probe} has {format_size(free)} free.",
            f"Free up space, or point HF_HUB_CACHE at a bigger disk, then run `awl models pull {spec}` again.",
        )


class _ProgressBridge:
    """Stands in for tqdm inside huggingface_hub's `http_get`, reporting bytes to a callback."""

    def __init__(self, *, report: ProgressCallback | None, total: int | None = None, initial: int = 0, **_tqdm_kwargs):
        self.total, self.n, self._report = total, initial, report
        self._emit()

    def __enter__(self) -> _ProgressBridge:
        return self

    def __exit__(self, *exc_info) -> None:
        return None

    def update(self, n: int = 1) -> None:
        self.n += n
        self._emit()

    def _emit(self) -> None:
        if self._report:
            self._report(PullProgress("download", self.n, self.total))


def _origin(url: str) -> tuple[str, str, int | None]:
    parsed = urlparse(url)
    return parsed.scheme, (parsed.hostname or "").lower(), parsed.port


def _hub_error(error: Exception, choice: ModelChoice, *, stage: str, partial: Path | None = None, total: int | None = None) -> AwlError:
    """One line with a next step for whatever huggingface_hub or the network raised."""
    repo, spec, endpoint = choice.repo, choice.spec, constants.ENDPOINT
    page = f"{endpoint}/{repo}/tree/{choice.revision}"
    kept = ""
    if partial is not None and partial.exists() and partial.stat().st_size:
        kept = f" {format_size(partial.stat().st_size)} of {format_size(total)} are kept and the next pull resumes."
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return ModelError(
            f"The disk filled up while downloading `{spec}` ({partial.parent if partial else hub_cache_dir()}).{kept}",
            f"Free up space (or point HF_HUB_CACHE at a bigger disk), then run `awl models pull {spec}` again.",
        )
    if isinstance(error, OfflineModeIsEnabled):
        return ModelError(f"HF_HUB_OFFLINE is set, so `{spec}` was not downloaded.", "Unset HF_HUB_OFFLINE to download.")
    if isinstance(error, GatedRepoError):
        return ModelError(
            f"The hub repo `{repo}` is gated: its owner must grant you access.",
            f"Accept its terms at {endpoint}/{repo}, then log in with `hf auth login` (or set HF_TOKEN).",
        )
    if isinstance(error, RepositoryNotFoundError):
        return ModelError(
            f"The hub has no repo `{repo}` (or it is private).",
            "Check the registry entry (`awl models list --json`); for a private repo log in with `hf auth login` or set HF_TOKEN.",
        )
    if isinstance(error, RevisionNotFoundError):
        return ModelError(f"The hub repo `{repo}` has no revision `{choice.revision}`.", f"Check the `revision` of `{choice.name}` in your models.toml.")
    if isinstance(error, RemoteEntryNotFoundError):
        return ModelError(
            f"The hub repo `{repo}` has no file `{choice.filename}` (revision {choice.revision}).",
            f"The registry entry may be out of date: see {page}, fix your models.toml, or pick another quant from `awl models list`.",
        )
    if isinstance(error, HfHubHTTPError):
        status = error.response.status_code if error.response is not None else "?"
        return ModelError(
            f"The hub answered HTTP {status} for `{choice.filename}` in `{repo}`.{kept}",
            f"Try `awl models pull {spec}` again later; if it persists, check HF_ENDPOINT and your proxy settings.",
        )
    if isinstance(error, httpx2.HTTPError):  # connection refused, DNS, timeouts, a dropped connection
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        if stage == "metadata":
            return ModelError(
                f"Cannot reach the model hub at {endpoint} ({reason}); nothing was downloaded.",
                f"Check your network connection (and HF_ENDPOINT or proxy settings), then run `awl models pull {spec}` again.",
            )
        return ModelError(
            f"The connection to the hub broke while downloading `{spec}` ({reason}).{kept}",
            f"Check your network connection, then run `awl models pull {spec}` again.",
        )
    if isinstance(error, ValueError) and "too large" in str(error):
        return ModelError(
            f"`{spec}` is over 50 GB, which huggingface_hub only downloads through Xet.",
            f"Download it with `hf download {repo} {choice.filename}`, then register it with `awl models add {spec} PATH`.",
        )
    if isinstance(error, ValueError | httpx2.InvalidURL):  # a malformed repo id, file name or HF_ENDPOINT
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        return ModelError(
            f"Cannot download `{spec}` from {endpoint} ({reason}).",
            "Check the entry's `repo` and `file` in your models.toml, and HF_ENDPOINT if you set it.",
        )
    if isinstance(error, OSError):  # e.g. the size check at the end of http_get, or a permission problem
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        return ModelError(f"Downloading `{spec}` failed ({reason}).{kept}", f"Run `awl models pull {spec}` again.")
    raise error
