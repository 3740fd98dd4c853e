"""The seam between a World and whatever produces the model's answers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Protocol

from agentworld_local.engine.types import GenerationEvent, ModelInfo, SamplingConfig, ThinkBudget


class Backend(Protocol):
    """Optional beyond these: `prefetch(messages, *, cancel=None) -> int` evaluates the next
    turn's prompt up to its action ahead of time (LlamaBackend; the World and the runner call
    it where a backend has it: a scripted or remote backend has nothing to evaluate ahead)."""

    info: ModelInfo
    #: Turns (generations) it runs at once, >= 1: a llama model's session slots, a server's
    #: own count or the user's `--parallel`. The runner schedules sessions' turns against it.
    parallel: int

    def for_session(self) -> Backend:
        """One session's view of the model: its own generation guard and close (closing it
        frees only what the session held: never the model, the connection or other views).
        The World generates through it; with `parallel` 1 it may be the backend itself."""
        ...

    def generate(
        self,
        messages: list[dict[str, str]],
        *,
        sampling: SamplingConfig,
        think: ThinkBudget,
        seed: int,
        cancel: threading.Event | None = None,
    ) -> Iterator[GenerationEvent]:
        """Stream the answer to `messages`; the last message is the current user turn.

        Ends with one GenerationDone whose `stats.finish` is stop, length, cancelled or
        repetition. One generation at a time: a second call while one is in flight (not
        finished nor closed) raises BackendBusy before it reaches the model
        (engine/guard.py).
        """
        ...

    def count_tokens(self, messages: list[dict[str, str]], think: ThinkBudget) -> int:
        """Tokens `messages` take as the prompt of a generation (generation prompt included),
        so the World can decide what fits in the context before it sends them."""
        ...

    def close(self) -> None: ...
