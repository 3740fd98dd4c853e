"""Render conversations with the chat template embedded in the GGUF (Jinja, sandboxed)."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from agentworld_local.errors import ModelError

# Used only when a GGUF carries no template; the Qwen family speaks ChatML.
FALLBACK_CHATML = (
    "{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content | trim }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# Gemma has no system role: the system text opens the first user turn.
FALLBACK_GEMMA = (
    "{{ bos_token }}{% set ns = namespace(system='') %}"
    "{% for message in messages %}{% if message.role == 'system' %}"
    "{% set ns.system = message.content | trim ~ '\n\n' %}"
    "{% else %}<start_of_turn>{{ 'model' if message.role == 'assistant' else 'user' }}\n"
    "{{ ns.system if message.role == 'user' else '' }}{{ message.content | trim }}<end_of_turn>\n"
    "{% if message.role == 'user' %}{% set ns.system = '' %}{% endif %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def fallback_template(architecture: str | None) -> str:
    """A template in the family's own chat format, for GGUFs that ship without one."""
    if architecture and architecture.startswith("gemma"):
        return FALLBACK_GEMMA
    return FALLBACK_CHATML


def _raise_exception(message: str) -> None:
    raise TemplateError(message)


class ChatTemplate:
    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = "") -> None:
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = _raise_exception
        env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        try:
            self._template = env.from_string(source)
        except TemplateError as error:
            raise ModelError(
                f"The model's chat template does not parse ({error}).",
                "Use a GGUF with a valid `tokenizer.chat_template`.",
            ) from None
        self.source = source
        self._bos = bos_token
        self._eos = eos_token
        # A turn's prompt is rendered to count it, to prefetch its start and to generate: the
        # last renders are kept (a long history's render costs milliseconds each time).
        self._kept = functools.lru_cache(maxsize=32)(self._render_kept)

    def render(
        self,
        messages: list[dict[str, Any]],
        *,
        add_generation_prompt: bool,
        enable_thinking: bool | None = None,
    ) -> str:
        key = tuple(tuple(message.items()) for message in messages)
        try:
            return self._kept(key, add_generation_prompt, enable_thinking)
        except TypeError:  # a value that cannot be a key (never in awl's own messages)
            return self._render(messages, add_generation_prompt, enable_thinking)

    def _render_kept(self, key: tuple[tuple[tuple[str, Any], ...], ...], add_generation_prompt: bool,
                     enable_thinking: bool | None) -> str:
        return self._render([dict(items) for items in key], add_generation_prompt, enable_thinking)

    def _render(self, messages: list[dict[str, Any]], add_generation_prompt: bool, enable_thinking: bool | None) -> str:
        variables: dict[str, Any] = {
            "messages": messages,
            "add_generation_prompt": add_generation_prompt,
            "bos_token": self._bos,
            "eos_token": self._eos,
        }
        if enable_thinking is not None:
            variables["enable_thinking"] = enable_thinking
        try:
            return self._template.render(**variables)
        except TemplateError as error:
            raise ModelError(
                f"The model's chat template failed to render this conversation ({error}).",
                "Report it with the model name; try another GGUF of the same model meanwhile.",
            ) from None
