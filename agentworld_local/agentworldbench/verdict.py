"""Reading a judge's verdict, as the official scoring reads it.

The judge reasons first, then writes its verdict inside `<final_evaluation>` tags: a JSON
object (usually in a ```json fence) with `strengths`, `weaknesses` and `scores`, one
whole number from 1 to 5 for each of the five dimensions. Judges stray from that, so the
reading is forgiving in the same ways the official parser is: thinking is dropped, the
last tagged block wins (or the whole text when there is none), the JSON is the last fenced
or braced object that holds `scores`, trailing commas and bare keys are repaired, a score
may be a float (rounded), text such as "4/5", or missing (0: not counted); a positive
score is clamped to 1..5. The row's total is the mean of its positive scores.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agentworld_local.contract.parse import THINK_CLOSE
from agentworld_local.safe_parse import SyntaxProblem, load_json

DIMENSIONS = ("format", "factuality", "consistency", "realism", "quality")
VERDICT_TAG = "final_evaluation"
_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL | re.IGNORECASE)
_SCORES_ONLY = re.compile(r'"scores"\s*:\s*\{[^{}]*\}')


@dataclass(frozen=True)
class Verdict:
    success: bool
    scores: dict[str, int] = field(default_factory=dict)
    total: float = 0.0
    strengths: list[str] = field(default_factory=list)
    weaknesses: list[str] = field(default_factory=list)
    #: Why no verdict could be read (empty on success).
    problem: str = ""


def parse_verdict(text: str) -> Verdict:
    """The verdict in a judge's answer; `success` False (with `problem`) when none is readable."""
    text = (text or "").strip()
    if not text:
        return Verdict(False, problem="the judge answered nothing")
    if THINK_CLOSE in text:
        text = text.rpartition(THINK_CLOSE)[2]
    block = _last_block(text)
    found = _json_text(block if block is not None else text)
    if found is None and block is not None:
        found = _json_text(text)
    if found is None:
        return Verdict(False, problem="no JSON object in the verdict")
    data = _load(found)
    if not isinstance(data, dict) or not isinstance(data.get("scores"), dict):
        return Verdict(False, problem="the verdict has no `scores` object")
    scores = {name: _score(data["scores"].get(name)) for name in DIMENSIONS}
    counted = [value for value in scores.values() if value > 0]
    return Verdict(
        True, scores, sum(counted) / len(counted) if counted else 0.0,
        _texts(data.get("strengths")), _texts(data.get("weaknesses")),
    )


def _last_block(text: str) -> str | None:
    """The content of the last `<final_evaluation>` block (to the end when it is not closed)."""
    start = text.rfind(f"<{VERDICT_TAG}>")
    if start == -1:
        return None
    content = text[start + len(VERDICT_TAG) + 2 :]
    end = content.find(f"</{VERDICT_TAG}>")
    return content if end == -1 else content[:end]


def _objects(text: str) -> list[str]:
    """Every balanced `{...}` at the top level, strings respected, in order."""
    found, depth, start, in_string, escaped = [], 0, -1, False, False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"' and depth:
            in_string = True
        elif char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                found.append(text[start : index + 1])
    return found


def _json_text(text: str) -> str | None:
    fenced = [m.group(1).strip() for m in _FENCE.finditer(text)]
    fenced = [f for f in fenced if f.startswith("{") and f.endswith("}")]
    braced = _objects(text)
    for candidates in (fenced, braced):
        with_scores = [c for c in candidates if '"scores"' in c]
        if with_scores:
            return with_scores[-1]
    return (fenced or braced or [None])[-1]


def _load(text: str) -> Any:
    for attempt in (text, _repaired(text)):
        try:
            return load_json(attempt)
        except SyntaxProblem:
            continue
    scores = _SCORES_ONLY.search(text)
    if scores:
        try:
            return load_json("{" + scores.group(0) + "}")
        except SyntaxProblem:
            return None
    return None


def _repaired(text: str) -> str:
    text = re.sub(r",(\s*[}\]])", r"\1", text)  # trailing commas
    text = re.sub(r"'(\w+)'(\s*:)", r'"\1"\2', text)  # 'key':
    return re.sub(r"([{,])\s*(\w+)\s*:", r'\1"\2":', text)  # key:


def _score(value: Any) -> int:
    if isinstance(value, bool):
        number = 0
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float):
        number = round(value) if value == value and abs(value) < 1e9 else 0
    elif isinstance(value, str):
        head = value.split("/")[0].strip()
        number = int(head) if head.lstrip("-").isdigit() and len(head) < 10 else 0
    else:
        number = 0
    return max(1, min(5, number)) if number > 0 else 0


def _texts(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(item) for item in value]
    return [value] if isinstance(value, str) and value else []
