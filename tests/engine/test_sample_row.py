"""A copied row's greedy pick (engine/llama/batching.py sample_row): the argmax taken directly is
the token llama.cpp's greedy sampler picks from the whole candidate array, ties, infinities and
rows that are not numbers included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_cpp import _internals as llama_internals

from agentworld_local.engine.llama.batching import sample_row

pytestmark = pytest.mark.timeout(300)


def greedy_chain():
    sampler = llama_internals.LlamaSampler()
    sampler.add_greedy()
    return sampler


def both(row: np.ndarray) -> tuple[int, int]:
    chain, direct = greedy_chain(), greedy_chain()
    try:
        return sample_row(chain, row.copy()), sample_row(direct, row.copy(), greedy=True)
    finally:
        chain.close()
        direct.close()


VALUES = st.one_of(st.sampled_from([0.0, 1.0, -1.0, 3.5, float("inf"), float("-inf"), float("nan")]),
                   st.floats(width=32, allow_nan=True, allow_infinity=True))


@settings(max_examples=400, deadline=None)
@given(st.lists(VALUES, min_size=1, max_size=40))
def test_the_direct_greedy_pick_is_the_chains_pick(values):
    chain, direct = both(np.array(values, dtype=np.float32))
    assert chain == direct


def test_a_vocabulary_sized_row_with_ties_picks_the_first_largest():
    rng = np.random.default_rng(7)
    for _ in range(20):
        row = rng.standard_normal(262_144).astype(np.float32)
        top = rng.choice(262_144, size=3, replace=False)
        row[top] = row.max() + 1  # a three-way tie: the first of them in token order
        chain, direct = both(row)
        assert chain == direct == int(top.min())
