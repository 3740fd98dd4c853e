"""A server's own token counts for one answer, read from the stream as each server sends them.

Every OpenAI-compatible server counts the prompt and the answer with the model's tokenizer;
awl only estimates them (it has no tokenizer for a served model). Servers report the counts
in different places, and the usual one, `usage` in a chunk after the last (with
`stream_options.include_usage`), never comes when awl closes the stream because the answer
rules ended the turn (the observation closed) while the model wrote on:

* vLLM and SGLang send `usage` in every chunk with `stream_options.continuous_usage_stats`;
  `prompt_tokens_details.cached_tokens` where the server has it on.
* llama-server sends `timings` (`prompt_n` evaluated, `cache_n` reused, `predicted_n`) in
  every chunk with `timings_per_token`, and `usage` with `cached_tokens` in its last.
* Any other server: the last chunk's `usage`, read a few chunks past the answer's end.

What no chunk reported stays awl's estimate, and the turn record names it (`estimated`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentworld_local.engine.types import ESTIMABLE, GenerationStats


def usage_request(kind: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(stream_options, extra body fields) that make a server of `kind` report its counts
    in every chunk; a server awl does not know gets only the standard `include_usage`."""
    options: dict[str, Any] = {"include_usage": True}
    extra: dict[str, Any] = {}
    if kind in ("vllm", "sglang"):
        options["continuous_usage_stats"] = True
    elif kind == "llama-server":
        extra["timings_per_token"] = True
    return options, extra


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _field(value: Any, name: str) -> Any:
    """`name` of a pydantic object or a dict (servers' extra fields arrive as dicts)."""
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


@dataclass
class ServedCounts:
    """The counts the server reported so far for one answer (its first request, plus any
    continuation after a spent thinking budget): None where it said nothing."""

    prompt_total: int | None = None
    prompt_evaluated: int | None = None
    thinking: int | None = None
    #: Tokens the earlier requests of this answer generated (None once one did not say), and
    #: the current one so far.
    _generated_before: int | None = 0
    _generated: int | None = None
    _continuation: bool = False

    def next_request(self) -> None:
        """A continuation follows: its prompt is the first's plus the thinking, so only what it
        generates adds to the answer's counts."""
        before, now = self._generated_before, self._generated
        self._generated_before = None if before is None or now is None else before + now
        self._generated = None
        self._continuation = True

    def read(self, chunk: Any) -> bool:
        """Take what `chunk` reports; True when it carried `usage` (the last chunk of a server
        that reports only there)."""
        usage = _field(chunk, "usage")
        extra = getattr(chunk, "model_extra", None) or {}
        timings = extra.get("timings") if isinstance(extra, dict) else None
        if isinstance(timings, dict):
            evaluated, cached, predicted = (_count(timings.get(k)) for k in ("prompt_n", "cache_n", "predicted_n"))
            if evaluated is not None and cached is not None:
                self._prompt(evaluated + cached, evaluated)
            if predicted is not None:
                self._generated = predicted
        if usage is None:
            return False
        prompt = _count(_field(usage, "prompt_tokens"))
        cached = _count(_field(_field(usage, "prompt_tokens_details"), "cached_tokens"))
        if prompt:
            self._prompt(prompt, None if cached is None else max(prompt - cached, 0))
        completion = _count(_field(usage, "completion_tokens"))
        if completion is not None:
            self._generated = completion
        reasoning = _count(_field(_field(usage, "completion_tokens_details"), "reasoning_tokens"))
        if reasoning is not None and not self._continuation:
            self.thinking = reasoning
        return True

    def _prompt(self, total: int, evaluated: int | None) -> None:
        if self._continuation:
            return  # the answer's prompt is the first request's
        self.prompt_total = total
        if evaluated is not None:
            self.prompt_evaluated = evaluated

    @property
    def generated(self) -> int | None:
        """The answer's tokens, when every request of it said how many it generated."""
        if self._generated is None or self._generated_before is None:
            return None
        return self._generated_before + self._generated

    def apply(self, stats: GenerationStats) -> None:
        """Put the server's counts in `stats`; the rest stay awl's, named as estimates."""
        served = {"prompt_total": self.prompt_total, "prompt_evaluated": self.prompt_evaluated,
                  "thinking": self.thinking, "generated": self.generated}
        if self.prompt_total is not None:
            stats.prompt_tokens_total = self.prompt_total
            if self.prompt_evaluated is None:
                stats.prompt_tokens_evaluated = self.prompt_total  # the cache unknown: all of it, an estimate
        if self.prompt_evaluated is not None:
            stats.prompt_tokens_evaluated = self.prompt_evaluated
        if self.generated is not None:
            stats.generated_tokens = self.generated
        if self.thinking is not None:
            stats.thinking_tokens = self.thinking
        # No thinking (0) is a count, not an estimate; a count of thinking only some servers give.
        unreported = {name for name in ESTIMABLE if served[name] is None}
        if not stats.thinking_tokens:
            unreported.discard("thinking")
        stats.estimated = frozenset(unreported)
