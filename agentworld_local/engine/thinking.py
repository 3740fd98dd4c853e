"""Split a streamed answer into thinking and answer text as tokens arrive."""

from __future__ import annotations

from agentworld_local.contract.parse import THINK_CLOSE, THINK_OPEN
from agentworld_local.engine.types import AnswerChunk, ThinkingChunk

StreamEvent = ThinkingChunk | AnswerChunk

#: Written when a thinking budget runs out: the model continues to the observation.
FORCED_THINK_END = "\n" + THINK_CLOSE + "\n\n"


def _could_open_thinking(text: str) -> bool:
    """Whitespace, then (part of) `<think>`: too early to tell whether the model opens thinking."""
    rest = text.lstrip()
    return THINK_OPEN.startswith(rest) and len(rest) < len(THINK_OPEN)


class ThinkingSplitter:
    """Routes text to ThinkingChunk until `</think>`, then to AnswerChunk.

    Splits where `parse_output` splits (the first `</think>`; a leading `<think>` when the
    prompt did not open one), so the streamed answer is the answer the parser sees. Holds
    back text that could still become one of those tags across chunk boundaries.
    """

    def __init__(self, *, thinking: bool) -> None:
        self.thinking = thinking
        self._deciding = not thinking  # the model may still open `<think>` itself
        self._pending = ""
        self.answer = ""  # the answer text so far, after thinking

    def feed(self, text: str) -> list[StreamEvent]:
        if self._deciding:
            self._pending += text
            if _could_open_thinking(self._pending):
                return []
            self._deciding = False
            text, self._pending = self._pending, ""
            stripped = text.lstrip()
            if stripped.startswith(THINK_OPEN):
                self.thinking = True  # a template without a think prompt: the model opened one itself
                text = stripped[len(THINK_OPEN) :]
        if not self.thinking:
            self.answer += text
            return [AnswerChunk(text)] if text else []
        self._pending += text
        if THINK_CLOSE in self._pending:
            before, _, after = self._pending.partition(THINK_CLOSE)
            self._pending, self.thinking = "", False
            events: list[StreamEvent] = [ThinkingChunk(before)] if before else []
            if after:
                self.answer += after
                events.append(AnswerChunk(after))
            return events
        safe = len(self._pending) - len(THINK_CLOSE)
        if safe <= 0:
            return []
        out, self._pending = self._pending[:safe], self._pending[safe:]
        return [ThinkingChunk(out)]

    def end_thinking(self) -> list[StreamEvent]:
        """The budget ran out: flush what is held back; what follows is answer text."""
        events: list[StreamEvent] = [ThinkingChunk(self._pending)] if self._pending else []
        self._pending, self.thinking = "", False
        return events

    def flush(self) -> list[StreamEvent]:
        """The stream ended: release what is held back."""
        if self._deciding:
            self._deciding = False
            text, self._pending = self._pending, ""
            self.answer += text
            return [AnswerChunk(text)] if text else []
        return self.end_thinking() if self.thinking else []
