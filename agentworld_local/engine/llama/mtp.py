"""Drafts from the model's own multi-token-prediction (MTP, "nextn") layer: `--speculate mtp`.

Qwen3.5 GGUFs can carry one extra decoder block trained to predict the token after next from
the trunk's last hidden state and the next token. llama.cpp runs it as a second context on the
same model (`ctx_type = LLAMA_CONTEXT_TYPE_MTP`, its own small attention cache); the target
context hands it the hidden states (`llama_set_embeddings_nextn`). Those functions live in
llama.cpp's staging header (src/llama-ext.h, no `extern "C"`), so llama-cpp-python does not
bind them and they are reached here by their C++ symbol names; docs/speculation.md has the
evidence. The backend verifies the drafts exactly as prompt-lookup ones: the answer is the same.

Protocol (llama.cpp's common/speculative.cpp, draft-mtp): the MTP context's entry at position
p is token p with the target's hidden state at p-1. After every target decode the MTP context
catches up on the same positions (`after_target`); a draft starts from the next token and the
last hidden state, then feeds each drafted token with the MTP layer's own hidden state.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator
from typing import Any

import llama_cpp
import numpy as np

from agentworld_local.errors import AwlError

_bindings = llama_cpp.llama_cpp
#: The staging functions' symbols in libllama (C++ names: they change if the signatures do).
_SYMBOLS = {
    "set_embeddings": ("_Z26llama_set_embeddings_nextnP13llama_contextbb", [ctypes.c_void_p, ctypes.c_bool, ctypes.c_bool], None),
    "embeddings": ("_Z26llama_get_embeddings_nextnP13llama_context", [ctypes.c_void_p], ctypes.POINTER(ctypes.c_float)),
    "embeddings_ith": ("_Z30llama_get_embeddings_nextn_ithP13llama_contexti", [ctypes.c_void_p, ctypes.c_int32],
                       ctypes.POINTER(ctypes.c_float)),
}
#: Tokens an MTP head drafts at once: each step feeds its own guess back, so later ones are rarely right.
MTP_DRAFT = 3


def _function(name: str) -> Any:
    symbol, argtypes, restype = _SYMBOLS[name]
    try:
        function = getattr(_bindings._lib, symbol)
    except AttributeError:
        raise AwlError("This llama.cpp build has no multi-token-prediction API (llama_set_embeddings_nextn).",
                       "Use `--speculate on` (prompt lookup), or a llama-cpp-python built from a llama.cpp with MTP.") from None
    function.argtypes, function.restype = argtypes, restype
    return function


def require_mtp_layer(name: str, summary: Any) -> None:
    """Refuse `--speculate mtp` before the load when the file (its `GgufSummary`) holds no MTP
    layer: none declared, or one declared without its tensors (some community GGUFs)."""
    if summary is None or summary.nextn_layers >= 1:
        return  # a file the header reader cannot summarise: llama.cpp's own count decides (MtpDrafter)
    declared = summary.declared_nextn_layers or 0
    why = (f"its header declares {'one' if declared == 1 else declared}, but the file holds none of its tensors"
           if declared else "none is declared in its header")
    raise AwlError(f"{name} has no multi-token-prediction (MTP) layer ({why}), so `--speculate mtp` has nothing "
                   "to draft with.", "Use `--speculate on` (prompt lookup), or a GGUF converted with its MTP layer.")


@contextlib.contextmanager
def with_mtp_layers(enabled: bool) -> Iterator[None]:
    """While a `Llama()` is created: its model loads the MTP block too (`load_mtp`; skipped by default)."""
    if not enabled:
        yield
        return
    load = _bindings.llama_model_load_from_file

    def load_with_mtp(path: bytes, params: Any) -> Any:
        params.load_mtp = True
        return load(path, params)

    _bindings.llama_model_load_from_file = load_with_mtp
    try:
        yield
    finally:
        _bindings.llama_model_load_from_file = load


class MtpDrafter:
    """The MTP context of one target context (sequence 0: a backend with one session slot)."""

    def __init__(self, model: Any, target: Any, n_ctx: int, n_batch: int) -> None:
        if llama_cpp.llama_model_n_layer_nextn(model) < 1:
            raise AwlError("This model has no multi-token-prediction (MTP) layer.",
                           "Use `--speculate on` (prompt lookup), or a GGUF converted with its MTP layer.")
        self._set_embeddings = _function("set_embeddings")
        self._embeddings = _function("embeddings")
        self._embeddings_ith = _function("embeddings_ith")
        params = llama_cpp.llama_context_default_params()
        params.n_ctx, params.n_batch, params.n_ubatch = n_ctx, n_batch, n_batch
        params.ctx_type = llama_cpp.LLAMA_CONTEXT_TYPE_MTP
        # One thread: the MTP layer is one block, and a second pool of busy threads beside the
        # target's would take the cores it needs.
        params.n_threads = params.n_threads_batch = 1
        self._ctx = llama_cpp.llama_init_from_model(model, params)
        if not self._ctx:
            raise AwlError("llama.cpp could not open the model's MTP context.", "Use `--speculate on` or `off`.")
        self._target = target
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        self._n_embd = llama_cpp.llama_model_n_embd(model)
        self._n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
        self._set_embeddings(target, True, False)  # every position's hidden state, for the catch-up
        self._set_embeddings(self._ctx, True, True)  # the draft's own, where it asks for output
        #: The last target batch's hidden states and the position of its first row.
        self._rows = np.zeros((0, self._n_embd), np.float32)
        self._rows_at = 0

    def _hidden(self, position: int) -> np.ndarray:
        """The target's hidden state at `position` if the last batch had it, else zeros (an
        entry without it only makes drafts worse, never wrong: the target verifies them)."""
        index = position - self._rows_at
        if 0 <= index < len(self._rows):
            return self._rows[index]
        return np.zeros(self._n_embd, np.float32)

    def _decode(self, tokens: list[int], states: list[np.ndarray], start: int, output: bool) -> None:
        """Put `tokens` at positions `start`... in the MTP context, each with its hidden state."""
        llama_cpp.llama_memory_seq_rm(self._memory, 0, start, -1)
        batch = llama_cpp.llama_batch_ext_init(self._ctx)
        try:
            for i, (token, state) in enumerate(zip(tokens, states)):
                index = llama_cpp.llama_batch_ext_add_token(batch, 0, token)
                llama_cpp.llama_batch_ext_set_pos(batch, index, (llama_cpp.llama_pos * 1)(start + i))
                view = llama_cpp.llama_embd(state.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), 1, self._n_embd)
                llama_cpp.llama_batch_ext_set_embd_token(batch, index, view)
                llama_cpp.llama_batch_ext_set_output_logits(batch, index, output and i == len(tokens) - 1)
            if llama_cpp.llama_process(self._ctx, llama_cpp.LLAMA_PROCESS_TYPE_DECODE, batch) != 0:
                raise AwlError("llama.cpp failed in the MTP context.", "Use `--speculate on` or `off`.")
        finally:
            llama_cpp.llama_batch_ext_free(batch)

    def after_target(self, start: int, tokens: list[int]) -> None:
        """The target just decoded `tokens` at `start`...: catch the MTP context up on them."""
        rows = np.ctypeslib.as_array(self._embeddings(self._target), shape=(len(tokens) * self._n_embd,))
        states = [self._hidden(start - 1)]
        self._rows, self._rows_at = rows.reshape(len(tokens), self._n_embd).copy(), start
        states += list(self._rows[:-1])
        self._decode(tokens, states, start, output=False)

    def draft(self, token: int, position: int, limit: int) -> list[int]:
        """Up to `limit` tokens to follow `token`, which goes at `position` (greedy guesses: the
        target's sampler decides)."""
        state = self._hidden(position - 1)
        drafted: list[int] = []
        for step in range(limit):
            self._decode([token], [state], position + step, output=True)
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self._ctx, -1), shape=(self._n_vocab,))
            token = int(logits.argmax())
            drafted.append(token)
            state = np.ctypeslib.as_array(self._embeddings_ith(self._ctx, -1), shape=(self._n_embd,)).copy()
        return drafted

    def close(self) -> None:
        if self._ctx:
            llama_cpp.llama_free(self._ctx)
            self._ctx = None
