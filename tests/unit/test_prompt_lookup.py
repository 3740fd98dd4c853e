"""The prompt-lookup drafter (engine/llama/speculation.py) against a plain Python reference."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentworld_local.engine.llama.speculation import FIRST_PAUSE, MISS_RUN, PromptLookup


def reference_draft(tokens: list[int], min_ngram: int, max_ngram: int, limit: int) -> list[int]:
    """The longest tail (max_ngram down to min_ngram) found earlier, its latest occurrence ending
    before the last token; what followed it, up to `limit` tokens."""
    for n in range(min(max_ngram, len(tokens) - 1), min_ngram - 1, -1):
        tail = tokens[len(tokens) - n :]
        for start in range(len(tokens) - n - 1, -1, -1):
            if tokens[start : start + n] == tail:
                return tokens[start + n : start + n + limit]
    return []


# Small alphabets make repeats (and matches across token boundaries in the byte buffer) common;
# large ids exercise every byte of a token.
token_lists = st.one_of(
    st.lists(st.integers(0, 3), max_size=60),
    st.lists(st.sampled_from([0, 1, 256, 257, 65536, 16777216, 2**31 - 1]), max_size=60),
    st.lists(st.integers(0, 250_000), max_size=40),
)


@settings(max_examples=400, deadline=None)
@given(tokens=token_lists, min_ngram=st.integers(1, 3), extra=st.integers(0, 3), limit=st.integers(1, 10))
def test_draft_matches_the_reference(tokens: list[int], min_ngram: int, extra: int, limit: int) -> None:
    lookup = PromptLookup(tokens, min_ngram=min_ngram, max_ngram=min_ngram + extra, max_draft=10)
    assert lookup.draft(limit) == reference_draft(tokens, min_ngram, min_ngram + extra, limit)


@settings(max_examples=200, deadline=None)
@given(tokens=token_lists, more=token_lists, keep=st.integers(0, 80))
def test_extend_and_truncate_keep_the_same_tokens_as_a_fresh_lookup(tokens: list[int], more: list[int], keep: int) -> None:
    lookup = PromptLookup(tokens)
    lookup.extend(more)
    lookup.truncate(keep)
    expected = (tokens + more)[:keep]
    assert lookup.tokens() == expected and len(lookup) == len(expected)
    assert lookup.draft() == PromptLookup(expected).draft()


def test_a_repeated_file_is_drafted_from_where_it_was_shown() -> None:
    file = [11, 12, 13, 14, 15, 16, 17, 18, 19, 20]
    lookup = PromptLookup([1, 2, *file, 3, 4, 5, *file[:3]], max_draft=4)
    assert lookup.draft() == [14, 15, 16, 17]
    assert lookup.draft(2) == [14, 15]
    assert PromptLookup([1, 2, 3, 4]).draft() == []  # nothing repeats: no draft


def _missing(lookup: PromptLookup, runs: int) -> list[int]:
    """Reject every draft `runs` times in a row; the context lengths at which drafting resumed."""
    resumed = []
    for _ in range(runs):
        while not lookup.draft():
            lookup.extend([7])  # no draft offered: a plain decode
        resumed.append(len(lookup))
        lookup.verified(3, 0)
        lookup.extend([9])  # the token the sampler chose instead
    return resumed


def test_with_patience_a_run_of_misses_pauses_drafting_for_longer_each_time() -> None:
    # `--speculate auto`: 7 7 7 ... repeats, so a draft is always found; every one is rejected.
    lookup = PromptLookup([7] * 12, patience=MISS_RUN)
    resumed = _missing(lookup, 3 * MISS_RUN)
    gaps = [b - a for a, b in zip(resumed, resumed[1:])]
    # Within a run the next draft comes at once; after each run the pause doubles.
    assert gaps[MISS_RUN - 1] >= FIRST_PAUSE and gaps[2 * MISS_RUN - 1] >= 2 * FIRST_PAUSE
    assert all(gap <= 3 for i, gap in enumerate(gaps) if (i + 1) % MISS_RUN)


def test_an_accepted_draft_ends_the_run_of_misses_and_on_never_pauses() -> None:
    lookup = PromptLookup([7] * 12, patience=MISS_RUN)
    for _ in range(5 * MISS_RUN):
        assert lookup.draft(), "an accepted draft every other miss keeps drafting on"
        lookup.verified(3, 0)
        lookup.extend([7])
        lookup.verified(3, 1)
        lookup.extend([7])
    always = PromptLookup([7] * 12)
    _missing(always, 4 * MISS_RUN)
    assert not always.paused and always.draft()


def test_the_pause_outlasts_a_turn_when_the_next_lookup_takes_its_pacing() -> None:
    """A turn builds its lookup anew from the context; with the session's pacing the runs of
    misses go on doubling the pause instead of starting again at FIRST_PAUSE every turn."""
    first = PromptLookup([7] * 12, patience=MISS_RUN)
    _missing(first, MISS_RUN)  # one run of misses: the next pause is twice the first
    assert first.pacing.pause == 2 * FIRST_PAUSE
    context = first.tokens() + [7] * (FIRST_PAUSE + 1)  # the pause ran out before the next turn
    resumed = _missing(PromptLookup(context, patience=MISS_RUN, pacing=first.pacing), MISS_RUN + 1)
    afresh = _missing(PromptLookup(context, patience=MISS_RUN), MISS_RUN + 1)
    assert resumed[-1] - resumed[-2] >= 2 * FIRST_PAUSE > afresh[-1] - afresh[-2] >= FIRST_PAUSE

