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

_ANY_TAG = re.compile(r"</?(?:think|predicted_observation)>")


@dataclass(frozen=True)
class ParsedOutput:
    thinking: str
    observation: str
    method: str  # tag | tag-unclosed | marker | cleaned | unclosed-think | empty
    thinking_closed: bool


def split_thinking(raw: str, *, think_open: bool = False) -> tuple[str, str, bool]:
    """Return (thinking, answer, closed). `think_open`: the prompt already opened `<think>`.

    Thinking ends at the first `</think>`, where the streaming splitter ends it too (in
    llama.cpp `</think>` is one special token: once written, thinking is over).
    """
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
    thinking, _, answer = text.partition(THINK_CLOSE)
    return thinking.strip(), answer, True


def block_text(content: str) -> str:
    """A block's observation: its text without the blank lines that frame it.

    Only line breaks are trimmed: spaces belong to the screen (an indented first line,
    the space after a shell prompt).
    """
    return content.strip("\r\n")


@dataclass(frozen=True)
class StreamedObservation:
    """What the answer so far says of the observation while more text may still come."""

    #: Where the block that holds the observation opens (its `<predicted_observation>`), -1 if none yet.
    block_start: int
    #: Text no later chunk can change while that block stays the last one: the final
    #: observation starts with it.
    stable: str


def partial_tag_length(text: str) -> int:
    """Length of the longest end of `text` that could still grow into a tag."""
    start = text.rfind("<", max(0, len(text) - len(OBS_OPEN)))
    if start == -1:
        return 0
    tail = text[start:]
    return len(tail) if OBS_OPEN.startswith(tail) or OBS_CLOSE.startswith(tail) else 0


def observation_so_far(answer: str) -> StreamedObservation:
    """The observation of an answer (text after thinking) that is still being written.

    One rule with `observation_from_answer`: the observation is the text of the block
    opened by the last `<predicted_observation>`, up to the first close after it (or to
    the end when the answer was cut off).
    """
    start = answer.rfind(OBS_OPEN)
    if start == -1:
        return StreamedObservation(-1, "")  # the marker or cleaned text: known only at the end
    content = answer[start + len(OBS_OPEN):]
    end = content.find(OBS_CLOSE)
    if end != -1:
        return StreamedObservation(start, block_text(content[:end]))
    content = content[: len(content) - partial_tag_length(content)]
    # Line breaks at the end may turn out to frame the block: hold them back.
    return StreamedObservation(start, block_text(content))


def observation_from_answer(answer: str) -> tuple[str, str]:
    """(observation, method) of a finished answer (the text after thinking)."""
    start = answer.rfind(OBS_OPEN)
    if start != -1:
        content = answer[start + len(OBS_OPEN):]
        end = content.find(OBS_CLOSE)
        if end == -1:
            # The last block was cut off (length limit): its text is the newest prediction.
            return block_text(content), "tag-unclosed"
        return block_text(content[:end]), "tag"
    if OBSERVATION_MARKER in answer:
        after = answer.rpartition(OBSERVATION_MARKER)[2]
        return _ANY_TAG.sub("", after).strip(), "marker"
    cleaned = _ANY_TAG.sub("", answer).strip()
    return cleaned, "cleaned" if cleaned else "empty"


def _last_complete_block(text: str) -> str | None:
    end = text.rfind(OBS_CLOSE)
    start = text.rfind(OBS_OPEN, 0, end) if end != -1 else -1
    return None if start == -1 else block_text(text[start + len(OBS_OPEN):end])


def parse_output(raw: str, *, think_open: bool = False) -> ParsedOutput:
    """Split a raw model answer into thinking and the predicted observation."""
    thinking, answer, closed = split_thinking(raw, think_open=think_open)
    if not closed:
        # Thinking never ended: a complete block inside it is the best guess we have.
        block = _last_complete_block(thinking)
        return ParsedOutput(thinking, block or "", "unclosed-think", False)
    observation, method = observation_from_answer(answer)
    return ParsedOutput(thinking, observation, method, True)
