"""The judge step's readings, each case with what the official parser (QwenLM/Qwen-AgentWorld
eval/lwm_eval_utils, restated in agentworldbench/verdict.py and official_parse.py) gives for
it, worked out by hand from its rules: a verdict's scores (negative and out-of-range ones
included), and what the judge is shown from a `gen`."""

from __future__ import annotations

import json

import pytest

from agentworld_local.agentworldbench.official_parse import model_output, unmarked, without_thinking
from agentworld_local.agentworldbench.verdict import parse_verdict

TAG = "predicted_observation"


def scores_text(**scores) -> str:
    return json.dumps({"strengths": ["s"], "weaknesses": ["w"], "scores": scores})


def tagged(body: str) -> str:
    return f"Reasoning first.\n<final_evaluation>\n```json\n{body}\n```\n</final_evaluation>"


ALL_FOUR = {"format": 4, "factuality": 4, "consistency": 4, "realism": 4, "quality": 4}


@pytest.mark.parametrize(
    ("value", "read"),
    [
        (-1, -1), (-7, -7),  # kept: the official scoring averages them
        (0, 0), (9, 5), (1, 1),  # 0 is "no score"; above 5 is clamped
        (3.6, 4), (2.5, 2), (-0.6, -1),  # rounded half to even, as Python rounds
        ("4/5", 4), ("+3", 3), ("-2", -2), (" 5 ", 5), ("four", 0), ("", 0),
        (True, 1), (None, 0), ([3], 0), ({"v": 3}, 0),
    ],
)
def test_a_score_is_read_as_the_official_parser_reads_it(value, read):
    verdict = parse_verdict(tagged(scores_text(**{**ALL_FOUR, "factuality": value})))
    assert verdict.success and verdict.scores["factuality"] == read
    counted = [v for v in verdict.scores.values() if v > 0]
    assert verdict.total == pytest.approx(sum(counted) / len(counted))  # the mean of the scores above 0


def test_false_stays_false_and_a_missing_score_is_0():
    verdict = parse_verdict(tagged(scores_text(format=False, factuality=4)))
    assert verdict.scores == {"format": False, "factuality": 4, "consistency": 0, "realism": 0, "quality": 0}
    assert verdict.total == 4


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_a_score_that_is_not_a_finite_number_fails_the_verdict(value):
    body = scores_text(**ALL_FOUR).replace('"factuality": 4', f'"factuality": {value}')
    verdict = parse_verdict(tagged(body))
    assert not verdict.success and "could not be read" in verdict.problem


def test_dropping_negative_scores_is_an_option_off_by_default():
    text = tagged(scores_text(**{**ALL_FOUR, "realism": -2}))
    assert parse_verdict(text).scores["realism"] == -2
    assert parse_verdict(text, drop_negative=True).scores["realism"] == 0
    assert parse_verdict(text, drop_negative=True).total == parse_verdict(text).total == 4


@pytest.mark.parametrize(
    ("text", "format_score"),
    [
        # Thinking goes (a decoy inside it too); the last tagged block wins.
        ('<think>{"scores": {"format": 1}}</think>' + tagged(scores_text(format=3)), 3),
        (tagged(scores_text(format=1)) + tagged(scores_text(format=2)), 2),
        # Tags in any case; a block left open runs to the end.
        ("<FINAL_EVALUATION>" + scores_text(format=5), 5),
        # No tags: the last fence that holds "scores", then the last balanced object.
        (f"```json\n{scores_text(format=2)}\n```\n```json\n{{\"other\": 1}}\n```", 2),
        ('A stray { first, then ' + scores_text(format=4), 4),
        # Bare and quoted keys, trailing commas repaired.
        ("{scores: {'format': 3, factuality: 2,},}", 3),
        # An uppercase fence language is no fence language: the object inside is still found.
        (f"```JSON\n{scores_text(format=4)}\n```", 4),
    ],
)
def test_where_the_verdict_is_found(text, format_score):
    verdict = parse_verdict(text)
    assert verdict.success and verdict.scores["format"] == format_score


def test_a_repair_that_breaks_a_string_falls_back_to_the_scores_alone():
    # The bare-key repair also touches `, note:` inside a string; the JSON breaks; the scores survive.
    text = '{"strengths": ["good, note: fine"], "scores": {"format": 4, "factuality": 3}}'
    verdict = parse_verdict(text)
    assert verdict.success and verdict.strengths == [] and verdict.scores["factuality"] == 3


@pytest.mark.parametrize(
    ("text", "problem"),
    [("", "answered nothing"), ("   ", "answered nothing"), ("no verdict here", "no JSON object"),
     ('{"score": {"format": 4}}', "no `scores` object"), ('{"scores": [4, 4]}', "no `scores` object"),
     # A tagged block without JSON does not fall back to the text around it.
     ('{"scores": {"format": 4}} <final_evaluation>none</final_evaluation>', "no JSON object")],
)
def test_a_verdict_that_cannot_be_read_says_why(text, problem):
    verdict = parse_verdict(text)
    assert not verdict.success and problem in verdict.problem


def test_strengths_and_weaknesses_are_lists_of_texts():
    text = json.dumps({"strengths": [1, None, "x"], "weaknesses": "one", "scores": {"format": 3}})
    verdict = parse_verdict(text)
    assert verdict.strengths == ["1", "None", "x"] and verdict.weaknesses == ["one"]


# -- what the judge is shown from a gen ---------------------------------------------------------


@pytest.mark.parametrize(
    ("gen", "shown"),
    [
        ("<think>plan</think>\n\n<predicted_observation>\nls\n</predicted_observation>", "ls"),
        ("<predicted_observation>a</predicted_observation><predicted_observation>b</predicted_observation>", "b"),
        ("<Predicted_Observation>x</PREDICTED_OBSERVATION>", "x"),
        ("<predicted_observation>cut off", "cut off"),
        ("<predicted_observation></predicted_observation>", ""),
        ("plain text\n", "plain text"), ("", "No output"), ("<think>only thinking</think>", "No output"),
        # A close with no open takes everything before it (a server without a reasoning parser).
        ("thinking</think>\n\n<predicted_observation>y</predicted_observation>", "y"),
        # An open with no close runs to the response tag.
        ("<think>unfinished <predicted_observation>z</predicted_observation>", "z"),
        ("<think>unfinished and nothing else", "No output"),
        # Nested pairs pair in order.
        ("<think>a<think>b</think>c</think>keep", "keep"),
    ],
)
def test_what_the_judge_is_shown_from_a_gen(gen, shown):
    assert model_output(gen, TAG) == shown


def test_text_without_think_tags_is_left_as_it_is():
    assert without_thinking("  kept as is \n", TAG) == "  kept as is \n"
    assert without_thinking("<THINK>x</Think> rest ", TAG) == "rest"


@pytest.mark.parametrize(
    ("text", "marker", "clean"),
    [("**M:** body ", "**M:**", "body"), ("head **M:** body", "**M:**", "head  body"), (" x ", "", "x")],
)
def test_the_marker_comes_off_as_officially(text, marker, clean):
    assert unmarked(text, marker) == clean
