"""Parse a world model's answer into thinking and observation.

The answer is `<think>...</think>` (optional) then the observation inside
`<predicted_observation>...</predicted_observation>`. Real outputs break these rules:
thinking that never closes, draft tags inside thinking, several blocks, no tags at all.
Every case yields an observation and names the rule that produced it (`method`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
OBS_OPEN = "<predicted_observation>"
OBS_CLOSE = "</predicted_observation>"
OBSERVATION_MARKER = "**Environment Observation:**"

_BLOCK = re.compile(re.escape(OBS_OPEN) + r"(.*?)" + re.escape(OBS_CLOSE), re.DOTALL)
_ANY_TAG = re.compile(r"</?(?:think|predicted_observation)>")


@dataclass(frozen=True)
class ParsedOutput:
    thinking: str
    observation: str
    method: str  # tag | tag-unclosed | marker | cleaned | unclosed-think | empty
    thinking_closed: bool


def split_thinking(raw: str, *, think_open: bool = False) -> tuple[str, str, bool]:
    """Return (thinking, answer, closed). `think_open`: the prompt already opened `<think>`."""
    text = raw
    if not think_open:
        stripped = text.lstrip()
        if not stripped.startswith(THINK_OPEN):
            return "", text, True
        text = stripped[len(THINK_OPEN):]
    elif text.lstrip().startswith(THINK_OPEN):
        text = text.lstrip()[len(THINK_OPEN):]
    if THINK_CLOSE not in text:
        return text.strip(), "", False
    # Split at the last close tag, as the chat template does when it drops thinking.
    thinking, _, answer = text.rpartition(THINK_CLOSE)
    return thinking.strip(), answer, True


def _observation_from_answer(answer: str) -> tuple[str, str]:
    blocks = _BLOCK.findall(answer)
    tail_open = answer.rfind(OBS_OPEN)
    if tail_open != -1 and OBS_CLOSE not in answer[tail_open:]:
        # The last block was cut off (length limit): its text is the newest prediction.
        return answer[tail_open + len(OBS_OPEN):].strip(), "tag-unclosed"
    if blocks:
        return blocks[-1].strip("\n"), "tag"
    if OBSERVATION_MARKER in answer:
        after = answer.rpartition(OBSERVATION_MARKER)[2]
        return _ANY_TAG.sub("", after).strip(), "marker"
    cleaned = _ANY_TAG.sub("", answer).strip()
    return cleaned, "cleaned" if cleaned else "empty"


def parse_output(raw: str, *, think_open: bool = False) -> ParsedOutput:
    """Split a raw model answer into thinking and the predicted observation."""
    thinking, answer, closed = split_thinking(raw, think_open=think_open)
    if not closed:
        # Thinking never ended: a complete block inside it is the best guess we have.
        blocks = _BLOCK.findall(thinking)
        if blocks:
            return ParsedOutput(thinking, blocks[-1].strip("\n"), "unclosed-think", False)
        return ParsedOutput(thinking, "", "unclosed-think", False)
    observation, method = _observation_from_answer(answer)
    return ParsedOutput(thinking, observation, method, True)
