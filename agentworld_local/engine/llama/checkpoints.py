"""Turn checkpoints: the recurrent state at a turn boundary, copied out and set back.

Recurrent layers cannot drop tokens from the middle, so a checkpoint holds that state alone
(partial sequence state) plus the token count; the attention cache is trimmed to match on
restore (the backend does that). Attention-only models need no state: a trim is enough.
"""

from __future__ import annotations

import ctypes
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import llama_cpp

_PARTIAL = llama_cpp.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY
SEQ = 0  # the one sequence a session uses


@dataclass
class Checkpoint:
    n_tokens: int
    state: bytes | None  # recurrent state for hybrid models; None for attention-only ones


def copy_state(ctx: Any) -> bytes:
    size = llama_cpp.llama_state_seq_get_size_ext(ctx, SEQ, _PARTIAL)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data_ext(ctx, buffer, size, SEQ, _PARTIAL)
    # One C-level copy: slicing the ctypes array first builds a Python list of ints
    # (for the real model's ~60 MB state, about a second and half a GB a turn).
    return ctypes.string_at(buffer, written)


def set_state(ctx: Any, state: bytes) -> bool:
    """Put a copied state back; False when llama.cpp refused it."""
    buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
    return llama_cpp.llama_state_seq_set_data_ext(ctx, buffer, len(state), SEQ, _PARTIAL) != 0


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
