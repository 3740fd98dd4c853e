"""The structure of the official world-model system prompts, as data.

The model answers best in the prompt layout it was trained on, so each of our domain
prompts follows the official template of its domain (QwenLM/Qwen-AgentWorld,
`prompts/<domain>/system_prompt.txt`): the same headings in the same order, the same
inputs, the same placeholders and the same output rule, in our own words. This module
records only that structure (heading lines and names, never the official prose); the
tests hold every built-in prompt to it, and docs/domains.md explains it section by section.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The judge's five dimensions: the "Key Principles" sections name them in this order.
JUDGE_DIMENSIONS = ("Format", "Factuality", "Consistency", "Realism", "Quality")
#: The placeholders an official template (and so a prompt pack) may contain.
PLACEHOLDERS = ("tool_definitions", "demonstrations")


@dataclass(frozen=True)
class Skeleton:
    #: Markdown heading lines, in the order they appear.
    headings: tuple[str, ...]
    #: The bold input names of the "Given:" list (what a turn gives the model).
    inputs: tuple[str, ...]
    #: Placeholders the template carries (filled from the session).
    placeholders: tuple[str, ...] = ()
    #: "tags": the observation goes inside <predicted_observation> tags;
    #: "one_block": exactly one closed block and nothing else (web, android);
    #: "think_then_tags": reasoning first, then the block (os).
    output_rule: str = "tags"


_PRINCIPLES = ("# Key Principles", *(f"## {name}" for name in JUDGE_DIMENSIONS))
_CONTEXT = ("## Context Awareness", "### Variable Reuse", "### Logical Consistency")

SKELETONS: dict[str, Skeleton] = {
    "terminal": Skeleton(
        headings=(
            "# Role and Objective", "## Task Definition", "## Core Responsibilities",
            "# Environment Management", "## State Representation & Initialization", "## State Transitions & Update",
            *_CONTEXT,
            "# Environment Execution", "## Input Parsing & Dispatch", "## Program Execution",
            "## Environment Behavior Modeling", "### Side-Effects Modeling", "### Time & Blocking Behavior Simulation",
            "### Error Handling & Edge Cases", "### Output Assembly",
            *_PRINCIPLES,
            "# Input Definitions & Action Space", "## Action Format", "### Field Definitions",
            "### Keystrokes Semantics", "### Special Action Types",
            "# Predicted Observation Requirements",
            "# Terminal Environment Specifics",
            "# Few-shot Examples",
        ),
        inputs=("Historical Context", "Current Terminal State", "User Action"),
    ),
    "mcp": Skeleton(
        headings=(
            "# Role and Objective", "## Task Definition", "## Core Responsibilities",
            "# Environment Management", "## State Representation & Initialization", "## State Transitions & Update",
            *_CONTEXT,
            "# Environment Execution", "## Tool Execution", "## Response Format Inference",
            "## Error Handling & Edge Cases",
            "# Input Definitions & Action Space",
            "# Predicted Observation Requirements",
        ),
        inputs=("Historical Context", "Current Tool Call"),
        placeholders=("tool_definitions", "demonstrations"),
    ),
    "swe": Skeleton(
        headings=(
            "# Role and Objective", "## Task Definition", "## Core Responsibilities",
            "# Environment Management", "## State Representation & Initialization", "## State Transitions & Update",
            *_CONTEXT,
            "# Environment Execution", "## Input Parsing & Dispatch", "## Command Execution",
            "## Environment Behavior Modeling", "### Side-Effects Modeling", "### Time & Blocking Behavior Simulation",
            "### Error Handling & Edge Cases",
            *_PRINCIPLES,
            "# Input Definitions & Action Space",
            "# Predicted Observation Requirements",
        ),
        inputs=(),  # the official swe template names no input list; it describes the context instead
        placeholders=("tool_definitions", "demonstrations"),
    ),
    "search": Skeleton(
        headings=(
            "# Role and Objective", "## Task Definition", "## Core Responsibilities",
            "# Environment Management", "## State Transitions & Update", "## Context Awareness",
            "# Environment Execution", "## Tool Execution", "### web_search", "### web_extractor", "### dict_memory",
            "## Environment Behavior Modeling", "### Content Generation Priority", "### Error Handling & Edge Cases",
            *_PRINCIPLES,
            "# Input Definitions & Action Space",
            "# Few-shot Examples",
        ),
        inputs=("Historical Context", "Current Tool Call", "Simulation Instruction"),
        placeholders=("tool_definitions",),
    ),
    "web": Skeleton(
        headings=("# Role and Objective", "## Core Responsibilities", "# Action Space",
                  "# Content Requirements", "# Format Requirements"),
        inputs=("Historical Context", "Current Page State", "Browser Action"),
        output_rule="one_block",
    ),
    "os": Skeleton(
        headings=("# Role and Objective", "## Core Responsibilities", "## State Modeling Rules",
                  "## Action Space", "## Output Requirements"),
        inputs=("Historical Context", "Task Instruction", "Current State", "Action"),
        output_rule="think_then_tags",
    ),
    "android": Skeleton(
        headings=("# Role and Objective", "## Core Responsibilities", "# Content Requirements", "# Format Requirements"),
        inputs=("Historical Context", "Current Screen State", "Android Action"),
        output_rule="one_block",
    ),
}

_HEADING = re.compile(r"^#{1,3} .+$", re.MULTILINE)
# `${HOME}` in a shell example is a variable, not a placeholder.
_PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")


def headings(text: str) -> list[str]:
    """The Markdown heading lines of a prompt (levels 1 to 3), outside code fences."""
    found, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and _HEADING.fullmatch(line.rstrip()):
            found.append(line.rstrip())
    return found


def placeholders_in(text: str) -> list[str]:
    """Every `{name}` in a template (JSON examples such as `{"url": ...}` are not names)."""
    return _PLACEHOLDER.findall(text)


def skeleton_problems(name: str, text: str, *, template: bool = False) -> list[str]:
    """How `text` (a domain's system prompt) departs from the official skeleton; [] if it does not.

    Headings must appear in the skeleton's order (the example turns of a few-shot section
    may add their own headings after it); each input is named in bold; a template keeps
    its placeholders, a filled prompt has none left.
    """
    skeleton = SKELETONS[name]
    problems = []
    found = headings(text)
    position = 0
    for heading in skeleton.headings:
        try:
            position = found.index(heading, position) + 1
        except ValueError:
            problems.append(f"missing or out of order: {heading}")
    problems += [f"input not named: {item}" for item in skeleton.inputs if f"**{item}**" not in text]
    left = placeholders_in(text)
    if template:
        problems += [f"placeholder missing: {{{p}}}" for p in skeleton.placeholders if p not in left]
    else:
        problems += [f"placeholder not filled: {{{p}}}" for p in left]
    if "<predicted_observation>" not in text:
        problems.append("the output tags are not named")
    return problems
