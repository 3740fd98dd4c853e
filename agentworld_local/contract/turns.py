"""Render turn prompts and the message list in the layout of the official evaluation.

Layout (docs/ARCHITECTURE.md, "The model's contract"): system prompt; history as alternating user (turn prompt)
and assistant (`**Environment Observation:**` + newline + observation, no thinking);
then the current user turn prompt.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentworld_local.contract.parse import OBSERVATION_MARKER


@dataclass(frozen=True)
class TurnPrompt:
    """The sections of one user turn; empty sections are left out."""

    turn: int
    action: str
    task: str = ""
    historical_context: str = ""
    current_state: str = ""

    def render(self) -> str:
        # As the official user template: the heading, then sections split by blank lines.
        sections = []
        for title, body in (
            ("Task Instruction", self.task),
            ("Historical Context", self.historical_context),
            ("Current State", self.current_state),
            ("Action", self.action),
        ):
            if body and body.strip():
                sections.append(f"**{title}:**\n{body.strip(chr(10))}")
        return f"### Turn {self.turn}\n" + "\n\n".join(sections)


def history_observation(observation: str) -> str:
    """How an earlier turn's observation is written back into the history."""
    return f"{OBSERVATION_MARKER}\n{observation}"


def build_messages(
    system_prompt: str, history: list[tuple[str, str]], current_prompt: str
) -> list[dict[str, str]]:
    """`history` is (turn prompt, observation) pairs of the completed turns, oldest first."""
    messages = [{"role": "system", "content": system_prompt}]
    for prompt, observation in history:
        messages.append({"role": "user", "content": prompt})
        messages.append({"role": "assistant", "content": history_observation(observation)})
    messages.append({"role": "user", "content": current_prompt})
    return messages
