"""One llama.cpp context, several sessions: their decodes share each llama_decode.

Each session that generates holds a sequence of its own in the context (sequences.py). A turn
asks "evaluate these tokens for sequence k" and waits; whichever waiting turn finds the
context free leads the next round: it puts every waiting request in one llama_batch (one
token per generating sequence first, then whole prompt chunks, up to n_batch; a chunk that
does not fit waits for the next round), decodes once, and copies out each request's logits
(the context's are overwritten by the next round, which another turn may start before this
one samples): `sample_row` then samples from the copy exactly as llama_sampler_sample does
from the context. Nothing else touches the context meanwhile: state copies and cache trims
take `exclusive()`.

A round waits a moment (`gather_s`) for the generations in flight that have not asked yet
(they are turning their last token into text), so sequences decode together rather than in
turn; a lone generation never waits.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import llama_cpp
import numpy as np

from agentworld_local.engine.llama.compute_thread import ComputeThread


class DecodeFailed(Exception):
    """llama_decode refused a round (its return code): the context has no room, or it failed."""

    def __init__(self, code: int) -> None:
        super().__init__(f"llama_decode returned {code}")
        self.code = code


@dataclass
class _Request:
    seq: int
    pos: int  # the position of tokens[0] in its sequence
    tokens: list[int]
    all_logits: bool  # logits at every position (a draft's verify), else at the last one
    keep: bool  # copy the logits out (other sequences' rounds may come before the sample)
    #: Logits at the last position at all: a prompt chunk that nothing samples after asks for none
    #: (the output row costs a matrix product over the whole vocabulary: 262k rows on Gemma).
    output: bool = True
    sent: int = 0  # tokens already put in a round
    finished: bool = False
    logits: Any = None  # the copied rows, one per position asked
    error: DecodeFailed | None = None
    index: int = -1  # the batch index of the last token, in its round
    asked: float = field(default_factory=time.monotonic)


@dataclass
class BatchStats:
    rounds: int = 0  # llama_decode calls
    tokens: int = 0  # tokens they decoded
    sequences: int = 0  # requests they served, summed over rounds (sequences per round = this / rounds)


class BatchDecoder:
    """Every llama_decode of one context (see the module's doc)."""

    def __init__(self, context: Any, n_batch: int, n_vocab: int, *, gather_s: float = 0.002) -> None:
        """`context`: llama-cpp-python's LlamaContext."""
        self._context = context
        self._n_vocab = n_vocab
        self._n_batch = n_batch
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self._rows = _BatchRows(self._batch, n_batch)
        self._cond = threading.Condition()
        self._waiting: list[_Request] = []
        self._busy = False
        self._holder: int | None = None  # the thread in exclusive()
        self._wanted = 0  # threads waiting for exclusive(): no round starts before they have it
        self._active = 0
        self.gather_s = gather_s
        self.stats = BatchStats()
        self._compute = ComputeThread()  # every llama_decode on one thread (compute_thread.py)

    @contextlib.contextmanager
    def generating(self) -> Iterator[None]:
        """Held by a generation for its whole length: rounds wait a moment for its requests."""
        with self._cond:
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """The context to oneself, between rounds (state copies, cache trims, the model's
        close); a thread that holds it may take it again (no decode inside). It comes after the
        round in flight: no new round starts while a thread waits for it (rounds of other
        sessions one after the other kept a checkpoint's copy waiting for hundreds of ms)."""
        me = threading.get_ident()
        if self._holder == me:
            yield
            return
        with self._cond:
            self._wanted += 1
            try:
                while self._busy:
                    self._cond.wait()
            finally:
                self._wanted -= 1
            self._busy = True
            self._holder = me
        try:
            yield
        finally:
            with self._cond:
                self._busy = False
                self._holder = None
                self._cond.notify_all()

    def decode(self, seq: int, pos: int, tokens: list[int], *, all_logits: bool = False,
               keep: bool = False, output: bool = True) -> Any:
        """Evaluate `tokens` in sequence `seq` from position `pos` (at most n_batch of them),
        with logits at the last position (every position with `all_logits`; none without
        `output`); with `keep`, those logits copied out (a float32 array, one row per position
        asked), else None and they are the context's until the next round. Raises DecodeFailed."""
        if not tokens or len(tokens) > self._n_batch:
            raise ValueError(f"a request takes 1..{self._n_batch} tokens, not {len(tokens)}")
        request = _Request(seq, pos, list(tokens), all_logits, keep, output or all_logits)
        with self._cond:
            alone = not (self._busy or self._wanted or self._waiting or self._active > 1)
            if alone:  # nothing to gather: this request is the round (a lone session's every token)
                self._busy = True
            else:
                self._lead_or_wait(request)
        if alone:
            try:
                self._run([(request, 0, len(request.tokens))])
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
        if request.error is not None:
            raise request.error
        return request.logits

    def _lead_or_wait(self, request: _Request) -> None:
        """With the lock held: queue `request`, then lead rounds or wait until it is decoded."""
        self._waiting.append(request)
        if len(self._waiting) > 1:
            self._cond.notify_all()  # a round being gathered may be complete now
        while not request.finished:
            if self._busy or self._wanted or not self._gathered():
                self._cond.wait(self._gather_left())
                continue
            parts = self._take()
            self._busy = True
            self._cond.release()
            try:
                self._run(parts)
            finally:
                self._cond.acquire()
                self._busy = False
                self._cond.notify_all()

    # -- rounds (the leader holds _busy) ------------------------------------------------

    def _gathered(self) -> bool:
        """Whether a round may start: every generation in flight has asked, or the wait is over."""
        if not self._waiting:
            return False
        if len(self._waiting) >= self._active:
            return True
        return time.monotonic() - self._waiting[0].asked >= self.gather_s

    def _gather_left(self) -> float | None:
        if self._busy or not self._waiting:
            return None
        return max(0.0, self.gather_s - (time.monotonic() - self._waiting[0].asked)) + 1e-4

    def _take(self) -> list[tuple[_Request, int, int]]:
        """The round's parts (request, first token, count): single tokens of generating
        sequences first, then prompt chunks in the order they came, whole, up to n_batch (a
        sequence's chunks stay as it would evaluate them alone)."""
        room = self._n_batch
        parts = []
        for request in sorted(self._waiting, key=lambda r: len(r.tokens) > 1):  # stable: FIFO within each kind
            if len(request.tokens) <= room:
                parts.append((request, 0, len(request.tokens)))
                request.sent = len(request.tokens)
                room -= len(request.tokens)
        self._waiting = [r for r in self._waiting if r.sent < len(r.tokens)]
        return parts

    def _run(self, parts: list[tuple[_Request, int, int]]) -> None:
        batch, rows = self._batch, self._rows
        i = 0
        for request, start, count in parts:
            request.index = i
            # A request is always taken whole (_take): its last token is the request's last.
            rows.put(i, request.tokens[start : start + count], request.pos + start, request.seq,
                     request.all_logits, request.output)
            i += count
        batch.n_tokens = i
        ctx = self._context.ctx
        verify = _is_verify(parts)
        threads, batch_threads = llama_cpp.llama_n_threads(ctx), llama_cpp.llama_n_threads_batch(ctx)
        most = threads if i == 1 or verify else max(threads, batch_threads)  # what llama.cpp runs the round on
        if most == 1:  # no OpenMP team: any thread may run it (no hand-over)
            code = _decode_on_threads(ctx, batch, verify, threads, batch_threads)
        else:
            code = self._compute.call(lambda: _decode_on_threads(ctx, batch, verify, threads, batch_threads))
        self.stats.rounds += 1
        self.stats.tokens += i
        self.stats.sequences += len(parts)
        for request, start, count in parts:
            if code != 0:
                request.error = DecodeFailed(code)
                request.finished = True
                self._waiting = [r for r in self._waiting if r is not request]
            else:
                if request.keep and request.output:
                    request.logits = self._copy_logits(request)
                request.finished = True

    def _copy_logits(self, request: _Request) -> Any:
        first = request.index if request.all_logits else request.index + len(request.tokens) - 1
        rows = np.empty((request.index + len(request.tokens) - first, self._n_vocab), dtype=np.float32)
        for row in range(len(rows)):
            source = llama_cpp.llama_get_logits_ith(self._context.ctx, first + row)
            ctypes.memmove(rows[row].ctypes.data, source, rows.shape[1] * 4)
        return rows

    def close(self) -> None:
        with self.exclusive():
            if self._batch is not None:
                llama_cpp.llama_batch_free(self._batch)
                self._batch = None
            self._compute.close()


def _is_verify(parts: list[tuple[_Request, int, int]]) -> bool:
    """A round of a draft's verify and no prompt chunk: it replaces one-token decodes."""
    return any(r.all_logits for r, _, _ in parts) and all(r.all_logits or len(r.tokens) == 1 for r, _, _ in parts)


def _decode_on_threads(ctx: Any, batch: Any, verify: bool, threads: int, batch_threads: int) -> int:
    """llama_decode of a round. llama.cpp runs one row on `n_threads` and more on `n_threads_batch`
    (llama-cpp-python's defaults: half the CPUs, all of them); a round of a draft's verify and no
    prompt chunk replaces one-token decodes, so it runs on theirs: on the batch's it cost 4 to 8
    of them on a busy 2-core machine, drafting 3 to 6 times slower than none (issue 45).
    `threads`, `batch_threads`: the context's, read once by the round."""
    if not verify or threads == batch_threads:
        return llama_cpp.llama_decode(ctx, batch)
    llama_cpp.llama_set_n_threads(ctx, threads, threads)
    try:
        return llama_cpp.llama_decode(ctx, batch)
    finally:
        llama_cpp.llama_set_n_threads(ctx, threads, batch_threads)


class _BatchRows:
    """Writes rows of a llama_batch: a generated token's one row through ctypes pointers taken
    once (reading `batch.token` builds a new pointer object each time), a prompt chunk's
    hundreds through numpy views in C. Each row belongs to one sequence (n_seq_id is 1)."""

    def __init__(self, batch: Any, n_batch: int) -> None:
        self._token, self._pos, self._logits = batch.token, batch.pos, batch.logits
        self._tokens = np.ctypeslib.as_array(batch.token, shape=(n_batch,))
        self._positions = np.ctypeslib.as_array(batch.pos, shape=(n_batch,))
        self._outputs = np.ctypeslib.as_array(batch.logits, shape=(n_batch,))
        np.ctypeslib.as_array(batch.n_seq_id, shape=(n_batch,))[:] = 1
        self._seq_ids = [batch.seq_id[row] for row in range(n_batch)]  # each row's own array
        self._seq_of = [-1] * n_batch  # what each row's seq_id[0] holds (written only when it changes)

    def put(self, at: int, tokens: list[int], pos: int, seq: int, all_logits: bool, output: bool) -> None:
        """Rows at.. for `tokens` at positions pos.. of `seq`, with logits at every row
        (`all_logits`), at the last (`output`, which `all_logits` implies) or at none."""
        count = len(tokens)
        if count == 1:
            self._token[at], self._pos[at] = tokens[0], pos
            self._logits[at] = output
        else:
            self._tokens[at : at + count] = tokens
            self._positions[at : at + count] = np.arange(pos, pos + count, dtype=np.int32)
            self._outputs[at : at + count] = all_logits
            self._outputs[at + count - 1] = output
        seq_of = self._seq_of
        for row in range(at, at + count):
            if seq_of[row] != seq:
                self._seq_ids[row][0] = seq_of[row] = seq


_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])  # llama_token_data


def sample_row(sampler: Any, logits: Any, *, greedy: bool = False) -> int:
    """What llama_sampler_sample does with the context's logits, from a copied row: the
    candidates in token order, the chain applied, the pick accepted (the same draws).

    `greedy`: the chain is llama.cpp's greedy sampler alone, whose pick is the first largest
    logit: that is the row's argmax, without the candidate array (a Gemma row is 262k tokens:
    building it cost more per token than the argmax by fifteen times). A row whose largest value
    is not a number takes the chain's own way."""
    if greedy:
        token = int(np.argmax(logits))
        if not np.isnan(logits[token]):
            llama_cpp.llama_sampler_accept(sampler.sampler, token)
            return token
    candidates = np.empty(len(logits), dtype=_TOKEN_DATA)
    candidates["id"] = np.arange(len(logits), dtype=np.int32)
    candidates["logit"] = logits
    candidates["p"] = 0.0
    array = llama_cpp.llama_token_data_array(
        candidates.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_token_data)), len(candidates), -1, False)
    llama_cpp.llama_sampler_apply(sampler.sampler, ctypes.byref(array))
    if not 0 <= array.selected < array.size:
        raise RuntimeError("the sampler picked no token")
    # The chain may have replaced the array (sorted, truncated): read the pick where it points now.
    token = int(array.data[array.selected].id)
    llama_cpp.llama_sampler_accept(sampler.sampler, token)
    return token
