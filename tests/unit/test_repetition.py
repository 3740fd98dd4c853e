"""Degenerate loops stop a generation; normal repetitive terminal output does not."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentworld_local.engine.repetition import MAX_SPAN, RepetitionDetector, loop_length_needed


def feed_all(text: str, chunk: int = 7) -> RepetitionDetector:
    detector = RepetitionDetector()
    for start in range(0, len(text), chunk):
        if detector.feed(text[start : start + chunk]):
            break
    return detector


def test_thousands_of_newlines_are_a_loop():
    detector = feed_all("<predicted_observation>\n" + "\n" * 4096)
    assert detector.looping and detector.span == "\n"


def test_a_short_phrase_said_over_and_over_is_a_loop():
    assert feed_all("Let me think. " + "I will check the file. " * 200).looping


def test_spans_up_to_the_limit_are_found_and_longer_ones_are_not():
    span = "".join(chr(ord("a") + i % 26) for i in range(MAX_SPAN))
    assert feed_all(span * 120).looping
    longer = span + "!"
    assert not feed_all(longer * 120).looping


def test_the_loop_must_be_long_before_it_counts():
    assert not feed_all("\n" * (loop_length_needed(1) - 2)).looping
    assert feed_all("\n" * loop_length_needed(1)).looping


def test_normal_terminal_output_is_not_cut():
    listing = "".join(f"-rw-r--r-- 1 root root {i * 37 % 9000:5d} Mar  4 09:12 file_{i:04d}.txt\n" for i in range(2000))
    table = "".join(f"| {i:6d} | {'row ' + str(i):<20} |\n" + "+" + "-" * 78 + "+\n" for i in range(300))
    rule = "=" * 400 + "\n"
    blank_screen = "\n" * 60 + "root@sandbox:/app# "
    yes_screen = "y\n" * 45
    for text in (listing, table, rule, blank_screen, yes_screen):
        assert not feed_all(text).looping


@given(st.text(max_size=300), st.integers(min_value=1, max_value=50))
def test_chunking_does_not_change_the_verdict(text, chunk):
    assert feed_all(text, chunk).looping == feed_all(text, 1).looping


@given(st.lists(st.tuples(st.sampled_from(["a", "ab", "\n", " ", "abc", "x\n", "é", "日本", "-" * 5]),
                          st.integers(1, 600)), min_size=1, max_size=12),
       st.lists(st.integers(1, 70), min_size=1, max_size=8))
def test_the_sliced_path_finds_what_the_character_loop_finds(pieces, sizes):
    """Issue 27: token texts take a sliced path; the same loops, at the same point, same span."""
    text = "".join(span * times for span, times in pieces)
    fast, slow = RepetitionDetector(), RepetitionDetector()
    start, index = 0, 0
    while start < len(text):
        chunk = text[start : start + sizes[index % len(sizes)]]
        start, index = start + len(chunk), index + 1
        assert fast.feed(chunk) == slow._feed_chars(chunk)
        assert (fast.looping, fast.span) == (slow.looping, slow.span)
        if fast.looping:
            break
