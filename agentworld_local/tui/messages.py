"""How the runner's events reach the screens, in one place.

The runner (session/runner/runner.py) owns the model and the sessions and emits events on its own
thread; `FrameEventPoster` is its emit for the app. It never touches a widget: it posts
messages, and the handlers (on the UI thread, in order) update the widgets. The stream of
a turn is merged into `StreamUpdated`, which carries the whole text so far, so a newer one
can replace an older one still in the queue (`can_replace`) without losing a token: a fast
model cannot flood the queue, the screen shows the latest state at its own pace.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from textual.message import Message

from agentworld_local.engine import events

#: The shortest time between two stream updates (about one frame at 60 Hz).
FRAME_S = 1 / 60


class RunnerEvent(Message):
    """One event of the runner, for the session `session` (None: the runner itself)."""

    def __init__(self, session: str | None, event: events.SessionEvent) -> None:
        super().__init__()
        self.session = session
        self.event = event

    def can_replace(self, message: Message) -> bool:
        """A newer load progress replaces an older one still in the queue; nothing else merges."""
        return (isinstance(message, RunnerEvent) and isinstance(self.event, events.LoadProgress)
                and isinstance(message.event, events.LoadProgress))


class StreamUpdated(Message):
    """Thinking and observation of the running turn, as far as they have streamed; `untagged`:
    the answer's text while no observation block has opened (small models write none)."""

    def __init__(self, session: str | None, turn: int, thinking: str, observation: str, untagged: str, chunks: int,
                 elapsed_s: float) -> None:
        super().__init__()
        self.session = session
        self.turn = turn
        self.thinking = thinking
        self.observation = observation
        self.untagged = untagged
        self.chunks = chunks  # thinking and answer chunks so far (one chunk: one token)
        self.elapsed_s = elapsed_s

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StreamUpdated) and message.session == self.session and message.turn == self.turn


class FrameEventPoster:
    """The runner's emit for the app (called on the runner's thread): stream events merged
    into at most one StreamUpdated a frame, every other event posted as it is. The app calls
    `flush` on a timer too, so the text that came last before the model paused is shown."""

    def __init__(self, post: Any) -> None:
        self._post = post
        self._lock = threading.Lock()  # the runner's thread and the app's timer both flush
        self._reset(None, 0)

    def _reset(self, session: str | None, turn: int) -> None:
        self._session, self._turn = session, turn
        self._thinking = self._observation = self._untagged = ""
        self._chunks = 0
        self._started = self._posted = time.monotonic()
        self._pending = False

    def __call__(self, session: str | None, event: events.SessionEvent) -> None:
        with self._lock:
            self._take(session, event)

    def _take(self, session: str | None, event: events.SessionEvent) -> None:
        if isinstance(event, events.ThinkingDelta):
            self._thinking += event.text
            self._chunks += 1
        elif isinstance(event, events.AnswerDelta):
            self._chunks += 1
        elif isinstance(event, events.UntaggedDelta):
            self._untagged += event.text
        elif isinstance(event, events.ObservationDelta):
            self._observation += event.text
        elif isinstance(event, events.ObservationReplaced):
            self._observation = event.text
        else:
            self._flush()
            if isinstance(event, events.TurnStarted):
                self._reset(session, event.turn)
            self._post(RunnerEvent(session, event))
            return
        self._pending = True
        # At most one update a frame: a queue that never empties would starve the repaint
        # (a fast model posts thousands a second); can_replace merges the rest.
        if time.monotonic() - self._posted >= FRAME_S:
            self._flush()

    def flush(self) -> None:
        """Post what streamed since the last update (the app's timer, on the UI thread)."""
        with self._lock:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            now = time.monotonic()
            self._post(StreamUpdated(self._session, self._turn, self._thinking, self._observation, self._untagged,
                                     self._chunks, now - self._started))
            self._posted, self._pending = now, False
