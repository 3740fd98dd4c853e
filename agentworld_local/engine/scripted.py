"""A backend that streams answers written in advance, the way a real model streams them.

Random-weight test models never write `<think>`, `<predicted_observation>` or the
observation marker; the real model does on every turn. `ScriptedBackend` plays given raw
answers through the same events as the llama backend (ThinkingChunk / AnswerChunk under
the same per-token rules, engine/answer_rules.py, then GenerationDone with realistic
stats), so every face (CLI, TUI, server) can be tested on the answers users really get.
One chunk stands for one sampled token.

Behaviour, as with the llama backend and a Qwen3.5 chat template:
- answers are used in order, one per `generate` call, starting again at the first after
  the last;
- `raw` is what the model writes, its `<think>` opening included. When thinking is on and
  the raw answer starts with `<think>`, the generation prompt is the one that opened it
  (`think_open`), so the stream starts inside thinking; with `--think off` the prompt
  closes an empty think block and the model writes only the answer after `</think>`; a
  raw answer without `<think>` is streamed as written;
- a thinking budget of N ends thinking after N thinking chunks, writing the same forced
  `</think>` as the llama backend; the stream then goes on with the text after the
  answer's own `</think>`;
- `max_tokens` answer chunks (every chunk, thinking included, with
  `max_tokens_counts_thinking`) end the turn with `finish = "length"`; the first
  `</predicted_observation>` after thinking ends it with `stop` (unless
  `stop_at_observation` is off); a degenerate loop ends it with `repetition` (unless
  `repetition_guard` is off); `cancel` is honoured between chunks; a second generation
  while one is in flight is refused (BackendBusy), as on llama.cpp.

Answer file (`awl run --model scripted:FILE`), UTF-8 JSON:

    {"version": 1,
     "answers": [
       {"raw": "<think>\\nls on an empty dir\\n</think>\\n<predicted_observation>\\ntotal 0\\n</predicted_observation>",
        "chunk": 3},
       {"raw": "<predicted_observation>\\n/app\\n</predicted_observation>", "splits": [5, 9]},
       {"raw": "<predicted_observation>\\npartial", "finish": "length"}
     ]}

Per answer: `raw` (required); `chunk`, the chunk size in characters (default 4), or
`splits`, explicit split points as character offsets into `raw` (ascending); `finish`,
how the model ended when `raw` runs out: `stop` (default, end of turn) or `length` (it
ran out of tokens). At the top, `delay_s` (optional): a pause after each chunk, in seconds,
for a model as slow as a real one on a CPU (demos, and tests of what a long turn meets).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld_local.contract.parse import THINK_CLOSE, THINK_OPEN
from agentworld_local.defaults import DEFAULT_CTX
from agentworld_local.engine.context_window import overflow_hint
from agentworld_local.engine.guard import GenerationGuard
from agentworld_local.engine.answer_rules import AnswerRules
from agentworld_local.engine.types import (
    GenerationDone,
    GenerationEvent,
    GenerationStats,
    ModelInfo,
    SamplingConfig,
    ThinkBudget,
)
from agentworld_local.errors import AwlError, InputError
from agentworld_local.files import read_text
from agentworld_local.safe_parse import SyntaxProblem, load_json

DEFAULT_CHUNK = 4
ANSWER_FILE_VERSION = 1
_FINISHES = ("stop", "length")
#: Answer files are hand-written; a few MB is already far more than any test needs.
_FILE_LIMIT = 16 * 1024 * 1024


@dataclass(frozen=True)
class ScriptedAnswer:
    """One raw answer and how it is cut into chunks (one chunk = one token)."""

    raw: str
    chunk: int = DEFAULT_CHUNK
    #: Explicit split points (offsets into `raw`); when given, `chunk` is not used.
    splits: tuple[int, ...] | None = None
    #: How the model ended when `raw` ran out: "stop" or "length".
    finish: str = "stop"

    def __post_init__(self) -> None:
        if self.chunk < 1:
            raise InputError(f"A chunk size must be at least 1, not {self.chunk}.", "Use `\"chunk\": 1` or more.")
        if self.finish not in _FINISHES:
            raise InputError(f"Unknown finish `{self.finish}`.", "Use `stop` or `length`.")
        if self.splits is not None and list(self.splits) != sorted(set(self.splits)):
            raise InputError("Split points must be ascending and distinct.", "Sort them, e.g. `\"splits\": [3, 10]`.")

    def pieces(self, start: int) -> list[str]:
        """`raw[start:]` cut into chunks (split points stay where they are in `raw`)."""
        if self.splits is None:
            return [self.raw[i : i + self.chunk] for i in range(start, len(self.raw), self.chunk)]
        bounds = [start, *(p for p in self.splits if start < p < len(self.raw)), len(self.raw)]
        return [self.raw[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


def model_text_start(raw: str, *, thinking_prompt: bool) -> tuple[bool, int]:
    """(think_open, offset): where in `raw` the model's own text starts after the prompt.

    With a thinking prompt (Qwen3.5, thinking on) the prompt wrote `<think>\\n`; with
    thinking off it wrote an empty think block, so the model starts after `</think>`.
    """
    stripped = len(raw) - len(raw.lstrip())
    if not raw.startswith(THINK_OPEN, stripped):
        return False, 0
    after_open = stripped + len(THINK_OPEN)
    if thinking_prompt:
        return True, after_open + (1 if raw.startswith("\n", after_open) else 0)
    close = raw.find(THINK_CLOSE, after_open)
    start = after_open if close == -1 else close + len(THINK_CLOSE)
    return False, len(raw) - len(raw[start:].lstrip())


def _estimate_tokens(text: str) -> int:
    """About four characters a token, as for English with a large vocabulary."""
    return max(1, len(text) // 4)


def _message_tokens(message: dict[str, str]) -> int:
    return 4 + _estimate_tokens(message.get("content", ""))


def _prompt_total(messages: list[dict[str, str]]) -> int:
    return sum(_message_tokens(m) for m in messages) + 3  # + the generation prompt


class ScriptedBackend:
    """Streams scripted raw answers through the llama backend's events."""

    def __init__(
        self,
        answers: Sequence[ScriptedAnswer | str],
        *,
        name: str = "scripted",
        path: str | None = None,
        n_ctx: int = DEFAULT_CTX,
        template_thinks: bool = True,
        stop_after_observation: bool = True,
        delay_s: float = 0.0,
        sha256: str | None = None,
        parallel: int = 1,
    ) -> None:
        """`parallel`: generations at once, one per session view (`for_session`), as a llama
        model's slots; 1 (the default) is one generation at a time, as on llama.cpp.
        `stop_after_observation`: end at the first closed block when the sampling asks for it,
        as the llama backend does (False lets a test stream answers with several blocks to the
        end whatever the sampling says). `delay_s`: a pause
        before each chunk, for tests that cancel or watch a turn in progress."""
        if not answers:
            raise InputError("A scripted backend needs at least one answer.", "Give one raw answer or more.")
        self.answers = [a if isinstance(a, ScriptedAnswer) else ScriptedAnswer(a) for a in answers]
        self.stop_after_observation = stop_after_observation
        self.delay_s = delay_s
        self.parallel = max(1, parallel)
        self.calls = 0
        self._calls_lock = threading.Lock()
        self.last_messages: list[dict[str, str]] = []
        self._guard = GenerationGuard()
        self._context: list[dict[str, str]] = []  # the conversation in the (simulated) context
        self.info = ModelInfo(
            name=name,
            path=path,
            architecture="qwen35moe",
            file_size=None,
            sha256=sha256,
            sha256_scope="file" if sha256 else "none",
            n_ctx=n_ctx,
            gpu_layers=0,
            chat_template_source="gguf",
            template_thinks=template_thinks,
        )

    @classmethod
    def from_file(cls, path: str | Path, **options: Any) -> "ScriptedBackend":
        """Read an answer file (format in the module docstring)."""
        text = read_text(path, "scripted answer file", limit=_FILE_LIMIT)
        try:
            data = load_json(text)
        except SyntaxProblem as problem:
            raise InputError(
                f"The scripted answer file {path} is not valid JSON: {problem.reason}.",
                "Fix the file; its format is described in `agentworld_local/engine/scripted.py`.",
            ) from None
        answers = parse_answer_file(data, str(path))
        delay = data.get("delay_s", 0.0)
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay <= 60:
            raise InputError(f"The scripted answer file {path} has delay_s {delay!r}; give seconds from 0 to 60.",
                             "Fix the file; its format is described in `agentworld_local/engine/scripted.py`.")
        options.setdefault("delay_s", float(delay))
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        options.setdefault("name", f"scripted:{Path(path).name}")
        # Absolute: the header records it, and a resume finds it from any directory.
        return cls(answers, path=str(Path(path).absolute()), sha256=digest, **options)

    # -- the Backend protocol -------------------------------------------------------

    #: Nothing to evaluate ahead (Backend.prefetch), no checkpoints.
    idle_prefetch = False
    checkpoint_system_prompt = False
    #: Its counts are the model's own (the scripted model has no other tokenizer); raw text.
    counts_exactly = True
    server_separates = None

    def prefetch(self, messages: list[dict[str, str]], *, cancel: threading.Event | None = None,
                 waits: bool = False) -> int:
        return 0

    def for_session(self) -> ScriptedBackend:
        """With parallel 1 the backend itself (one generation at a time); else a view with a
        guard of its own that streams from the same answers."""
        return self if self.parallel == 1 else _ScriptedView(self)

    def generate(
        self,
        messages: list[dict[str, str]],
        *,
        sampling: SamplingConfig,
        think: ThinkBudget,
        seed: int,
        cancel: threading.Event | None = None,
    ) -> Iterator[GenerationEvent]:
        with self._guard.hold():
            yield from self._generate(messages, sampling, think, cancel)

    def count_tokens(self, messages: list[dict[str, str]], think: ThinkBudget) -> int:
        """The estimate `generate` reports as `prompt_tokens_total`."""
        return _prompt_total(messages)

    def servers(self) -> list:
        """None: the answers are written in advance, no server runs them (Backend.servers)."""
        return []

    def close(self) -> None:
        pass

    # -- how one answer streams -----------------------------------------------------

    def _prompt_stats(self, messages: list[dict[str, str]]) -> GenerationStats:
        """Token counts as the append-only context has them: only new messages are evaluated."""
        common = 0
        while common < min(len(messages), len(self._context)) and messages[common] == self._context[common]:
            common += 1
        total = _prompt_total(messages)
        if total + 8 > self.info.n_ctx:
            raise AwlError(
                f"The conversation needs {total} tokens but the context holds {self.info.n_ctx}.",
                overflow_hint(messages),  # turn 1 has no earlier turn to fork at
            )
        evaluated = sum(_message_tokens(m) for m in messages[common:]) + 3
        self._context = list(messages)
        return GenerationStats(prompt_tokens_total=total, prompt_tokens_evaluated=evaluated, restore_s=0.0002)

    def _generate(
        self,
        messages: list[dict[str, str]],
        sampling: SamplingConfig,
        think: ThinkBudget,
        cancel: threading.Event | None,
    ) -> Iterator[GenerationEvent]:
        started = time.perf_counter()
        with self._calls_lock:  # views of several sessions take answers at once
            answer = self.answers[self.calls % len(self.answers)]
            self.calls += 1
        self.last_messages = [dict(m) for m in messages]
        stats = self._prompt_stats(messages)
        stats.prompt_s = time.perf_counter() - started
        if cancel is not None and cancel.is_set():
            stats.finish = "cancelled"
            yield GenerationDone(raw_output="", think_open=False, stats=stats)
            return
        if self.info.template_thinks:
            think_open, offset = model_text_start(answer.raw, thinking_prompt=think.mode != "off")
        else:  # a template that knows nothing of thinking: the model writes `<think>` itself
            think_open, offset = False, 0
        pieces = answer.pieces(offset)
        rules = AnswerRules(
            think_open=think_open, think=think, sampling=sampling, stats=stats,
            stop_after_observation=self.stop_after_observation,
        )
        stats.finish = answer.finish
        generating = time.perf_counter()
        index = 0
        while index < len(pieces):
            if self.delay_s:
                time.sleep(self.delay_s)
            if cancel is not None and cancel.is_set():
                stats.finish = "cancelled"
                break
            if stats.prompt_tokens_total + stats.generated_tokens >= self.info.n_ctx:
                stats.finish = "length"
                break
            yield from rules.feed(pieces[index])
            index += 1
            if rules.finish:
                stats.finish = rules.finish
                break
            if rules.budget_spent:
                yield from rules.end_thinking()
                # The model goes on to the answer: what it wrote after its own `</think>`.
                close = answer.raw.find(THINK_CLOSE, offset)
                rest = len(answer.raw) if close == -1 else close + len(THINK_CLOSE)
                rest = len(answer.raw) - len(answer.raw[rest:].lstrip())
                pieces, index = answer.pieces(rest), 0
        yield from rules.flush()
        stats.generate_s = max(time.perf_counter() - generating, 1e-6)
        yield GenerationDone(raw_output="".join(rules.raw), think_open=think_open, stats=stats)


class _ScriptedView:
    """One session's view of a ScriptedBackend with parallel > 1: its own guard, the
    backend's answers and counters (everything else is the backend's)."""

    def __init__(self, backend: ScriptedBackend) -> None:
        self.backend = backend
        self._guard = GenerationGuard()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    def for_session(self) -> _ScriptedView:
        return self.backend.for_session()

    def generate(self, messages: list[dict[str, str]], *, sampling: SamplingConfig, think: ThinkBudget,
                 seed: int, cancel: threading.Event | None = None) -> Iterator[GenerationEvent]:
        with self._guard.hold():
            yield from self.backend._generate(messages, sampling, think, cancel)

    def close(self) -> None:
        pass  # the runner owns the backend


def parse_answer_file(data: Any, source: str) -> list[ScriptedAnswer]:
    """The answers of a parsed answer file; InputError naming the entry that is wrong."""
    fix = "Fix the file; its format is described in `agentworld_local/engine/scripted.py`."
    if not isinstance(data, dict) or not isinstance(data.get("answers"), list):
        raise InputError(f"The scripted answer file {source} needs an object with an `answers` list.", fix)
    if data.get("version", ANSWER_FILE_VERSION) != ANSWER_FILE_VERSION:
        raise InputError(
            f"The scripted answer file {source} has version {data.get('version')!r}; this awl reads version 1.", fix
        )
    if not data["answers"]:
        raise InputError(f"The scripted answer file {source} has no answers.", "Add at least one answer.")
    answers = []
    for number, entry in enumerate(data["answers"], start=1):
        where = f"answer {number} of {source}"
        if isinstance(entry, str):
            entry = {"raw": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("raw"), str):
            raise InputError(f"The {where} needs a `raw` text.", fix)
        unknown = sorted(set(entry) - {"raw", "chunk", "splits", "finish"})
        if unknown:
            raise InputError(f"The {where} has unknown fields: {', '.join(unknown)}.", "Use raw, chunk, splits and finish.")
        chunk = entry.get("chunk", DEFAULT_CHUNK)
        if type(chunk) is not int or chunk < 1:
            raise InputError(f"The {where} has chunk {chunk!r}; it must be a whole number of at least 1.", fix)
        splits = entry.get("splits")
        if splits is not None and (
            not isinstance(splits, list) or not all(type(p) is int and p >= 0 for p in splits)
        ):
            raise InputError(f"The {where} has `splits` that are not a list of offsets (whole numbers).", fix)
        finish = entry.get("finish", "stop")
        if finish not in _FINISHES:
            raise InputError(f"The {where} has finish {finish!r}.", "Use `stop` or `length`.")
        try:
            answers.append(ScriptedAnswer(entry["raw"], chunk, tuple(splits) if splits is not None else None, finish))
        except InputError as problem:
            raise InputError(f"The {where}: {problem.message}", problem.hint) from None
    return answers
