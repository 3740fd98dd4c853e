"""Test support shipped with the package: the scripted backend and realistic raw answers.

Used by the tests of every face (CLI, TUI, server); nothing here loads a model.
"""

from typing import Any

from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend

__all__ = ["LentBackend", "ScriptedAnswer", "ScriptedBackend"]


class LentBackend:
    """A loaded model lent to one runner after another: everything is the model's but
    `close`, so the runner that closes what it was given leaves the model loaded."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def close(self) -> None:
        pass
