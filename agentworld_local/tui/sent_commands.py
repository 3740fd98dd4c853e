"""The commands a session screen sent and waits for (tui/session_screen.py): what each is, and
which of the session's events are its own. The runner keeps their order (each session's
mailbox); the screen only follows them to say what runs and how many wait."""

from __future__ import annotations

from agentworld_local.engine import events
from agentworld_local.session.runner.outcome import Sent

#: What the status bar says while the oldest command this screen sent runs, by its kind.
BUSY_LABELS = {"turn": "generating… (esc cancels)", "files": "listing files… (esc cancels)", "undo": "undoing…",
               "control": "adding the control…"}


class SentCommand:
    """A command this screen sent, until the screen has shown its `Ready`: its kind ("turn",
    "files", "undo", "control"), whether the agent proposed it, and what its own events said.
    Its Sent is watched on the runner's thread (each event is put there before it is emitted
    to the app), so the UI thread can tell the command's events from the session's others."""

    def __init__(self, kind: str, sent: Sent, *, agent: bool = False) -> None:
        self.kind = kind
        self.agent = agent
        self.ran = False  # its turn began: a cancel stopped it (else it was dropped while it waited)
        self.dropped = False  # cancelled before it ran: it changed nothing
        self.finished: events.TurnFinished | None = None
        self._own: set[int] = set()  # ids of its events the screen tells apart (its Sent keeps them alive)
        sent.watch(self._saw)

    def _saw(self, session: str | None, event: events.SessionEvent) -> None:
        if isinstance(event, events.TurnStarted):
            self.ran = True
        elif isinstance(event, events.TurnFinished):
            self.finished = event
        elif isinstance(event, events.Ready) and event.cancelled_by:
            self.dropped = True
        if isinstance(event, (events.Ready, events.TurnCancelled, events.Notice)):
            self._own.add(id(event))

    def owns(self, event: events.SessionEvent) -> bool:
        return id(event) in self._own

