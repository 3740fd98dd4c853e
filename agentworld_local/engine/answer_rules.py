"""The rules every backend applies to each generated piece of an answer.

What counts as thinking, when a thinking budget is spent, when a degenerate loop, a
finished observation or `max_tokens` ends the turn (each as SamplingConfig asks): one
implementation, so the llama backend and the scripted backend (which tests the answer
path) cannot drift apart.
"""

from __future__ import annotations

from agentworld_local.contract.parse import OBS_CLOSE
from agentworld_local.engine.repetition import RepetitionDetector
from agentworld_local.engine.thinking import FORCED_THINK_END, StreamEvent, ThinkingSplitter
from agentworld_local.engine.types import GenerationStats, SamplingConfig, ThinkBudget


class AnswerRules:
    """Feed each generated piece; read `finish` (the turn ends) and `budget_spent` after each.

    `sampling` says which rules apply: `max_tokens` for the answer or for every token,
    the stop at the first closed observation block, the repetition guard.
    """

    def __init__(
        self,
        *,
        think_open: bool,
        think: ThinkBudget,
        sampling: SamplingConfig,
        stats: GenerationStats,
        stop_after_observation: bool = True,
    ) -> None:
        self.splitter = ThinkingSplitter(thinking=think_open)
        self._repetition = RepetitionDetector() if sampling.repetition_guard else None
        self._think = think
        self._max_tokens = sampling.max_tokens
        self._counts_thinking = sampling.max_tokens_counts_thinking
        self._stats = stats
        self._stop_after_observation = stop_after_observation and sampling.stop_at_observation
        self.raw: list[str] = []
        #: Set when the turn must end after this piece: repetition, stop or length.
        self.finish: str | None = None
        #: Set when the thinking budget ran out: the caller writes FORCED_THINK_END (end_thinking).
        self.budget_spent = False

    def feed(self, text: str) -> list[StreamEvent]:
        """One generated piece (a token's text): the events to stream."""
        stats = self._stats
        stats.generated_tokens += 1
        self.raw.append(text)
        was_thinking = self.splitter.thinking
        events = self.splitter.feed(text)
        self.budget_spent = False
        thinking = was_thinking or self.splitter.thinking
        if self._repetition is not None and self._repetition.feed(text):
            self.finish = "repetition"  # a degenerate loop would only fill max_tokens
            return events
        if thinking:
            stats.thinking_tokens += 1
            budget = self._think.mode == "budget" and stats.thinking_tokens >= (self._think.tokens or 0)
            self.budget_spent = self.splitter.thinking and budget
        elif self._stop_after_observation and OBS_CLOSE in self.splitter.answer[-len(OBS_CLOSE) - 16 :]:
            self.finish = "stop"  # the observation is complete; anything after it is noise
            return events
        counted = stats.generated_tokens if self._counts_thinking else stats.generated_tokens - stats.thinking_tokens
        if (self._counts_thinking or not thinking) and counted >= self._max_tokens:
            self.finish = "length"
        return events

    def tokens_left(self) -> int | None:
        """How many more tokens can be fed before the thinking budget or max_tokens ends the
        thinking or the turn (the one that does counted); None when neither can. A caller that
        feeds several tokens at once (a verified draft) feeds no more than this."""
        stats, thinking = self._stats, self.splitter.thinking
        left: list[int] = []
        if thinking and self._think.mode == "budget":
            left.append((self._think.tokens or 0) - stats.thinking_tokens)
        if self._counts_thinking:
            left.append(self._max_tokens - stats.generated_tokens)
        elif not thinking:
            left.append(self._max_tokens - (stats.generated_tokens - stats.thinking_tokens))
        return max(1, min(left)) if left else None

    def end_thinking(self) -> list[StreamEvent]:
        """The budget is spent: thinking ends here with FORCED_THINK_END in the raw answer."""
        self.budget_spent = False
        self._stats.thinking_cut = True  # every backend ends a budget here: the turn says it was cut
        self.raw.append(FORCED_THINK_END)
        return self.splitter.end_thinking()

    def flush(self) -> list[StreamEvent]:
        return self.splitter.flush()
