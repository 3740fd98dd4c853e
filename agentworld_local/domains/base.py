"""What every domain provides: a system prompt, an action parser, a starting state."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Action:
    """An agent action: what was typed, its parsed form, and how the prompt writes it."""

    text: str
    payload: Any
    prompt_text: str


def action_json(payload: Any) -> str:
    """Actions are written into prompts as compact JSON with spaces, like the official data."""
    return json.dumps(payload, ensure_ascii=False)


class Domain(Protocol):
    name: str
    title: str
    #: pygments lexer name for the state/observation view ("text", "json", "html", ...)
    state_lexer: str
    # What the domain can do; faces and the session read these instead of lists of names.
    #: The agent calls tools whose definitions a session or scenario may replace.
    takes_tools: bool
    #: The simulated machine has a file system that a file-tree view can ask about.
    shows_file_system: bool
    #: Actions are terminal keystrokes, so a face may send key presses as they are typed.
    reads_keystrokes: bool

    def system_prompt(self) -> str: ...

    def parse_action(self, text: str) -> Action: ...

    def initial_state(self) -> str: ...

    def action_help(self) -> str: ...

    def tools(self) -> list[dict[str, Any]]:
        """The tool definitions (MCP shape) the agent may call; empty for domains without tools."""
        ...


class ToollessDomain:
    """Shared parts of the domains without tools: help and starting state are constants."""

    takes_tools = False
    shows_file_system = False
    reads_keystrokes = False
    ACTION_HELP = ""
    DEFAULT_INITIAL_STATE = ""

    def tools(self) -> list[dict[str, Any]]:
        return []

    def action_help(self) -> str:
        return self.ACTION_HELP

    def initial_state(self) -> str:
        return self.DEFAULT_INITIAL_STATE
