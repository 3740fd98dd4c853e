"""The messages that ask an agent model for its next action, in the domain's raw form.

Our own words. The agent sees the task, what the environment shows, and the action format
its domain's parser reads (domains/forms.py, each domain's action help); each earlier turn is
its action (as an assistant message) and the observation that answered it (a user message).
"""

from __future__ import annotations

import re

from agentworld_local.agent.protocol import AgentHistory
from agentworld_local.domains.forms import ACTION_FORMS
from agentworld_local.domains.syntax import strip_fence
from agentworld_local.errors import AwlError

#: How an agent declares its task over, in each domain that has such an action (domains/endings.py).
ENDINGS = {
    "terminal": "`[]` (an empty keystroke list)",
    "web": "send_msg_to_user('your answer') (or report_infeasible('why'))",
    "os": "DONE (or FAIL when it cannot be done)",
    "android": '{"action_type": "status", "goal_status": "complete"}',
}
#: A fenced code block anywhere in an answer: models often wrap the action in one, with words around it.
_FENCED = re.compile(r"```[^\n`]*\n.*?```", re.DOTALL)


def system_message(history: AgentHistory) -> str:
    domain = history.domain
    forms = ACTION_FORMS.get(domain.name)
    raw = f"The raw form is {forms[2]}, e.g. {forms[1]}. " if forms else ""
    lines = [
        f"You are an agent working in a {domain.title} environment. Each message from the user is what "
        "the environment shows after your last action; you reply with your next action.",
        f"Your task: {history.task}" if history.task else "No task was given: explore the environment sensibly.",
        f"Actions: {raw}{domain.action_help()}",
    ]
    tools = domain.tools()
    if tools:
        names = "; ".join(f"{tool.get('name')}: {tool.get('description', '')}".strip() for tool in tools)
        lines.append(f"Tools you may call: {names}")
    ending = ENDINGS.get(domain.name)
    lines.append(f"When the task is done, reply with {ending}." if ending else
                 "Keep calling tools until you have what the task needs.")
    lines.append("Reply with exactly one action in the raw form and nothing else: no explanation, no second action.")
    return "\n\n".join(lines)


def observation_message(observation: str, turn: int) -> str:
    shown = observation if observation.strip() else "(the environment shows nothing)"
    return f"The environment shows (turn {turn}):\n{shown}\n\nYour next action?"


def agent_messages(history: AgentHistory, *, omitted: int = 0) -> list[dict[str, str]]:
    """The conversation for the next action: system, then observation/action pairs. With
    `omitted`, the first that many turns are left out (the agent model's context is full) and
    the conversation starts at the observation before the first turn kept."""
    messages = [{"role": "system", "content": system_message(history)}]
    if omitted:
        earlier = f"({omitted} earlier turn{'s' * (omitted != 1)} no longer shown.)\n"
        messages.append({"role": "user", "content": earlier + observation_message(history.turns[omitted - 1][1], omitted)})
    else:
        messages.append({"role": "user", "content": observation_message(history.initial_state, 0)})
    for number, (action, observation) in enumerate(history.turns[omitted:], start=omitted + 1):
        messages.append({"role": "assistant", "content": action})
        messages.append({"role": "user", "content": observation_message(observation, number)})
    return messages


def reask_message(error: AwlError) -> str:
    """The second ask, after an answer the domain's parser refused: its own reason."""
    reason = f"{error.message} {error.hint or ''}".strip()
    return (f"That is not an action the environment can read: {reason}\n"
            "Reply again with exactly one action in the raw form, nothing else.")


def action_text(answer: str) -> str:
    """The action in an answer: the body of its last fenced code block when it has one (words
    around it are the model's, not the action), else the whole answer."""
    blocks = _FENCED.findall(answer)
    return strip_fence(blocks[-1]).strip() if blocks else answer.strip()


def identity_label(identity: dict[str, object]) -> str:
    """`gemma.gguf (llama.cpp)`, for lines a face shows."""
    return f"{identity.get('name')} ({identity.get('backend')})"


__all__ = ["ENDINGS", "action_text", "agent_messages", "identity_label", "reask_message", "system_message"]
