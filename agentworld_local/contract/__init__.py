"""The message contract of the world model: turn rendering and output parsing."""

from agentworld_local.contract.parse import OBSERVATION_MARKER, ParsedOutput, parse_output
from agentworld_local.contract.turns import TurnPrompt, build_messages, history_observation

__all__ = [
    "OBSERVATION_MARKER",
    "ParsedOutput",
    "TurnPrompt",
    "build_messages",
    "history_observation",
    "parse_output",
]
