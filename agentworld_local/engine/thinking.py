"""Split a streamed answer into thinking and answer text as tokens arrive."""

from __future__ import annotations

from agentworld_local.contract.parse import THINK_CLOSE, THINK_OPEN
from agentworld_local.engine.types import AnswerDelta, ThinkingDelta

StreamEvent = ThinkingDelta | AnswerDelta


class ThinkingSplitter:
    """Routes text to ThinkingDelta until `</think>`, then to AnswerDelta.

    Holds back the tail that could be the start of a `</think>` split across tokens.
    """

    def __init__(self, *, thinking: bool) -> None:
        self.thinking = thinking
        self._seen_text = False
        self._pending = ""
        self.answer = ""  # the answer text so far, after thinking

    def feed(self, text: str) -> list[StreamEvent]:
        if not self._seen_text and not self.thinking and text.lstrip().startswith(THINK_OPEN):
            self.thinking = True  # a template without a think prompt: the model opened one itself
            text = text.lstrip()[len(THINK_OPEN) :]
        self._seen_text = self._seen_text or bool(text.strip())
        if not self.thinking:
            self.answer += text
            return [AnswerDelta(text)] if text else []
        self._pending += text
        if THINK_CLOSE in self._pending:
            before, _, after = self._pending.partition(THINK_CLOSE)
            self._pending, self.thinking = "", False
            events: list[StreamEvent] = [ThinkingDelta(before)] if before else []
            if after:
                self.answer += after
                events.append(AnswerDelta(after))
            return events
        safe = len(self._pending) - len(THINK_CLOSE)
        if safe <= 0:
            return []
        out, self._pending = self._pending[:safe], self._pending[safe:]
        return [ThinkingDelta(out)]

    def end_thinking(self) -> list[StreamEvent]:
        """The budget ran out: flush what is held back; what follows is answer text."""
        events: list[StreamEvent] = [ThinkingDelta(self._pending)] if self._pending else []
        self._pending, self.thinking = "", False
        return events

    def flush(self) -> list[StreamEvent]:
        return self.end_thinking() if self.thinking else []
