"""A GGUF's chat template and tokenizer: shared by the loaded backend and by counting prompt
tokens before a load (only the vocabulary is read, so sizing the context for a benchmark file
costs a fraction of a second, not a model load)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import llama_cpp

from agentworld_local.engine.llama.logs import LOAD_LOCK, LOGS
from agentworld_local.engine.template import ChatTemplate, fallback_template
from agentworld_local.engine.types import ThinkBudget
from agentworld_local.errors import ModelError
from agentworld_local.models.gguf_file import check_gguf_path

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def token_text(llm: Any, token: int) -> str:
    if token < 0:
        return ""
    return llm.detokenize([token], special=True).decode("utf-8", errors="replace")


def chat_template(llm: Any) -> tuple[ChatTemplate, bool]:
    """(the template embedded in the GGUF, or the family's fallback; whether it was embedded)."""
    metadata = llm.metadata
    source = metadata.get("tokenizer.chat_template")
    template = ChatTemplate(
        source or fallback_template(metadata.get("general.architecture")),
        bos_token=token_text(llm, llm.token_bos()),
        eos_token=token_text(llm, llm.token_eos()),
    )
    return template, bool(source)


def tokenize(llm: Any, text: str) -> list[int]:
    """Tokens of rendered template text (special tokens parsed, no BOS added: templates write it)."""
    # A lone surrogate (damaged input) cannot be UTF-8: it becomes U+FFFD, not an exception.
    return llm.tokenize(_LONE_SURROGATE.sub("\ufffd", text).encode("utf-8"), add_bos=False, special=True)


def render_prompt(template: ChatTemplate, messages: list[dict[str, str]], think: ThinkBudget) -> str:
    """The whole prompt text of a generation: the conversation and the generation prompt."""
    return template.render(messages, add_generation_prompt=True, enable_thinking=think.mode != "off")


class PromptCounter:
    """Counts prompts in a GGUF's own tokens, as LlamaBackend.count_tokens does, without its weights."""

    def __init__(self, path: str | Path) -> None:
        file = check_gguf_path(path)
        with LOAD_LOCK:
            LOGS.clear()
            try:
                self._llm = llama_cpp.Llama(str(file), vocab_only=True, verbose=False)
            except (ValueError, RuntimeError, OSError):
                raise ModelError(f"llama.cpp could not read the vocabulary of {file.name}.",
                                 "Check the file with `awl models info`, or download it again.") from None
        self.template, _ = chat_template(self._llm)

    def count_tokens(self, messages: list[dict[str, str]], think: ThinkBudget) -> int:
        return len(tokenize(self._llm, render_prompt(self.template, messages, think)))

    def close(self) -> None:
        self._llm.close()
