"""The session events live in engine/events.py (the World emits them, the runner and every
face pass them on); this module keeps the import path the faces and tests use."""

from agentworld_local.engine.events import *  # noqa: F401,F403
from agentworld_local.engine.events import EVENT_TYPES, SessionEvent, event_from_dict  # noqa: F401
