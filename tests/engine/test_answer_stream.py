"""What streams on screen is what is recorded: realistic answers cut at every chunk boundary.

The answers go through the scripted backend and the real World.step, as a model's
tokens would; the observation shown while streaming must equal the observation saved.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agentworld_local.contract.parse import OBS_OPEN, observation_so_far, partial_tag_length, split_thinking
from agentworld_local.domains import get_domain
from agentworld_local.engine.types import ThinkBudget
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import ObservationStream, World
from agentworld_local.engine.events import ObservationDelta, ObservationReplaced, TurnFinished
from agentworld_local.testing.answers import ANSWERS, RealisticAnswer
from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend

DOMAIN = get_domain("terminal")


def run_turn(answer: ScriptedAnswer, *, think: str = "full", several_blocks: bool = False):
    """(text shown, whether it was replaced, the saved record) for one turn."""
    backend = ScriptedBackend([answer], stop_after_observation=not several_blocks)
    world = World(backend, DOMAIN, SessionSettings(think=ThinkBudget.parse(think)))
    shown, replaced, record = "", False, None
    for event in world.step("ls"):
        if isinstance(event, ObservationDelta):
            shown += event.text
        elif isinstance(event, ObservationReplaced):
            # Only when a later block wins: what streamed is not the start of the final text.
            assert not event.text.startswith(shown)
            shown, replaced = event.text, True
        elif isinstance(event, TurnFinished):
            record = event.record
    assert record is not None
    return shown, replaced, record


def split_points(item: RealisticAnswer) -> list[tuple[int, ...]]:
    """Every single split point, plus one-character chunks."""
    return [(i,) for i in range(1, len(item.raw))] + [tuple(range(1, len(item.raw)))]


# The loop answer is 4,000 characters of newlines: its one-character run is below.
EXHAUSTIVE = [item for item in ANSWERS if item.name != "newline_loop"]


@pytest.mark.parametrize("item", EXHAUSTIVE, ids=lambda item: item.name)
def test_streamed_observation_equals_recorded_at_every_chunk_boundary(item):
    for splits in split_points(item):
        answer = ScriptedAnswer(item.raw, splits=splits, finish=item.finish)
        shown, replaced, record = run_turn(answer, several_blocks=item.several_blocks)
        assert (record.observation, record.parse_method) == (item.observation, item.method), splits
        assert shown == record.observation, splits
        assert not replaced or item.several_blocks, splits


@pytest.mark.parametrize("think", ["full", "off", "4"])
@pytest.mark.parametrize("item", ANSWERS, ids=lambda item: item.name)
def test_one_character_chunks_in_every_thinking_mode(item, think):
    shown, replaced, record = run_turn(ScriptedAnswer(item.raw, chunk=1, finish=item.finish), think=think,
                                       several_blocks=item.several_blocks)
    assert shown == record.observation
    assert not replaced or item.several_blocks
    if think == "full":
        assert record.observation == item.observation


def test_a_later_block_that_wins_replaces_what_streamed():
    item = next(item for item in ANSWERS if item.several_blocks)
    shown, replaced, record = run_turn(ScriptedAnswer(item.raw, chunk=3), several_blocks=True)
    assert replaced and shown == record.observation == "buy milk\ncall Ana"


def test_a_block_framed_by_newlines_streams_once_without_a_replacement():
    """The defect users saw: the observation printed, then "differs", then printed again."""
    raw = "<predicted_observation>\ntotal 0\n</predicted_observation>"
    for chunk in (1, 2, 3, 5):
        shown, replaced, record = run_turn(ScriptedAnswer(raw, chunk=chunk))
        assert (shown, replaced, record.observation) == ("total 0", False, "total 0")


def test_the_llama_backend_stops_after_the_first_block_and_so_does_the_scripted_one():
    item = next(item for item in ANSWERS if item.several_blocks)
    shown, replaced, record = run_turn(ScriptedAnswer(item.raw, chunk=3))
    assert not replaced and record.observation == shown == "cat: notes.txt: No such file or directory"


# -- fuzzing: any answer, any chunks ------------------------------------------------

_PIECES = ["<think>", "</think>", OBS_OPEN, "</predicted_observation>", "<", "</pred", "<predicted_obs",
           "\n", "\r\n", "\n\n", " ", "a", "b c", "$ ", "**Environment Observation:**", "\x1b[1m"]
answers = st.lists(st.sampled_from(_PIECES), max_size=24).map("".join)


@given(raw=answers, cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=12),
       think=st.sampled_from(["full", "off"]))
def test_any_answer_in_any_chunks_streams_what_is_recorded(raw, cuts, think):
    splits = tuple(sorted({cut for cut in cuts if cut < len(raw)}))
    shown, replaced, record = run_turn(ScriptedAnswer(raw, splits=splits), think=think, several_blocks=True)
    assert shown == record.observation
    if replaced:  # a later block won: the answer after thinking opened more than one
        thinking_open = think == "full" and raw.lstrip().startswith("<think>")
        answer = split_thinking(record.raw_output, think_open=thinking_open)[1]
        assert answer.count(OBS_OPEN) >= 2


def _streamed_by_the_rule(chunks: list[str]) -> list[tuple[str, str]]:
    """What each chunk shows by the parser's rule read on the whole answer so far: the
    observation's new stable text while the first block streams, else the untagged text
    short of a possible tag, whitespace before any held back until text follows it (the
    stream must give this without rereading the answer)."""
    answer, emitted, untagged, block, stopped, out = "", "", "", None, False, []
    for chunk in chunks:
        observed = ""
        if not stopped and chunk:
            answer += chunk
            so_far = observation_so_far(answer)
            if so_far.block_start != -1:
                block = so_far.block_start if block is None else block
                if so_far.block_start != block or not so_far.stable.startswith(emitted):
                    stopped = True
                else:
                    observed, emitted = so_far.stable[len(emitted):], so_far.stable
        shown = ""
        if not observed and block is None:
            candidate = answer[: len(answer) - partial_tag_length(answer)]
            if candidate.startswith(untagged) and (untagged or candidate.strip()):
                shown, untagged = candidate[len(untagged):], candidate
        out.append((observed, shown))
    return out


_TAGGED = "ok\n" + OBS_OPEN + "\n$ ls\nREADME.md\n</predicted_observation>"


@example(raw=_TAGGED, cuts=[len("ok\n") + 5])  # the tag in two chunks
@example(raw=_TAGGED, cuts=list(range(len(_TAGGED))))  # a character at a time
@given(raw=answers | st.just(_TAGGED), cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=16))
def test_the_stream_shows_per_chunk_what_the_rule_gives_on_the_whole_answer(raw, cuts):
    bounds = [0, *sorted(cut for cut in cuts if cut <= len(raw)), len(raw)]
    chunks = [raw[start:end] for start, end in zip(bounds, bounds[1:])]
    stream, got = ObservationStream(), []
    for chunk in chunks:
        observed = stream.feed(chunk)
        got.append((observed, "" if observed else stream.untagged_text()))
    assert got == _streamed_by_the_rule(chunks)
