"""Each session's commands, in order: one mailbox per session inside the runner.

A command the runner accepted goes to the back of its session's mailbox (commands of no
session, an open, a resume, a load, a re-simulation, share one mailbox of their own, so they
run one at a time). Only the command at the front runs; the others wait there, in the order
they came, as data: a second command of a session is never refused for being second. A
cancel of the session drops what waits and stops what runs (runner.py), as llama.cpp's server
removes a cancelled task from its queues under one lock.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from agentworld_local.session.runner.outcome import Sent

#: What the user is told about each command when it is refused ("cannot undo: ...").
VERBS = {
    "load": "load a model", "open": "open a session", "resume": "resume a session", "step": "run an action",
    "regenerate": "regenerate the turn", "undo": "undo", "control": "add a control instruction",
    "fork": "fork the session", "files": "list the files", "close_session": "close the session",
    "resimulate": "re-simulate a benchmark row",
}
#: Token loops: each needs one of the model's places while it generates (scheduling.py).
NEEDS_PLACE = ("step", "regenerate", "files")
#: Why a command was cancelled, as faces tell it: a client (a person, a request) or the
#: runner closing (a server shutting down, a program quitting).
BY_CLIENT, BY_CLOSING = "client", "closing"
#: How a cancel reads in a face's words, by who cancelled.
CANCELLED_BY = {BY_CLIENT: "cancelled by a client", BY_CLOSING: "the runner is closing (a server shutting down)"}
#: The mailbox of commands that are no one session's.
NO_SESSION = ""


@dataclass(eq=False)
class Command:
    """One command the runner accepted: what it is, whose, its body, its Sent and its cancel."""

    name: str
    session: str | None
    body: Callable[[Command], None]
    sent: Sent
    #: Runs with nothing beside it (a load, an open that loads a model, a re-simulation).
    alone: bool = False
    cancel: threading.Event = field(default_factory=threading.Event)
    #: Set by a cancel too: what a command waits on besides its own work (a reward's answer).
    wake: threading.Event = field(default_factory=threading.Event)
    #: BY_CLIENT or BY_CLOSING once cancelled.
    cancelled_by: str = ""
    #: Its body runs (on a thread of its own); False while it waits.
    started: bool = False
    #: It holds one of the model's places now.
    holds_place: bool = False
    #: The mailbox it waits in: its session's when it was sent (an open learns its session later).
    box: str = field(init=False)

    def __post_init__(self) -> None:
        self.box = self.session if self.session is not None else NO_SESSION

    @property
    def needs_place(self) -> bool:
        return self.name in NEEDS_PLACE

    def stop(self, why: str) -> None:
        """Cancel it (the first reason stays: a client's cancel is not turned into a shutdown)."""
        if not self.cancelled_by:
            self.cancelled_by = why
        self.cancel.set()
        self.wake.set()


class Mailboxes:
    """Every session's mailbox. Not thread-safe: the runner holds its lock around each call."""

    def __init__(self) -> None:
        self._boxes: dict[str, deque[Command]] = {}
        self.count = 0  # commands in every mailbox, running ones included

    def post(self, command: Command) -> bool:
        """Put `command` at the back of its mailbox; True when it is at the front (it may start)."""
        box = self._boxes.setdefault(command.box, deque())
        box.append(command)
        self.count += 1
        return len(box) == 1

    def done(self, command: Command) -> Command | None:
        """`command` (the front of its mailbox) ended: the command now at the front, if any."""
        box = self._boxes[command.box]
        box.remove(command)
        self.count -= 1
        if not box:
            del self._boxes[command.box]
            return None
        return box[0]

    def take_waiting(self, session: str | None) -> list[Command]:
        """Every command that has not started, of `session` (None: of every mailbox), taken out
        of its mailbox; a mailbox keeps only its running command."""
        taken: list[Command] = []
        for key in self._keys(session):
            box = self._boxes[key]
            kept = deque(command for command in box if command.started)
            taken.extend(command for command in box if not command.started)
            self.count -= len(box) - len(kept)
            if kept:
                self._boxes[key] = kept
            else:
                del self._boxes[key]
        return taken

    def of(self, session: str | None) -> Iterator[Command]:
        """The commands of `session` (None: all), the running ones first."""
        for key in self._keys(session):
            yield from self._boxes[key]

    def _keys(self, session: str | None) -> list[str]:
        """The mailboxes of `session` (None: every one) that hold anything."""
        return list(self._boxes) if session is None else [session] if session in self._boxes else []

    def holds(self, session: str) -> int:
        """Commands of `session` in its mailbox, the running one included."""
        return len(self._boxes.get(session, ()))
