"""Engine vocabulary shared by every backend and the World: settings and events."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from agentworld_local.defaults import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_MIN_P,
    DEFAULT_TEMPERATURE,
    DEFAULT_THINK_TOKENS,
    DEFAULT_TOP_K,
    MAX_THINK_TOKENS,
    DEFAULT_TOP_P,
)
from agentworld_local.errors import InputError


@dataclass(frozen=True)
class SamplingConfig:
    """The model card's recommended sampling, and when a generation ends.

    The defaults are an interactive session's: `max_tokens` caps the answer after thinking,
    the turn ends at the first closed observation block, and a degenerate loop ends it. The
    benchmark commands turn all three around, as the official evaluation generates
    (agentworldbench/predict.py, BENCH_SAMPLING).
    """

    temperature: float = DEFAULT_TEMPERATURE
    top_p: float = DEFAULT_TOP_P
    top_k: int = DEFAULT_TOP_K
    min_p: float = DEFAULT_MIN_P
    max_tokens: int = DEFAULT_MAX_TOKENS
    #: True: `max_tokens` counts every new token, thinking included (an API's `max_tokens`).
    max_tokens_counts_thinking: bool = False
    #: End the turn at the first `</predicted_observation>` after thinking (False: to the end of the turn).
    stop_at_observation: bool = True
    #: End the turn when the text falls into a degenerate loop (engine/repetition.py).
    repetition_guard: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ThinkBudget:
    """`off`: empty think block; `budget`: end thinking after `tokens`; `full`: the model decides."""

    mode: Literal["off", "budget", "full"]
    tokens: int | None = None

    @classmethod
    def parse(cls, value: str | int | None) -> "ThinkBudget":
        if value is None:
            return cls("budget", DEFAULT_THINK_TOKENS)
        text = str(value).strip().lower()
        if text in ("off", "0", "none", "no"):
            return cls("off")
        if text in ("full", "unlimited", "on"):
            return cls("full")
        if text.isascii() and text.isdigit():  # int() takes `²` and 5,000 digits badly
            if len(text.lstrip("0")) <= len(str(MAX_THINK_TOKENS)):
                return cls("budget", int(text))
            shown = text if len(text) <= 20 else f"{text[:20]}… ({len(text):,} digits)"
            raise InputError(f"The thinking budget {shown} is too large: at most {MAX_THINK_TOKENS:,} tokens.",
                             "Use `--think full` to let the model think as long as it wants, or a smaller number.")
        raise InputError(
            f"Invalid thinking budget `{value}`.",
            "Use `--think off`, `--think full`, or a number of tokens such as `--think 512`.",
        )

    def label(self) -> str:
        return str(self.tokens) if self.mode == "budget" else self.mode


@dataclass(frozen=True)
class ThinkingChunk:
    """Thinking text as a backend generates it (the World tells it as a ThinkingDelta event)."""

    text: str


@dataclass(frozen=True)
class AnswerChunk:
    """Raw answer text after thinking (tags included); the World turns it into observation text."""

    text: str


#: The turn record's token counts a backend may only estimate.
ESTIMABLE = frozenset({"prompt_total", "prompt_evaluated", "thinking", "generated"})


@dataclass
class GenerationStats:
    prompt_tokens_total: int = 0
    prompt_tokens_evaluated: int = 0
    thinking_tokens: int = 0
    generated_tokens: int = 0
    prompt_s: float = 0.0
    generate_s: float = 0.0
    restore_s: float = 0.0
    #: Prompt-lookup draft tokens verified, and those the sampler accepted (engine/llama/speculation.py).
    drafted: int = 0
    accepted: int = 0
    #: stop | length (max_tokens or the context ran out) | cancelled | repetition (a degenerate loop)
    finish: str = "stop"
    #: The thinking budget ended the thinking (the model had not closed it): AnswerRules.end_thinking.
    thinking_cut: bool = False
    #: The counts above that are awl's estimates, not a tokenizer's or the server's (a server
    #: that did not report them), named as the turn record's tokens name them (ESTIMABLE).
    estimated: frozenset[str] = frozenset()

    @property
    def tokens_per_s(self) -> float:
        return self.generated_tokens / self.generate_s if self.generate_s > 0 else 0.0


@dataclass(frozen=True)
class GenerationDone:
    raw_output: str
    #: True when the prompt itself opened `<think>`, so raw_output starts inside thinking.
    think_open: bool
    stats: GenerationStats = field(default_factory=GenerationStats)


@dataclass(frozen=True)
class BackendNotice:
    """Something the backend did for this turn that the user should know (a fleet moved the
    session to another server and ran the turn again there): the World says it as a Notice
    and keeps it in the turn's record (`extra["notices"]`)."""

    text: str


GenerationEvent = ThinkingChunk | AnswerChunk | BackendNotice | GenerationDone


@dataclass(frozen=True)
class ServerStatus:
    """One server a backend sends turns to (Backend.servers), as `/health` and `awl serve` show it."""

    endpoint: str
    #: Whether turns go to it now (False: it stopped answering; tried again after `retry_in_s`).
    up: bool
    #: Sessions placed on it (each session's turns all go to its server).
    sessions: int
    #: Turns running on it now, and the most it takes at once.
    running: int
    parallel: int
    #: Times it stopped answering, and why the last time (None while it answers).
    failures: int = 0
    error: str | None = None
    #: A down server is tried again when a session is placed or moved after this many seconds.
    retry_in_s: float | None = None


@dataclass(frozen=True)
class ModelInfo:
    name: str
    path: str | None
    architecture: str | None
    file_size: int | None
    sha256: str | None
    sha256_scope: str
    n_ctx: int
    gpu_layers: int
    chat_template_source: str  # "gguf", or "fallback" when the file carries no template
    #: The chat template handles thinking (`<think>` or `enable_thinking`): `--think` has an effect.
    template_thinks: bool = False
    #: What produces the answers: "llama.cpp" in this process, "openai" (a remote server), "scripted".
    backend: str = "llama.cpp"
    #: A remote server's API root, without credentials (None in this process).
    endpoint: str | None = None
    #: How llama.cpp in this process ran the model (None where it did not say, or elsewhere):
    #: flash attention on or off, the KV cache's type, and the layers whose routed experts were
    #: kept in RAM (-1: every layer's, --cpu-moe; 0: none).
    flash_attention: bool | None = None
    kv_type: str | None = None
    cpu_moe: int | None = None
