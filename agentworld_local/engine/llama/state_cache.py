"""System-prompt states cached on disk: a new session does not evaluate a prompt this model evaluated before.

An entry is two files named by what its state depends on: `NAME-CRC.seqstate`, a
sequence's whole state as llama.cpp serialises it (attention KV cache and recurrent
state), and `NAME.json`, a small versioned header that commits the entry and names its
state file (written last, so a state file no header names is a write in progress or a
leftover, removed once stale). The header names the model
identity, the llama.cpp build, the load options that change a state's layout and the
digest of the tokens the state holds and the state's CRC-32; a file awl cannot read, one
that is not the size or checksum its header says (truncated, damaged: llama.cpp would load
damaged bytes without a word), or one llama.cpp refuses, is a miss that is removed, never
an error. The folder keeps within a byte budget, every file in it counted, whichever
process wrote it: strays go first, then the least recently used entries (a hit touches its
header); a file another process removes meanwhile is simply gone. The context size is not part of the key: a state
loads into any context with room for its tokens.

llama.cpp itself is called by the backend (checkpoints.save_sequence / load_sequence);
this module only names, lists, publishes and evicts files, so `awl cache` and `awl doctor`
use it without loading a model.
"""

from __future__ import annotations

import array
import glob
import hashlib
import json
import os
import secrets
import shutil
import stat
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentworld_local import paths
from agentworld_local.config import load_config
from agentworld_local.files import writing_whole

SCHEMA = "agentworld-local/state-cache"
VERSION = 1
STATE_SUFFIX = ".seqstate"
HEADER_SUFFIX = ".json"
TEMPORARY_PREFIX = ".part-"
PART_SUFFIX = ".part"  # files.writing_whole's temporary header
#: Default budget: a real model's system-prompt state is a few hundred MB (KV cache of
#: 3,000 to 9,500 tokens plus the recurrent state), so this keeps about a dozen prompts.
DEFAULT_BUDGET = 4 * 1024**3
#: A temporary or headerless file older than this is a write that died: removed on eviction.
STALE_S = 600.0


@dataclass(frozen=True)
class StateKey:
    """What a state's bytes depend on, besides its tokens."""

    model_sha256: str
    model_size: int
    llama_cpp: str  # llama-cpp-python's version: the build that wrote the state
    kv_type: str
    flash_attention: str  # as llama.cpp ran it (on/off), or the mode asked when it did not say
    architecture: str | None = None
    n_seq: int = 1  # the context's sequences: llama.cpp refuses a state with another stream count

    def fingerprint(self) -> str:
        text = json.dumps({"version": VERSION, **asdict(self)}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


def tokens_digest(tokens: Sequence[int]) -> str:
    return hashlib.sha256(array.array("i", tokens).tobytes()).hexdigest()


@dataclass(frozen=True)
class Entry:
    """One cached state: its file, how many tokens it holds, its size on disk."""

    state: Path
    header: Path
    n_tokens: int
    size: int
    used: float  # when it was last written or hit (the header's mtime)
    crc32: int | None = None  # the state's CRC-32 as its header says (load_sequence checks the bytes it reads)


@dataclass(frozen=True)
class CacheInfo:
    directory: Path
    entries: int
    files: int
    bytes: int


class StateCache:
    """Cached sequence states in `directory`, kept within `budget` bytes."""

    def __init__(self, directory: Path, budget: int = DEFAULT_BUDGET) -> None:
        self.directory = Path(directory)
        self.budget = budget

    # -- lookup ---------------------------------------------------------------------

    def lookup(self, key: StateKey, tokens: Sequence[int], *, limit: int | None = None,
               verify: bool = True) -> Entry | None:
        """The entry holding the longest prefix of `tokens` (at most `limit` of them) for this
        key, or None. Entries whose files do not agree with their header are removed. Only the
        entry returned has its state's checksum read (`verify`; a caller that reads the state
        with its CRC-32, as checkpoints.read_state_file does, passes False and discards the
        entry when that read fails): a new session's start costs one read of one file, not one
        per cached prefix of its prompt."""
        fingerprint = key.fingerprint()
        limit = len(tokens) if limit is None else min(limit, len(tokens))
        candidates = sorted(((entry, header) for entry, header in self._entries()
                             if header.get("key") == fingerprint and 0 < entry.n_tokens <= limit),
                            key=lambda pair: -pair[0].n_tokens)
        digests: dict[int, str] = {}
        best: Entry | None = None
        for entry, header in candidates:
            if entry.n_tokens not in digests:
                digests[entry.n_tokens] = tokens_digest(tokens[: entry.n_tokens])
            if header.get("tokens_sha256") != digests[entry.n_tokens]:
                continue
            if verify and _crc32(entry.state) != header["state_crc32"]:  # damaged on disk: llama.cpp would load it
                self.discard(entry)
                continue
            best = entry
            break
        if best is not None:
            with suppress(OSError):
                os.utime(best.header)  # most recently used
        return best

    def discard(self, entry: Entry) -> None:
        """Remove an entry llama.cpp could not load (damaged, or written by another build);
        a directory or a FIFO standing under one of its names goes too."""
        for path in (entry.header, entry.state):
            _remove(path)

    # -- store ----------------------------------------------------------------------

    def store(self, key: StateKey, tokens: Sequence[int], write: Callable[[Path], bool]) -> Entry | None:
        """Cache the state of `tokens`: `write(path)` writes llama.cpp's state file there (True
        when it did). Published whole under its final name by a rename, so processes writing
        the same entry at once leave one valid file. None when it could not be written (a
        full disk, a read-only cache): the session goes on without it."""
        fingerprint = key.fingerprint()
        digest = tokens_digest(tokens)
        name = f"{fingerprint[:16]}-{digest[:32]}"
        header = self.directory / (name + HEADER_SUFFIX)
        temporary = self.directory / f"{TEMPORARY_PREFIX}{name}-{secrets.token_hex(4)}{STATE_SUFFIX}"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if not write(temporary):
                raise OSError("llama.cpp did not write the state")
            size, crc = temporary.stat().st_size, _crc32(temporary)
            # Named by its content: writers of one entry at once each publish a whole file, and
            # the header written last names its own (the other is a stray, removed once stale).
            state = self.directory / f"{name}-{crc:08x}{STATE_SUFFIX}"
            for path in (state, header):  # a directory there would fail every store, forever
                if path.is_dir():
                    _remove(path)
            os.replace(temporary, state)  # written whole under a temporary name
            record = {"schema": SCHEMA, "version": VERSION, "key": fingerprint, "model": asdict(key),
                      "n_tokens": len(tokens), "tokens_sha256": digest, "state_bytes": size,
                      "state_file": state.name, "state_crc32": crc, "created": time.time()}
            with writing_whole(header, overwrite=True) as handle:
                handle.write(json.dumps(record, indent=1).encode())
        except OSError:
            with suppress(OSError):
                temporary.unlink()
            return None
        self.evict()
        return Entry(state, header, len(tokens), size, time.time(), crc) if header.exists() else None

    # -- housekeeping ---------------------------------------------------------------

    def evict(self, budget: int | None = None) -> None:
        """Keep the folder within `budget` bytes (the cache's own by default), counting every
        file in it, whichever process wrote it. Stale strays go first whatever the budget;
        then, while over it: states no header names (a lost race between writers), the least
        recently used entries, and last the temporary files of writes still under way."""
        budget = self.budget if budget is None else budget
        # Files first, then entries: a header published in between is not taken for a stray.
        sizes = {path: size for path in self._files() if (size := _size(path, -1)) >= 0}  # vanished: not counted
        total = sum(sizes.values())
        entries = sorted((entry for entry, _ in self._entries()), key=lambda entry: entry.used)
        named = {path for entry in entries for path in (entry.state, entry.header)}
        now = time.time()
        strays = sorted((path for path in sizes if path not in named), key=lambda path: (_in_progress(path), _mtime(path)))
        for path in strays:
            if now - _mtime(path) > STALE_S or (total > budget and not _in_progress(path)):
                total -= sizes[path] if _unlink(path) else 0
        while entries and total > budget:
            oldest = entries.pop(0)
            self.discard(oldest)
            total -= sizes.get(oldest.state, 0) + sizes.get(oldest.header, 0)
        for path in strays:
            if total > budget and _in_progress(path):
                total -= sizes[path] if _unlink(path) else 0
        self._remove_misnamed()

    def info(self) -> CacheInfo:
        files = self._files()
        entries = sum(1 for path in files if path.suffix == HEADER_SUFFIX)
        return CacheInfo(self.directory, entries, len(files), sum(_size(path) for path in files))

    def clear(self) -> CacheInfo:
        """Remove every file of the cache; what was removed."""
        removed = self.info()
        for path in self._files():
            with suppress(OSError):
                path.unlink()
        return removed

    def _files(self) -> list[Path]:
        try:
            return [path for path in self.directory.iterdir()
                    if path.suffix in (STATE_SUFFIX, HEADER_SUFFIX, PART_SUFFIX) and path.is_file()]
        except OSError:
            return []

    def _entries(self) -> list[tuple[Entry, dict[str, Any]]]:
        """Every committed entry with its header; an entry that cannot be read, or whose
        state file is missing or not the size its header says (truncated), is removed."""
        found = []
        for header in self._files():
            if header.suffix != HEADER_SUFFIX:
                continue
            record = _read_header(header)
            if record is None and not os.path.lexists(header):
                continue  # another process removed the entry meanwhile: nothing of it is ours to judge
            state = header.with_name(record["state_file"]) if record else header.with_suffix(STATE_SUFFIX)
            try:
                info, state_info = header.stat(), state.stat()
                size = state_info.st_size if stat.S_ISREG(state_info.st_mode) else -1  # a directory, a FIFO
            except OSError:
                size, info = -1, None
            if record is None or info is None or size != record.get("state_bytes"):
                self.discard(Entry(state, header, 0, 0, 0.0))
                if record is None:  # which state file it named is unknown: its entry's go too
                    for path in header.parent.glob(f"{glob.escape(header.stem)}-*{STATE_SUFFIX}"):
                        with suppress(OSError):
                            path.unlink()
                continue
            found.append((Entry(state, header, record["n_tokens"], size, info.st_mtime, record["state_crc32"]), record))
        return found

    def _remove_misnamed(self) -> None:
        """A directory or a FIFO under a cache file's name would fail every store: removed."""
        with suppress(OSError):
            for path in self.directory.iterdir():
                if path.suffix in (STATE_SUFFIX, HEADER_SUFFIX) and not path.is_symlink() and not path.is_file():
                    _remove(path)


def user_state_cache() -> StateCache | None:
    """The cache new sessions use: in the user's cache dir, within the config's budget
    (`[cache] prompt_states`); None when the config turns it off."""
    budget = load_config().prompt_states
    if budget == 0:
        return None
    return StateCache(paths.state_cache_dir(), DEFAULT_BUDGET if budget is None else budget)


def _read_header(path: Path) -> dict[str, Any] | None:
    """The header's record, or None when it is not one this version wrote."""
    try:
        record = json.loads(b"".join(_chunks(path, limit=65536)))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("schema") != SCHEMA or record.get("version") != VERSION:
        return None
    if not all(isinstance(record.get(name), int) for name in ("n_tokens", "state_bytes", "state_crc32")):
        return None
    state_file = record.get("state_file")
    if not isinstance(state_file, str) or not state_file.startswith(path.stem + "-") or "/" in state_file \
            or "\\" in state_file or not state_file.endswith(STATE_SUFFIX):
        return None  # a header names only its own entry's file
    return record


def _crc32(path: Path) -> int:
    """The file's CRC-32, read with ordinary reads (a memory map of a file cut short while it
    is read is a SIGBUS); -1 when it cannot be read or is not a regular file."""
    crc = 0
    try:
        for chunk in _chunks(path):
            crc = zlib.crc32(chunk, crc)
    except OSError:
        return -1
    return crc


def _chunks(path: Path, limit: int | None = None, size: int = 1 << 20) -> Iterator[bytes]:
    """A regular file's bytes (at most `limit`); OSError for anything else. Opened without
    blocking, so a FIFO under a cache file's name never hangs the session."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with open(descriptor, "rb", buffering=0) as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(f"{path} is not a regular file")
        left = limit
        while left is None or left > 0:
            chunk = handle.read(size if left is None else min(size, left))
            if not chunk:
                return
            left = None if left is None else left - len(chunk)
            yield chunk


def _remove(path: Path) -> None:
    """Remove what stands under a cache file's name: a file, a link, a FIFO or a directory."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()
    except OSError:
        pass


def _size(path: Path, missing: int = 0) -> int:
    with suppress(OSError):
        return path.stat().st_size
    return missing


def _in_progress(path: Path) -> bool:
    """A temporary file: a write under way (or one that died, removed once stale)."""
    return path.name.startswith(TEMPORARY_PREFIX) or path.suffix == PART_SUFFIX


def _unlink(path: Path) -> bool:
    """Remove a file; True when it is gone (another process may have removed it first)."""
    try:
        path.unlink()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _mtime(path: Path) -> float:
    with suppress(OSError):
        return path.stat().st_mtime
    return 0.0
