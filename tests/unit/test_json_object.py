"""The one reader both judges use to find JSON objects in a model's free text
(contract/json_object.py): which objects it takes, fences, and answers built to make a
scan-from-every-brace reader quadratic (200,000 characters that took such a reader minutes)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentworld_local.agentworldbench.official_parse import model_output
from agentworld_local.agentworldbench.verdict import parse_verdict
from agentworld_local.contract.json_object import balanced_objects, fenced_blocks, object_closed_at, read_objects
from agentworld_local.session.rewards.task_judge import read_verdict

SIZE = 200_000
BENCH_VERDICT = json.dumps({"strengths": [], "weaknesses": [], "scores": {"format": 4, "factuality": 2}})
TASK_VERDICT = '{"achieved": true, "score": 0.5, "reason": "done"}'


def _object_from(text: str, start: int) -> str | None:
    """The plain reading, one scan per `{`: what the reader must agree with."""
    depth, in_string, escaped = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if escaped:
            escaped = False
        elif char == "\\" and in_string:
            escaped = True
        elif char == '"':
            in_string = not in_string
        elif not in_string and char in "{}":
            depth += 1 if char == "{" else -1
            if depth == 0:
                return text[start:index + 1]
    return None


def _plain_objects(text: str) -> list[str]:
    found, position = [], 0
    while (start := text.find("{", position)) != -1:
        obj = _object_from(text, start)
        if obj:
            found.append(obj)
        position = start + len(obj) if obj else start + 1
    return found


PIECES = ["{", "}", '"', "\\", " ", ":", ",", "a", "1", "[", "]", '\\"', '{"k": 1}', '"x}"']


@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_the_reader_takes_the_objects_a_scan_from_every_brace_takes(text):
    assert balanced_objects(text) == _plain_objects(text)


def _plain_loose_objects(text: str) -> list[dict]:
    """The task judge's plain reading: at each `{` the JSON object there, else the balanced span
    with trailing commas, then bare keys, repaired; one that does not read is looked inside."""
    found, position = [], 0
    while (start := text.find("{", position)) != -1:
        try:
            data, end = json.JSONDecoder().raw_decode(text, start)
        except ValueError:
            data, end = None, start + 1
            if span := _object_from(text, start):
                commas = re.sub(r",(\s*[}\]])", r"\1", span)
                for attempt in (commas, re.sub(r"([{,])\s*([A-Za-z_]\w*)\s*:", r'\1"\2":', commas)):
                    try:
                        data, end = json.loads(attempt), start + len(span)
                        break
                    except ValueError:
                        continue
        if isinstance(data, dict):
            found.append(data)
        position = end if isinstance(data, dict) else start + 1
    return found


LOOSE = ["{", "}", '"', "\\", " ", ",", ":", "a", "[", "]", '{"score": 0.1}', "{score: 0.2,}", '{"achieved": false',
         '"k": ', "{b: {score: 0.3}}", '"x, y: z"', '{"score": 0.4, "r": "}"}']


@given(st.lists(st.sampled_from(LOOSE), max_size=24).map("".join))
def test_the_task_judge_takes_the_verdict_a_plain_reading_takes(text):
    plain = [data for data in _plain_loose_objects(text) if "achieved" in data or "score" in data]
    verdict = read_verdict(text)
    if not plain:
        assert isinstance(verdict, str)  # why none was read
    else:  # every score in LOOSE is a float; `achieved` is only ever false
        assert isinstance(verdict, dict) and verdict["score"] == plain[-1].get("score", 0.0)


@pytest.mark.parametrize(("text", "objects"), [
    ('a stray { first, then {"a": 1} and {"b": {"c": 2}}', ['{"a": 1}', '{"b": {"c": 2}}']),
    ('{"a": 1} then {"b": "}"} and {"c": "\\"}"}', ['{"a": 1}', '{"b": "}"}', '{"c": "\\"}"}']),
    ('{"open": 1 {"inner": 2}', ['{"inner": 2}']),  # an object that never closes is passed over
    ("{{{", []), ("no braces", []), ("}{", []),
])
def test_balanced_objects_outermost_first_strings_passed_over(text, objects):
    assert balanced_objects(text) == objects


def test_a_span_the_caller_cannot_read_is_passed_over_and_its_inside_searched():
    text = 'See {notes: {"achieved": true}} and {"score": 1}'

    def readable(start, end):
        try:
            return json.loads(text[start:end])
        except ValueError:
            return None

    assert read_objects(text, readable) == [{"achieved": True}, {"score": 1}]


def test_a_span_nested_deeper_than_the_limit_is_passed_over_unread():
    text = '{"a": {"b": {"c": {}}}} {"d": 1}'
    seen = read_objects(text, lambda start, end: text[start:end], depth_limit=3)
    assert seen == ['{"b": {"c": {}}}', '{"d": 1}']


@pytest.mark.parametrize(("text", "blocks"), [
    ('```json\n{"a": 1}\n```', ['{"a": 1}']),
    ("```\n x \n```\ntext\n```json y```", ["x", "y"]),
    ("```JSON\n{}\n```", ["JSON\n{}"]),  # only a lowercase `json` is a fence language
    ("```json\n{} and no close", []), ("``````", [""]),
])
def test_fenced_blocks(text, blocks):
    assert list(fenced_blocks(text)) == blocks


def test_an_object_is_found_back_from_its_closing_brace():
    text = 'x {"a": {"b": "}"}} y'
    assert object_closed_at(text, text.rfind("}")) == '{"a": {"b": "}"}}'
    assert object_closed_at("no open }", 8) is None


# -- answers built to be slow: each returns the verdict after it (the per-test timeout bounds them)


ADVERSARIAL = {
    "unclosed braces": "{" * SIZE,
    "braces inside an open string": '{"a": "' + "{" * SIZE + '" ',
    "deep nesting": "{" * (SIZE // 2) + "}" * (SIZE // 2),
    "deep keys": '{"a":' * (SIZE // 5) + "}" * (SIZE // 5),
    "nested bad keys": '{"a" x' * (SIZE // 6) + "}" * (SIZE // 6),
    "many bad objects": '{"a" x}\n' * (SIZE // 8),
    "loose objects": "{a: 1,}" * (SIZE // 7),
    "escapes": '{"\\' * (SIZE // 3),
    "open fence": "```json" + " " * SIZE + "x\n",
}


@pytest.mark.parametrize("prefix", ADVERSARIAL.values(), ids=list(ADVERSARIAL))
def test_the_task_judge_reads_a_verdict_after_adversarial_text(prefix):
    verdict = read_verdict(prefix + " " + TASK_VERDICT)
    assert isinstance(verdict, dict) and verdict["achieved"] is True and verdict["score"] == 0.5


@pytest.mark.parametrize("prefix", ADVERSARIAL.values(), ids=list(ADVERSARIAL))
def test_the_bench_judge_reads_a_verdict_after_adversarial_text(prefix):
    verdict = parse_verdict(prefix + "\n```json\n" + BENCH_VERDICT + "\n```")
    assert verdict.success and verdict.scores["format"] == 4 and verdict.total == 3


@pytest.mark.parametrize("gen", ["<think>" * (SIZE // 7), "</think>" * (SIZE // 8), "<think><predicted_observation>" * 6_000])
def test_the_bench_judge_reads_a_gen_of_many_think_tags(gen):
    assert model_output(gen + "<predicted_observation>ok</predicted_observation>", "predicted_observation") == "ok"


def test_loose_json_is_still_repaired_after_a_long_answer():
    verdict = read_verdict("{x} " * (SIZE // 4) + '{achieved: true, "score": 1, reason: "fine",}')
    assert isinstance(verdict, dict) and verdict["achieved"] is True and verdict["reason"] == "fine"
