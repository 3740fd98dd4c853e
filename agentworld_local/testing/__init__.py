"""Test support shipped with the package: the scripted backend and realistic raw answers.

Used by the tests of every face (CLI, TUI, server); nothing here loads a model.
"""

from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend

__all__ = ["ScriptedAnswer", "ScriptedBackend"]
