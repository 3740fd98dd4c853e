"""Streaming split of thinking and answer, with tags cut across tokens."""

from agentworld_local.engine.thinking import ThinkingSplitter
from agentworld_local.engine.types import AnswerChunk, ThinkingChunk


def stream(splitter, pieces):
    events = [event for piece in pieces for event in splitter.feed(piece)] + splitter.flush()
    thinking = "".join(e.text for e in events if isinstance(e, ThinkingChunk))
    answer = "".join(e.text for e in events if isinstance(e, AnswerChunk))
    return thinking, answer


def test_close_tag_split_across_tokens():
    thinking, answer = stream(ThinkingSplitter(thinking=True), ["plan it", "</th", "ink>", "\n<predicted_observation>ok"])
    assert thinking == "plan it" and answer == "\n<predicted_observation>ok"


def test_model_opens_thinking_itself():
    splitter = ThinkingSplitter(thinking=False)
    thinking, answer = stream(splitter, ["<think>", "hmm", "</think>", "done"])
    assert thinking == "hmm" and answer == "done" and splitter.answer == "done"


def test_draft_close_tags_inside_thinking_stay_out_of_the_answer():
    splitter = ThinkingSplitter(thinking=True)
    stream(splitter, ["<predicted_observation>x</predicted_observation>", "</think>", "\n"])
    assert "</predicted_observation>" not in splitter.answer


def test_forced_end_flushes_the_held_back_text():
    splitter = ThinkingSplitter(thinking=True)
    events = splitter.feed("abc</t")
    events += splitter.end_thinking()
    assert "".join(e.text for e in events) == "abc</t" and not splitter.thinking
    assert splitter.feed("obs") == [AnswerChunk("obs")]


def test_an_opening_tag_split_across_chunks_is_still_thinking():
    splitter = ThinkingSplitter(thinking=False)
    assert stream(splitter, ["\n<thi", "nk>plan</th", "ink>answer"]) == ("plan", "answer")


def test_text_that_only_looks_like_an_opening_tag_at_first_is_answer():
    assert stream(ThinkingSplitter(thinking=False), [" <th", "ere"]) == ("", " <there")
    assert stream(ThinkingSplitter(thinking=False), ["<thi"]) == ("", "<thi")
