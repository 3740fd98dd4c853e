"""A loaded model's prompt texts and their tokens, each made once per turn.

A turn counts its prompt (World._fit), prefetches its start and generates it: renders of one
long history, each a few milliseconds, and their tokens, the whole history's otherwise. The
last full prompt is kept by its messages, the turn boundary is cut from it where the template
only appends a generation prompt, and tokens come through prefix_tokens.py.
"""

from __future__ import annotations

from typing import Any

import llama_cpp

from agentworld_local.engine.llama import vocab
from agentworld_local.engine.llama.prefix_tokens import PrefixTokenizer
from agentworld_local.engine.template import ChatTemplate
from agentworld_local.engine.types import ThinkBudget

_SPECIAL = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED


class PromptTexts:
    def __init__(self, llm: Any, model_vocab: Any, template: ChatTemplate) -> None:
        self.template = template
        self._llm = llm
        self.tokenizer = PrefixTokenizer(lambda text: vocab.tokenize(llm, text), lambda token: vocab.token_text(llm, token),
                                         lambda token: bool(llama_cpp.llama_vocab_get_attr(model_vocab, token) & _SPECIAL))
        self._last: tuple[list[dict[str, str]], bool, str] | None = None  # (messages, thinking, prompt)
        self._suffixes: dict[bool, str | None] = {}  # thinking -> what the generation prompt appends

    def tokens(self, text: str) -> tuple[int, ...]:
        return self.tokenizer.tokens(text)

    def tokens_alone(self, text: str) -> list[int]:
        """A short text's tokens, neither built from nor kept for a render's (a probe)."""
        return vocab.tokenize(self._llm, text)

    def prompt(self, messages: list[dict[str, str]], think: ThinkBudget) -> str:
        """vocab.render_prompt, the last one kept (counted, then generated, from the same messages)."""
        thinking = think.mode != "off"
        last = self._last
        if last is not None and last[1] == thinking and last[0] == messages:
            return last[2]
        text = vocab.render_prompt(self.template, messages, think)
        self._last = ([dict(message) for message in messages], thinking, text)
        return text

    def with_boundary(self, messages: list[dict[str, str]], think: ThinkBudget) -> tuple[str, str]:
        """(text up to the turn boundary, the full prompt): the boundary is the prompt less the
        generation prompt where the template only appends one (seen on a one-message
        conversation), else its own render."""
        full = self.prompt(messages, think)
        suffix = self._generation_suffix(think.mode != "off")
        if suffix and full.endswith(suffix):
            return full[: len(full) - len(suffix)], full
        return self.template.render(messages, add_generation_prompt=False), full

    def _generation_suffix(self, thinking: bool) -> str | None:
        if thinking not in self._suffixes:
            probe = [{"role": "user", "content": "A"}]
            base = self.template.render(probe, add_generation_prompt=False)
            full = vocab.render_prompt(self.template, probe, ThinkBudget("full" if thinking else "off"))
            self._suffixes[thinking] = full[len(base):] if full.startswith(base) and len(full) > len(base) else None
        return self._suffixes[thinking]
