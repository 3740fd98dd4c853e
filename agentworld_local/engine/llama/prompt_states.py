"""System-prompt states kept in memory: the next session of this process starts from one.

The disk cache (state_cache.py) serves the next process; within one process (a long-lived
`awl serve`, a vector env, `awl bench predict`) reading a state back from disk and checking its
CRC-32 costs more than the few tokens a warm turn evaluates. This keeps the last states the
backend stored or loaded as llama.cpp's bytes (ctypes buffers, never Python bytes), the least
recently used dropped first to stay within a byte budget. Only the backend that made them
reads them: their layout is the loaded context's, so no key is needed beyond the tokens.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# The default budget (the memory plan counts it): a real model's system-prompt state is a few
# hundred MB, the fixtures' and Gemma 270M's tens of MB; it keeps the prompts of the domains
# one process runs together.
from agentworld_local.models.memory import PROMPT_STATE_BUDGET


@dataclass(frozen=True)
class HeldState:
    tokens: tuple[int, ...]
    buffer: Any  # a ctypes array: llama.cpp's whole-sequence state after `tokens`
    #: Whether the disk cache has it too (a first turn's start other than the process's first is
    #: written once a second session uses it: PromptStates.write_first_start).
    on_disk: bool = True

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    @property
    def size(self) -> int:
        return len(self.buffer)


class PromptStates:
    """The states held, by their tokens, within `budget` bytes (0: none are kept)."""

    def __init__(self, budget: int = PROMPT_STATE_BUDGET) -> None:
        self.budget = budget
        self._held: OrderedDict[tuple[int, ...], HeldState] = OrderedDict()
        self._lock = threading.Lock()
        self._first_start_written = False

    def write_first_start(self) -> bool:
        """Whether a first turn's start just evaluated goes to disk at once: only the first one
        this process evaluates. The next process most likely starts the same way (`awl run`
        again, a restarted server or trainer), and its first turn then evaluates only the
        action's tokens, as llama-server's next request does; later ones go to disk once a second
        session of this process starts with them, so RL episodes of distinct tasks write one
        file a process, not one each."""
        with self._lock:
            first, self._first_start_written = not self._first_start_written, True
            return first

    def lookup(self, tokens: Sequence[int], *, longer_than: int = 0, limit: int | None = None) -> HeldState | None:
        """The state of the longest prefix of `tokens` held, longer than `longer_than` tokens and
        at most `limit` of them; it becomes the most recently used."""
        limit = len(tokens) if limit is None else min(limit, len(tokens))
        with self._lock:
            best = None
            for key, held in self._held.items():
                n = len(key)
                if longer_than < n <= limit and (best is None or n > best.n_tokens) and tuple(tokens[:n]) == key:
                    best = held
            if best is not None:
                self._held.move_to_end(best.tokens)
            return best

    def keep(self, tokens: Sequence[int], buffer: Any, *, on_disk: bool = True) -> None:
        """Hold `buffer` as the state after `tokens`; older states go until the budget holds."""
        if buffer is None or len(buffer) > self.budget:
            return
        key = tuple(tokens)
        with self._lock:
            self._held[key] = HeldState(key, buffer, on_disk)
            self._held.move_to_end(key)
            while sum(held.size for held in self._held.values()) > self.budget:
                self._held.popitem(last=False)

    def discard(self, held: HeldState) -> None:
        with self._lock:
            self._held.pop(held.tokens, None)

    @property
    def bytes(self) -> int:
        with self._lock:
            return sum(held.size for held in self._held.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)
