"""Which running command keeps which new one out, and the words of a refusal (the rules in
session/runner.py's doc): a session takes one command at a time, a load runs alone, sessions
open one at a time; commands of other sessions are never kept out. `Command` is one the
runner accepted."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentworld_local.session.sent import Sent

#: What the user is told about each command when it is refused ("cannot undo while ...").
VERBS = {
    "load": "load a model", "open": "open a session", "resume": "resume a session", "step": "run an action",
    "regenerate": "regenerate the turn", "undo": "undo", "control": "add a control instruction",
    "fork": "fork the session", "files": "list the files", "close_session": "close the session",
    "resimulate": "re-simulate a benchmark row",
}
#: Commands that are no session's (a load, or one that makes a session).
GLOBAL = ("load", "open", "resume", "resimulate")
#: What a running command is called in a refusal.
RUNNING = {
    "load": "the model loads", "open": "a session opens", "resume": "a session opens", "step": "a turn runs",
    "regenerate": "a turn runs", "files": "the file list is read", "fork": "the session forks",
    "resimulate": "a benchmark row is predicted",
}


def excludes(running: Any, name: str, session: str | None, alone: bool) -> bool:
    """Whether `running` keeps a command `name` for `session` out. A command that runs `alone`
    (a load, an open or a resume that loads a model, a re-simulation, which generates outside
    the turns' schedule) keeps everything out and waits for everything; opening and resuming
    run one at a time; a session's command keeps that session's out. Commands of other
    sessions, and opening beside them, never keep each other out."""
    if alone or running.alone:
        return True
    if name in GLOBAL:
        return running.name in GLOBAL
    return running.session == session


#: Commands that run to their end once started (no token loop to stop in): a cancel that
#: comes before they start skips them.
UNSTOPPABLE = ("undo", "control", "fork", "close_session")
#: Token loops: each runs on a thread of its own, scheduled against the backend's `parallel`.
SIDE_BY_SIDE = ("step", "regenerate", "files")


@dataclass
class Command:
    """One command the runner accepted: what it is, whose, its body, its Sent and its cancel."""

    name: str
    session: str | None
    body: Callable[[Command], None]
    sent: Sent
    alone: bool = False  # runs with nothing beside it (see admission.excludes)
    cancel: threading.Event = field(default_factory=threading.Event)
