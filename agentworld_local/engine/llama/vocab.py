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
    """Tokens of rendered template text (special tokens parsed, no BOS added: templates write it).

    Into a buffer sized by the text: llama-cpp-python's own allocates (and zeroes) one of the
    model's training context per call, 1 MB for a 262k-token model, several times a turn."""
    # A lone surrogate (damaged input) cannot be UTF-8: it becomes U+FFFD, not an exception.
    data = _LONE_SURROGATE.sub("\ufffd", text).encode("utf-8")
    model_vocab = llama_cpp.llama_model_get_vocab(llm.model)
    # Each token holds at least one byte of the text; the slack is SentencePiece's added space.
    room = len(data) + 8
    while True:
        buffer = (llama_cpp.llama_token * room)()
        count = llama_cpp.llama_tokenize(model_vocab, data, len(data), buffer, room, False, True)
        if count >= 0:
            return buffer[:count]
        room = -count  # llama.cpp says how many it needs


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
