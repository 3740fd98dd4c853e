"""Turn checkpoints: the recurrent state at a turn boundary, copied out and set back.

Recurrent layers cannot drop tokens from the middle, so a checkpoint holds that state alone
(partial sequence state) plus the token count; the attention cache is trimmed to match on
restore (the backend does that). Attention-only models need no state: a trim is enough.
A sequence's whole state (KV cache too) goes to a file for the system-prompt cache (state_cache.py).
"""

from __future__ import annotations

import ctypes
import mmap
import os
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


def copy_state(ctx: Any, seq: int = SEQ) -> bytes:
    size = llama_cpp.llama_state_seq_get_size_ext(ctx, seq, _PARTIAL)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data_ext(ctx, buffer, size, seq, _PARTIAL)
    # One C-level copy: slicing the ctypes array first builds a Python list of ints
    # (for the real model's ~60 MB state, about a second and half a GB a turn).
    return ctypes.string_at(buffer, written)


def set_state(ctx: Any, state: bytes, seq: int = SEQ) -> bool:
    """Put a copied state back; False when llama.cpp refused it."""
    buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
    return llama_cpp.llama_state_seq_set_data_ext(ctx, buffer, len(state), seq, _PARTIAL) != 0


def save_sequence(ctx: Any, path: Path, seq: int = SEQ) -> bool:
    """Write a sequence's whole state (attention KV cache and recurrent state) to a new file
    at `path`; False when llama.cpp could not. llama.cpp copies it into the file's memory map,
    so a real model's hundreds of MB never become Python bytes (the kernel writes them out)."""
    size = llama_cpp.llama_state_seq_get_size_ext(ctx, seq, _WHOLE)
    if not size:
        return False  # nothing to save (and mmap refuses 0 bytes)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.ftruncate(descriptor, size)
        with mmap.mmap(descriptor, size) as mapped:
            buffer = (ctypes.c_uint8 * size).from_buffer(mapped)
            written = llama_cpp.llama_state_seq_get_data_ext(ctx, buffer, size, seq, _WHOLE)
            del buffer  # the map cannot close while a ctypes view of it lives
        os.ftruncate(descriptor, written)
    finally:
        os.close(descriptor)
    return written > 0


def load_sequence(ctx: Any, path: Path, seq: int = SEQ) -> bool:
    """Set a sequence's whole state from a file save_sequence wrote; False when llama.cpp
    refused it (truncated, another model's), leaving the sequence empty.

    Read through set_data, whose reads are bounded by the buffer: llama.cpp's own
    llama_state_seq_load_file aborts the process on a truncated file (GGML_ASSERT)."""
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY) as mapped:
            buffer = (ctypes.c_uint8 * len(mapped)).from_buffer(mapped)
            loaded = llama_cpp.llama_state_seq_set_data_ext(ctx, buffer, len(mapped), seq, _WHOLE)
            del buffer
    except (OSError, ValueError):  # gone meanwhile, or empty (mmap refuses 0 bytes)
        loaded = 0
    if not loaded:
        llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(ctx), seq, -1, -1)
    return bool(loaded)


def total_bytes(checkpoints: list[Checkpoint]) -> int:
    return sum(len(c.state or b"") for c in checkpoints)


def thin(checkpoints: list[Checkpoint], budget: int, *, keep_recent: int = 4, pinned: Collection[int] = ()) -> None:
    """Drop checkpoints (in place) until they fit the memory budget (a real model's state is tens of MB).

    Kept by position, never by place in the list (after a resume the second checkpoint is not
    "after turn 1"): the empty context, the `pinned` positions (the backend pins the end of
    turn 1's prompt, which a context cut restores: engine/context_window.py) and the recent
    turns stay. Older ones are dropped where their neighbours are closest, so undo to any turn
    stays cheap-ish (re-evaluates at most one widened gap).
    """
    total = total_bytes(checkpoints)
    while total > budget:
        candidates = [i for i in range(1, len(checkpoints) - keep_recent) if checkpoints[i].n_tokens not in pinned]
        if not candidates:
            return
        gap = lambda i: checkpoints[i + 1].n_tokens - checkpoints[i - 1].n_tokens  # noqa: E731
        total -= len(checkpoints.pop(min(candidates, key=gap)).state or b"")
