"""The seam between a World and whatever produces the model's answers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Protocol

from agentworld_local.engine.types import GenerationEvent, ModelInfo, SamplingConfig, ThinkBudget


class Backend(Protocol):
    info: ModelInfo

    def generate(
        self,
        messages: list[dict[str, str]],
        *,
        sampling: SamplingConfig,
        think: ThinkBudget,
        seed: int,
        cancel: threading.Event | None = None,
    ) -> Iterator[GenerationEvent]:
        """Stream the answer to `messages`; the last message is the current user turn."""
        ...

    def close(self) -> None: ...
