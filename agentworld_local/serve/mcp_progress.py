"""What `awl mcp` says of a turn while it streams: MCP progress notifications.

A real model's turn takes minutes, and an MCP client with a 60 s request timeout gives up on a
silent `act`. When the request carries a progressToken, serve/mcp.py sends a notification as
the turn's events arrive; this module decides which and says what they mean, without the SDK.

Only the phase is said ("thinking…", "observation…"), never the text: thinking is the
simulator's side (defaults.REVEAL_SIMULATOR_HELP), and the observation comes whole in the result.
A new phase is said at once; within a phase, at most one notification every INTERVAL_S, so a
fast stream does not flood the client. `progress` counts the turn's streamed chunks (it only
grows, as the spec asks); the total is unknown.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from agentworld_local.engine import events

#: The shortest time between two notifications of the same phase.
INTERVAL_S = 0.5

#: Which phase each streamed event belongs to (the raw answer is the observation being written).
_PHASES: dict[type[events.SessionEvent], str] = {
    events.ContextTrimmed: "reading the prompt",
    events.ThinkingDelta: "thinking",
    events.AnswerDelta: "observation",
    events.ObservationDelta: "observation",
    events.UntaggedDelta: "observation",
    events.ObservationReplaced: "observation",
}


@dataclass(frozen=True)
class Progress:
    """One notification: `progress` (grows), `message` (one line)."""

    progress: float
    message: str


class TurnProgress:
    """Turns a turn's events into the progress notifications worth sending (`update`)."""

    def __init__(self, *, interval_s: float = INTERVAL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._turn = 0
        self._chunks = 0
        self._phase = ""
        self._started = 0.0
        self._said_at: float | None = None
        self._said = -1.0  # the last progress sent: each one must be larger

    def update(self, event: events.SessionEvent) -> Progress | None:
        """The notification to send for `event` now, or None (nothing new, or too soon)."""
        now = self._clock()
        if isinstance(event, events.TurnStarted):
            self._turn, self._started = event.turn, now
            return self._say("reading the prompt", now)
        phase = _PHASES.get(type(event))
        if phase is None:
            return None
        if isinstance(event, (events.ThinkingDelta, events.AnswerDelta, events.UntaggedDelta)):
            self._chunks += 1  # the observation's own deltas repeat the answer's chunks: not counted twice
        if phase == self._phase and self._said_at is not None and now - self._said_at < self.interval_s:
            return None
        return self._say(phase, now)

    def _say(self, phase: str, now: float) -> Progress | None:
        progress = float(self._chunks)
        if progress <= self._said:
            if phase == self._phase:
                return None  # nothing streamed since the last one
            progress = self._said + 0.5  # a new phase with no new chunk yet still moves forward
        self._phase, self._said_at, self._said = phase, now, progress
        where = f"turn {self._turn}: " if self._turn else ""
        chunks = f"{self._chunks} chunk{'' if self._chunks == 1 else 's'}"
        return Progress(progress, f"{where}{phase}… ({chunks}, {now - self._started:.0f}s)")
