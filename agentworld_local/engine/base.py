"""The seam between a World and whatever produces the model's answers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Protocol

from agentworld_local.engine.types import GenerationEvent, ModelInfo, SamplingConfig, ServerStatus, ThinkBudget


class Backend(Protocol):
    """What the World, the runner and the benchmark use of a model, each capability declared
    here (a backend that has nothing to do for one says so: `prefetch` evaluates nothing)."""

    info: ModelInfo
    #: Turns (generations) it runs at once, >= 1: a llama model's sequences, a server's own
    #: count or the user's `--parallel`. The runner schedules sessions' turns against it.
    parallel: int
    #: Whether the runner evaluates a session's next turn start while the user types
    #: (`prefetch` between turns): a GGUF here, unless `--no-prefetch`.
    idle_prefetch: bool
    #: Keep a checkpoint where the system message ends (`awl bench predict` turns it on: the
    #: trajectories of a benchmark file share system prompts); only a GGUF here has checkpoints.
    checkpoint_system_prompt: bool
    #: Whether `count_tokens` is the model's own tokenizer (a GGUF here); False where it is an
    #: estimate (a server tokenizes; its answers' counts come from its `usage`).
    counts_exactly: bool
    #: A server's: whether its answers so far came with thinking in a field of their own (a
    #: reasoning parser), which the benchmark's `gen` text depends on; None for a model whose
    #: raw text awl reads itself.
    server_separates: bool | None

    def prefetch(self, messages: list[dict[str, str]], *, cancel: threading.Event | None = None,
                 waits: bool = False) -> int:
        """Evaluate `messages` (a turn's known start) ahead of its generate; the tokens it
        evaluated. `waits`: a turn's own, which waits for a free sequence (the runner's
        between turns does not). 0 where there is nothing to evaluate ahead (a server keeps
        its own prefix cache; a scripted backend has no context)."""
        ...

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
        repetition. A BackendNotice before it says what the backend did for the turn (a fleet
        that ran it again on another server: the text streamed so far starts again). One generation at a time: a second call while one is in flight (not
        finished nor closed) raises BackendBusy before it reaches the model
        (engine/guard.py).
        """
        ...

    def count_tokens(self, messages: list[dict[str, str]], think: ThinkBudget) -> int:
        """Tokens `messages` take as the prompt of a generation (generation prompt included),
        so the World can decide what fits in the context before it sends them."""
        ...

    def servers(self) -> list[ServerStatus]:
        """The servers its turns go to, each with its sessions, turns running and whether it is
        up (what `/health` and `awl serve` show): one for a server, a fleet's several
        (engine/remote/fleet.py), none for a model in this process."""
        ...

    def close(self) -> None: ...
