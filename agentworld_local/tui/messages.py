"""Every message a worker thread sends to the screens, in one place.

Workers never touch widgets: they post these, and the screen's handlers (on the UI
thread) update the widgets. Stream messages carry the whole text so far, so a newer one
can replace an older one still in the queue (`can_replace`) without losing a token: a
fast model cannot flood the queue, the screen shows the latest state at its own pace.
"""

from __future__ import annotations

from typing import Any

from textual.message import Message

from agentworld_local.session import events
from agentworld_local.trajectory.schema import TurnRecord


class TurnBegan(Message):
    """A turn (or a regenerated turn) started with this action."""

    def __init__(self, turn: int, action: str) -> None:
        super().__init__()
        self.turn = turn
        self.action = action


class StreamUpdated(Message):
    """Thinking and observation of the running turn, as far as they have streamed."""

    def __init__(self, turn: int, thinking: str, observation: str, chunks: int, elapsed_s: float) -> None:
        super().__init__()
        self.turn = turn
        self.thinking = thinking
        self.observation = observation
        self.chunks = chunks  # thinking and answer chunks so far (one chunk: one token)
        self.elapsed_s = elapsed_s

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StreamUpdated) and message.turn == self.turn


class TurnSaved(Message):
    """The turn finished and is saved in the file."""

    def __init__(self, record: TurnRecord) -> None:
        super().__init__()
        self.record = record


class TurnStopped(Message):
    """The turn was cancelled: nothing was saved, the session is as before it."""

    def __init__(self, turn: int) -> None:
        super().__init__()
        self.turn = turn


class SessionNotice(Message):
    """A session event the screen tells the user about (a context cut, an undo)."""

    def __init__(self, event: events.SessionEvent) -> None:
        super().__init__()
        self.event = event


class WorkFinished(Message):
    """The worker is done (however it ended): input is accepted again."""


class WorkFailed(Message):
    """An error in a worker; the app's error boundary shows it."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error


class LoadProgress(Message):
    """How far the model load is (0..1)."""

    def __init__(self, fraction: float) -> None:
        super().__init__()
        self.fraction = fraction

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LoadProgress)


class ModelReady(Message):
    """The backend is loaded."""

    def __init__(self, backend: Any, model: str) -> None:
        super().__init__()
        self.backend = backend
        self.model = model


class LoadNotice(Message):
    """Something the loader wants the user to know (instead of printing to stderr)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class FileTreeReady(Message):
    """A file-system listing probed on a throwaway fork."""

    def __init__(self, tree: Any) -> None:
        super().__init__()
        self.tree = tree
