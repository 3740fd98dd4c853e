"""The runner: one owner for a loaded model and the sessions over it (runner.py), each
session's commands in a mailbox of their own (mailbox.py), the model's places given to
waiting turns in order (scheduling.py), and what a command gives back (outcome.py)."""

from agentworld_local.session.runner.outcome import Outcome, Sent
from agentworld_local.session.runner.runner import Emit, SessionRunner
from agentworld_local.session.runner.types import NewSession, SessionView, error_event, loaded_event, session_view

__all__ = ["Emit", "NewSession", "Outcome", "Sent", "SessionRunner", "SessionView", "error_event", "loaded_event",
           "session_view"]
