"""Reading a judge's verdict as the official parser reads it.

QwenLM/Qwen-AgentWorld eval/lwm_eval_utils/judge_parser.py, restated in awl's code: the
answer is stripped and its thinking removed (official_parse.without_thinking); the last
`<final_evaluation>` block is read (the whole text when there is none, or it is empty);
the JSON is the last ```json fence that holds `"scores"` (else the last fenced object),
else the last balanced object that holds it (else the last one), else the object that
ends at the last `}`; trailing commas, quoted and bare keys are repaired before it is
read, and when it still is not JSON, its `"scores"` object alone. Each of the five scores
is read as written: a whole number as it is, a float rounded (NaN or infinity fails the
verdict), text up to a `/` ("4/5" is 4; other text is 0), anything else 0; a score above
0 is clamped to 1..5, and one below 0 is kept: the official scoring averages it. The
row's total is the mean of its scores above 0.

`drop_negative` is awl's own reading, off by default: a negative score is read as 0 (no
score, not averaged), as awl read it before.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from agentworld_local.agentworldbench.official_parse import last_block, without_thinking
from agentworld_local.contract.json_object import balanced_objects, fenced_blocks, object_closed_at

DIMENSIONS = ("format", "factuality", "consistency", "realism", "quality")
VERDICT_TAG = "final_evaluation"
_SCORES_ONLY = re.compile(r'"scores"\s*:\s*\{[^}]+\}')
_SCORES_KEY = '"scores"'


@dataclass(frozen=True)
class Verdict:
    success: bool
    #: Each dimension's score as read (an int; a bool false stays false, as officially).
    scores: dict[str, Any] = field(default_factory=dict)
    total: float = 0.0
    strengths: list[str] = field(default_factory=list)
    weaknesses: list[str] = field(default_factory=list)
    #: Why no verdict could be read (empty on success).
    problem: str = ""


def parse_verdict(text: str, *, tag: str = VERDICT_TAG, drop_negative: bool = False) -> Verdict:
    """The verdict in a judge's answer; `success` False (with `problem`) when none is readable."""
    try:
        return _parse(text, tag, drop_negative)
    except (ValueError, OverflowError, TypeError, RecursionError) as error:  # what json and int() raise
        return Verdict(False, problem=f"the verdict could not be read ({type(error).__name__}: {str(error)[:200]})")


def _parse(text: str, tag: str, drop_negative: bool) -> Verdict:
    cleaned = text.strip() if text else ""
    if not cleaned:
        return Verdict(False, problem="the judge answered nothing")
    cleaned = without_thinking(cleaned, tag)
    block = last_block(cleaned, tag) if tag else None
    target = block or cleaned
    found = _fenced(target) or _best_object(target) or _object_before_last_brace(target)
    if not found:
        return Verdict(False, problem="no JSON object in the verdict")
    found = _repaired(found)
    try:
        data = json.loads(found)
    except json.JSONDecodeError:
        scores_only = _SCORES_ONLY.search(found)
        if not scores_only:
            raise
        data = json.loads('{"strengths":[],"weaknesses":[],' + scores_only.group(0) + "}")
    if not isinstance(data, dict) or not isinstance(data.get("scores"), dict):
        return Verdict(False, problem="the verdict has no `scores` object")
    scores = {name: _score(data["scores"].get(name, 0), drop_negative) for name in DIMENSIONS}
    counted = [value for value in scores.values() if value > 0]
    return Verdict(True, scores, sum(counted) / len(counted) if counted else 0,
                   _texts(data.get("strengths", [])), _texts(data.get("weaknesses", [])))


def _fenced(text: str) -> str | None:
    """The last fenced object that holds `"scores"`, else the last fenced object."""
    objects = [b for b in fenced_blocks(text) if b.startswith("{") and b.endswith("}")]
    with_scores = [b for b in objects if _SCORES_KEY in b]
    return (with_scores or objects or [None])[-1]


def _best_object(text: str) -> str | None:
    """The last balanced object (scanning on past each one) that holds `"scores"`, else the last."""
    found = balanced_objects(text)
    with_scores = [obj for obj in found if _SCORES_KEY in obj]
    return (with_scores or found or [None])[-1]


def _object_before_last_brace(text: str) -> str | None:
    """Back from the last `}` to the `{` that balances it."""
    end = text.rfind("}")
    return None if end == -1 else object_closed_at(text, end)


def _repaired(text: str) -> str:
    text = re.sub(r",(\s*[}\]])", r"\1", text)  # trailing commas
    text = re.sub(r"'(\w+)'(\s*:)", r'"\1"\2', text)  # 'key':
    return re.sub(r"([{,])\s*(\w+)\s*:", r'\1"\2":', text)  # key:


def _score(value: Any, drop_negative: bool) -> Any:
    if isinstance(value, int):  # a bool too, as officially: true is 1, false stays false
        number = value
    elif isinstance(value, float):
        number = int(round(value))
    elif isinstance(value, str):
        try:
            number = int(value.split("/")[0].strip())
        except ValueError:
            number = 0
    else:
        number = 0
    if number > 0:
        return max(1, min(5, number))
    return 0 if drop_negative and number < 0 else number


def _texts(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(item) for item in value]
    if isinstance(value, str):
        return [value] if value else []
    return []
