"""Turn checkpoints: the recurrent state at a turn boundary, copied out and set back.

Recurrent layers cannot drop tokens from the middle, so a checkpoint holds that state alone
(partial sequence state) plus the token count; the attention cache is trimmed to match on
restore (the backend does that). Attention-only models need no state: a trim is enough.
A sequence's whole state (KV cache too) goes to a file for the system-prompt cache (state_cache.py).
"""

from __future__ import annotations

import ctypes
import os
import stat
import zlib
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp

_PARTIAL = llama_cpp.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY
_WHOLE = llama_cpp.LLAMA_STATE_SEQ_FLAGS_NONE  # the attention KV cache too
SEQ = 0  # the sequence of a backend with one slot (the CLI, the TUI); a server has more


@dataclass
class Checkpoint:
    n_tokens: int
    state: bytes | None  # recurrent state for hybrid models; None for attention-only ones
    #: Made at a turn's known start (the prefetch before its action): only an undo of that turn
    #: followed by another action restores it (the next turn and a regenerate restore where the
    #: answer starts, or the boundary), so it is dropped once a later one is made.
    known: bool = False


def copy_state(ctx: Any, seq: int = SEQ) -> bytes:
    size = llama_cpp.llama_state_seq_get_size_ext(ctx, seq, _PARTIAL)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data_ext(ctx, buffer, size, seq, _PARTIAL)
    # One C-level copy: slicing the ctypes array first builds a Python list of ints
    # (for the real model's ~60 MB state, about a second and half a GB a turn).
    return ctypes.string_at(buffer, written)


def set_state(ctx: Any, state: bytes, seq: int = SEQ) -> bool:
    """Put a copied state back; False when llama.cpp refused it."""
    # Read where it lies: llama.cpp only reads it (const), and a copy of tens of MB costs ms.
    buffer = ctypes.cast(ctypes.c_char_p(state), ctypes.POINTER(ctypes.c_uint8))
    return llama_cpp.llama_state_seq_set_data_ext(ctx, buffer, len(state), seq, _PARTIAL) != 0


#: Bytes a state file is written and read in at a time.
_IO_CHUNK = 16 * 1024 * 1024


def copy_sequence(ctx: Any, seq: int = SEQ) -> Any | None:
    """A sequence's whole state (attention KV cache and recurrent state) in a new ctypes
    buffer, never Python bytes; None when there is nothing to copy."""
    size = llama_cpp.llama_state_seq_get_size_ext(ctx, seq, _WHOLE)
    if not size:
        return None
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data_ext(ctx, buffer, size, seq, _WHOLE)
    if not written:
        return None
    return buffer if written == size else (ctypes.c_uint8 * written).from_buffer_copy(buffer, 0)


def write_state(path: Path, buffer: Any) -> bool:
    """Write a copied whole state (copy_sequence) to a new file at `path`. OSError when the
    file cannot be written (a full or read-only disk: the caller's miss, never a crash).

    Ordinary writes, from a view: a write through a memory map of a file on a full disk is a
    SIGBUS that kills the process, a write() is an ENOSPC."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(buffer).cast("B")
        offset = 0
        while offset < len(view):
            offset += os.write(descriptor, view[offset : offset + _IO_CHUNK])
    finally:
        os.close(descriptor)
    return True


def read_state_file(path: Path, *, crc32: int | None = None) -> Any | None:
    """A state file's bytes in a ctypes buffer, read with ordinary reads (a memory map of a
    file cut short while in use is a SIGBUS); None when it is not a regular file, is empty,
    changed size while it was read, or (with `crc32`) is not those bytes (damaged since its
    header was written: llama.cpp would load damaged bytes without a word). Opened without
    blocking: a FIFO never hangs here."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
            return None
        size = info.st_size
        buffer = (ctypes.c_uint8 * size)()
        view = memoryview(buffer).cast("B")
        with open(descriptor, "rb", buffering=0, closefd=False) as handle:
            offset = 0
            while offset < size:
                got = handle.readinto(view[offset : offset + _IO_CHUNK])
                if not got:
                    return None  # cut short meanwhile
                offset += got
            if handle.read(1):
                return None  # grew meanwhile: not the file that was checked
        if crc32 is not None and zlib.crc32(view) != crc32:
            return None
        return buffer
    except OSError:
        return None
    finally:
        os.close(descriptor)


def set_sequence(ctx: Any, buffer: Any, seq: int = SEQ) -> bool:
    """Set a sequence's whole state from a copy (copy_sequence, read_state_file); False when
    llama.cpp refused it (truncated, another model's), leaving the sequence empty.

    Through set_data, whose reads are bounded by the buffer: llama.cpp's own
    llama_state_seq_load_file aborts the process on a truncated file (GGML_ASSERT)."""
    memory = llama_cpp.llama_get_memory(ctx)
    llama_cpp.llama_memory_seq_rm(memory, seq, -1, -1)  # llama.cpp does too; said here, not assumed
    loaded = llama_cpp.llama_state_seq_set_data_ext(ctx, buffer, len(buffer), seq, _WHOLE)
    if not loaded:
        llama_cpp.llama_memory_seq_rm(memory, seq, -1, -1)
    return bool(loaded)


def total_bytes(checkpoints: list[Checkpoint]) -> int:
    return sum(len(c.state or b"") for c in checkpoints)


def drop_superseded(checkpoints: list[Checkpoint], pinned: Collection[int] = ()) -> None:
    """Keep one checkpoint per turn in steady state: of the known-start checkpoints, only the
    newest stays (undo of the last turn, then another action, restores it); `pinned` ones stay."""
    known = [i for i, c in enumerate(checkpoints) if c.known and c.n_tokens not in pinned]
    for i in reversed(known[:-1]):
        del checkpoints[i]


def thin(checkpoints: list[Checkpoint], budget: int, *, keep_recent: int = 4, pinned: Collection[int] = ()) -> None:
    """Drop checkpoints (in place) until they fit the memory budget (a real model's state is tens of MB).

    Kept by position, never by place in the list (after a resume the second checkpoint is not
    "after turn 1"): the empty context, the `pinned` positions (the backend pins where the
    message after turn 1's answer starts its text, which a context cut restores:
    engine/context_window.py) and the recent turns stay. Older ones are dropped where their
    neighbours are closest, so undo to any turn stays cheap-ish (re-evaluates at most one
    widened gap).
    """
    total = total_bytes(checkpoints)
    while total > budget:
        candidates = [i for i in range(1, len(checkpoints) - keep_recent) if checkpoints[i].n_tokens not in pinned]
        if not candidates:
            return
        gap = lambda i: checkpoints[i + 1].n_tokens - checkpoints[i - 1].n_tokens  # noqa: E731
        total -= len(checkpoints.pop(min(candidates, key=gap)).state or b"")
