"""One answer from a server, piece by piece, through the rules every backend applies.

Servers hand over thinking in one of two ways: in a field of its own (`reasoning_content`,
or `reasoning` on newer vLLM) when they run a reasoning parser, or inside the text. In the
text, a Qwen3.5-family prompt has already opened `<think>`, so the text starts inside
thinking and thinking ends at `</think>`; other models write `<think>` themselves. Both
become the raw answer the local backend would have written (thinking, `</think>`, the
answer), so the World parses and records them the same way.
"""

from __future__ import annotations

from agentworld_local.contract.parse import THINK_CLOSE, THINK_OPEN
from agentworld_local.engine.answer_rules import AnswerRules
from agentworld_local.engine.thinking import StreamEvent
from agentworld_local.engine.types import GenerationStats, SamplingConfig, ThinkBudget, ThinkingChunk

#: Written between separated thinking and the answer, as the model wrote it.
_THINK_END = THINK_CLOSE + "\n\n"


class AnswerStream:
    """Feed each streamed piece with `thinking(text)` or `text(text)`; read `rules` after each."""

    def __init__(self, *, think: ThinkBudget, sampling: SamplingConfig, stats: GenerationStats,
                 server_separates: bool, stop_after_observation: bool = True) -> None:
        self._think = think
        self._sampling = sampling
        self._stats = stats
        self._stop_after_observation = stop_after_observation
        #: Seen in an earlier answer: this server puts thinking in a field of its own.
        self.server_separates = server_separates
        self.rules: AnswerRules | None = None
        self.think_open = False
        self.thinking_text = ""  # what a continuation after a spent budget sends back
        self._head = ""  # text held until it is clear whether it opens `<think>`
        self._separated_thinking = False
        self._assumed_open = False  # thinking taken as opened by the prompt, not seen
        #: After a spent budget: everything the server sends is answer text.
        self.continuing = False

    def _start(self, think_open: bool) -> AnswerRules:
        self.think_open = think_open
        self.rules = AnswerRules(think_open=think_open, think=self._think, sampling=self._sampling,
                                 stats=self._stats, stop_after_observation=self._stop_after_observation)
        return self.rules

    def _feed(self, text: str) -> list[StreamEvent]:
        assert self.rules is not None
        was_thinking = self.rules.splitter.thinking
        events = self.rules.feed(text)
        if was_thinking:
            self.thinking_text += "".join(e.text for e in events if isinstance(e, ThinkingChunk))
        return events

    def thinking(self, text: str) -> list[StreamEvent]:
        """A piece from the server's own thinking field."""
        if self.continuing or (self.rules is not None and not self._separated_thinking):
            return self.text(text)  # after the answer began, any text is answer text
        self.server_separates = self._separated_thinking = True
        if self.rules is None:
            self._start(think_open=True)
        return self._feed(text)

    def text(self, text: str) -> list[StreamEvent]:
        """A piece of the message text."""
        events: list[StreamEvent] = []
        if self._separated_thinking and not self.continuing:
            self._separated_thinking = False
            if self.rules is not None and self.rules.splitter.thinking:
                events += self._feed(_THINK_END)  # thinking ended where the text began
        if self.rules is None:
            self._head += text
            head = self._head.lstrip()
            if THINK_OPEN.startswith(head) and len(head) < len(THINK_OPEN):
                return events  # too early to tell whether the model opens thinking itself
            text, self._head = self._head, ""
            if self._think.mode == "off" or self.server_separates:
                self._start(think_open=False)  # the splitter still sees a `<think>` the model writes
            else:
                self._start(think_open=True)  # the prompt opened thinking (Qwen3.5 family)
                self._assumed_open = True
                if head.startswith(THINK_OPEN):
                    text = head[len(THINK_OPEN):]
        return events + self._feed(text) if text else events

    def end_thinking(self) -> list[StreamEvent]:
        """The budget is spent: thinking ends here; a continuation brings the answer."""
        assert self.rules is not None
        self.continuing = True
        self._separated_thinking = False
        events = self.rules.end_thinking()
        self.thinking_text += "".join(e.text for e in events if isinstance(e, ThinkingChunk))
        return events

    def finish(self, how: str) -> list[StreamEvent]:
        """The stream ended (`how`: its finish): release what is held back.

        Text that was taken to start inside thinking but never closed it, from a model that
        ended its turn (`stop`), had no thinking: its template did not open any. The raw
        answer is then parsed as an answer (the World shows what the parse keeps).
        """
        events: list[StreamEvent] = []
        if self.rules is None:
            self._start(think_open=False)
            if self._head:
                events += self._feed(self._head)
                self._head = ""
        assert self.rules is not None
        events += self.rules.flush()
        if self._assumed_open and how == "stop" and THINK_CLOSE not in self.raw:
            self.think_open = False
        return events

    @property
    def raw(self) -> str:
        return "".join(self.rules.raw) if self.rules is not None else ""
