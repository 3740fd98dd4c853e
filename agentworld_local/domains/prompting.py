"""The shared skeleton of our world-model system prompts.

The official AgentWorldBench templates share one structure: a role and objective, the
four inputs of a turn (historical context, task instruction, current state, action), the
simulator's responsibilities, rules for the state and for the action, and output
requirements ending in `<predicted_observation>` tags. Every domain fills the same
skeleton with its own words, so the contract parts cannot drift apart between domains.
"""

from __future__ import annotations

from dataclasses import dataclass, field

OUTPUT_RULES = """\
## Output Requirements

Reason step by step first: what the action does, which earlier facts constrain the \
result, and what the environment would show. Then write the complete next observation \
between <predicted_observation> and </predicted_observation>. Inside the tags put only \
the observation, in the same representation as the state you were given, with no \
commentary; write nothing after the closing tag."""


@dataclass(frozen=True)
class PromptSpec:
    #: e.g. "Web Browser World Model"
    role: str
    #: one sentence: what is simulated, and for whom
    objective: str
    #: what the Current State section holds in this domain
    state: str
    #: what the Action section holds in this domain
    action: str
    responsibilities: list[str]
    state_rules: list[str]
    action_rules: list[str]
    #: extra sections (title, body), e.g. the tool definitions or the action reference
    sections: list[tuple[str, str]] = field(default_factory=list)


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def compose_prompt(spec: PromptSpec) -> str:
    responsibilities = "\n".join(f"{number}. {item}" for number, item in enumerate(spec.responsibilities, 1))
    parts = [
        "# Role and Objective",
        f"You are the **{spec.role}**. {spec.objective} You never run anything and you are not "
        "the agent's assistant: you predict, as faithfully as you can, what the real "
        "environment would return after the agent's action.",
        "Each turn gives you:\n"
        "1. **Historical Context** (optional): the earlier actions of this session and the "
        "observations that followed them.\n"
        "2. **Task Instruction**: what the agent is trying to achieve, when known, plus any "
        "control instructions about how the environment should behave.\n"
        f"3. **Current State**: {spec.state}\n"
        f"4. **Action**: {spec.action}",
        "## Core Responsibilities\n" + responsibilities,
        *(f"## {title}\n{body.strip()}" for title, body in spec.sections),
        "## State Modeling Rules\n" + _bullets(spec.state_rules),
        "## Action Modeling Rules\n" + _bullets(spec.action_rules),
        OUTPUT_RULES,
    ]
    return "\n\n".join(parts) + "\n"
