"""Render conversations with the chat template embedded in the GGUF (Jinja, sandboxed)."""

from __future__ import annotations

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

    def render(
        self,
        messages: list[dict[str, Any]],
        *,
        add_generation_prompt: bool,
        enable_thinking: bool | None = None,
    ) -> str:
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
