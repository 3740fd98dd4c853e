"""How many tokens a draft's verify may hold with the answers of one-token decodes (`--speculate auto`).

llama.cpp picks its kernels by the number of rows a decode has, and kernels that sum in
another order give other low bits: a verify batch's logits are not always a one-token decode's,
and the cells it writes move every later token. Measured on Gemma 3 270M Q4_K_M on this
project's CPU: decodes of 1 to 3 rows give the logits of one-token decodes bit for bit; from 4
rows (ggml's repacked Q4_K matrix kernels take activation rows 4 at a time) they differ by up
to 6.5, and greedy answers that copy a file after an earlier turn differed from
`--speculate off` in 6 of 8 with drafts of 8 tokens, in none with drafts of 2. GPU kernels
switch at other widths (CUDA's one-token matrix-vector kernel serves up to 8 rows).

So `auto` measures it once the model is loaded (`exact_width`): PROBE tokens evaluated one at a
time (the reference), then again in batches of w rows for w = 2, 3, ... (every row's logits,
each batch after the last, as a run of verifies writes its cells); the widest w for which every
width up to it gave the reference's logits bit for bit. Drafts are then at most w - 1 tokens;
w = 1 (no width matched): auto does not draft. It is a measurement, not a proof: a kernel that
differs only at some positions or context lengths can escape the probe (docs/speculation.md).
`on` verifies MAX_DRAFT tokens at once whatever the probe would say.
"""

from __future__ import annotations

from typing import Any

import llama_cpp
import numpy as np

from agentworld_local.engine.llama.batching import DecodeFailed
from agentworld_local.engine.llama.speculation import MAX_DRAFT, MISS_RUN, speculation_default

#: Text the probe evaluates (any text works: the kernels depend on the batch's shape).
PROBE_TEXT = (
    "def main(argv):\n    config = load_config(argv[1])\n    for name, value in sorted(config.items()):\n"
    '        print(f"{name} = {value}")\n    return 0\n\nThe quick brown fox jumps over the lazy dog. '
    "Pack my box with five dozen liquor jugs. server: host 0.0.0.0 port 8080 logging level info\n"
)
PREFIX = 32  # tokens of context before the probed ones
LENGTH = MAX_DRAFT + 4  # probed tokens: at every width a second batch reads the cells the first wrote
SEQ = 0  # the sequence the probe borrows, before any session has one


def drafting(backend: Any, mode: str) -> tuple[int, int | None]:
    """(the widest verify, the sampled token included: 0 when it does not draft; the drafts
    rejected in a row before drafting pauses, None: never) for `--speculate mode`."""
    if mode == "off":
        return 0, None
    if mode != "auto":  # on, mtp: as wide as drafts go
        return MAX_DRAFT + 1, None
    if not speculation_default(stateful=backend.is_stateful, gpu_layers=backend.info.gpu_layers):
        return 0, MISS_RUN
    width = exact_width(backend._batcher, backend._memory, backend.tokenize(PROBE_TEXT), MAX_DRAFT + 1,
                        n_batch=backend.n_batch, n_ctx=backend.n_ctx)
    return (width if width > 1 else 0), MISS_RUN


def exact_width(batcher: Any, memory: Any, tokens: list[int], widest: int, *, n_batch: int, n_ctx: int) -> int:
    """The widest decode, up to `widest` rows, whose logits (and every narrower one's) equal
    one-token decodes' bit for bit after the same context (see the module's doc); 1: none.
    Borrows sequence SEQ and leaves it empty."""
    if not tokens or PREFIX + LENGTH + 1 > n_ctx:
        return 1
    while len(tokens) < PREFIX + LENGTH:
        tokens = tokens + tokens
    prefix, probe = tokens[:PREFIX], tokens[PREFIX : PREFIX + LENGTH]
    widest = min(widest, n_batch)
    try:
        for start in range(0, PREFIX, n_batch):
            batcher.decode(SEQ, start, prefix[start : start + n_batch], output=False)
        reference = [batcher.decode(SEQ, PREFIX + i, [token], keep=True)[0] for i, token in enumerate(probe)]
        width = 1
        for rows in range(2, widest + 1):
            with batcher.exclusive():
                llama_cpp.llama_memory_seq_rm(memory, SEQ, PREFIX, -1)
            for start in range(0, LENGTH, rows):
                got = batcher.decode(SEQ, PREFIX + start, probe[start : start + rows], all_logits=True, keep=True)
                if not all(np.array_equal(row, reference[start + i]) for i, row in enumerate(got)):
                    return width
            width = rows
        return width
    except DecodeFailed:
        return 1
    finally:
        with batcher.exclusive():
            llama_cpp.llama_memory_seq_rm(memory, SEQ, -1, -1)
