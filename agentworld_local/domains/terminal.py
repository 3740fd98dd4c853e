"""The terminal domain: keystrokes in, the next screen out."""

from __future__ import annotations

import json
import re
from typing import Any

from agentworld_local import safe_parse
from agentworld_local.domains.base import Action, ToollessDomain
from agentworld_local.domains.packs import builtin_template, fill_template
from agentworld_local.domains.syntax import begin_action, unfence
from agentworld_local.errors import ActionError

DEFAULT_DURATION = 1.0
CONTROL_KEY_DURATION = 0.5
MAX_DURATION = 86_400  # a day: longer waits are typos (and 1e999 is not a number of seconds)
# tmux-style keys the prompt documents; several may be given separated by spaces.
# Text that starts like a keystroke array or object (`[{`, `{"`) but is not valid JSON is a
# broken JSON action; other text starting with `[` or `{` is a shell command (`[ -f x ]`,
# `[[ -d /tmp ]]`, `{ echo a; } > f`): a brace group needs a space after `{`.
_MEANT_AS_JSON = re.compile(r'\[\s*\{|\{"')
_CONTROL_KEYS = re.compile(r"^(?:C-[a-z@\[\\\]^_]|M-[a-z]|Escape|Enter|Tab|BSpace|Up|Down|Left|Right)$")

# The official sessions start at a bare prompt: the raw screen, not a description of it.
DEFAULT_INITIAL_STATE = "user@sandbox:~$ "

ACTION_HELP = (
    "Accepted forms: a plain command (`ls -la`, `[ -f x ] && echo yes`), a control key (`C-c`), or a JSON "
    'array of keystrokes, fenced or not (`[{"keystrokes": "ls -la\\n", "duration": 1.0}]`; `[]` declares the task done).'
)


def keystrokes_text(payload: list[dict[str, Any]]) -> str:
    """How the action is written in `**Action:**`: a fenced, indented JSON array, as in the
    official template's examples; exactly `json.dumps(payload, ensure_ascii=False, indent=2)`
    for the objects _validate_keystrokes gives, written here because `indent` makes json use its
    pure-Python encoder (a few percent of a turn's CPU with thousands of episodes at once)."""
    if not payload:
        return "```json\n[]\n```"
    items = ",\n".join(f'  {{\n    "keystrokes": {json.dumps(item["keystrokes"], ensure_ascii=False)},\n'
                       f'    "duration": {json.dumps(item["duration"])}\n  }}' for item in payload)
    return "```json\n[\n" + items + "\n]\n```"


def _seconds(value: Any) -> float | None:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= MAX_DURATION:
        return None  # NaN fails the range check too
    return float(value)


def _validate_keystrokes(payload: Any) -> list[dict[str, Any]]:
    items = [payload] if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise ActionError("A JSON terminal action must be an array of keystroke objects.", ACTION_HELP)
    # `[]` is legal: in the official environment the agent declares the task finished with it.
    result = []
    for index, item in enumerate(items, start=1):
        if not isinstance(item, dict) or not isinstance(item.get("keystrokes"), str):
            raise ActionError(f'Keystroke object {index} needs a string "keystrokes" field.', ACTION_HELP)
        duration = _seconds(item.get("duration", DEFAULT_DURATION))
        if duration is None:
            raise ActionError(
                f'Keystroke object {index} has an invalid "duration" (a number of seconds from 0 to {MAX_DURATION:,}).',
                ACTION_HELP,
            )
        result.append({"keystrokes": item["keystrokes"], "duration": duration})
    return result


class TerminalDomain(ToollessDomain):
    name = "terminal"
    title = "Linux terminal"
    state_lexer = "text"
    shows_file_system = True
    reads_keystrokes = True

    def system_prompt(self) -> str:
        return fill_template(builtin_template(self.name))

    ACTION_HELP = ACTION_HELP
    DEFAULT_INITIAL_STATE = DEFAULT_INITIAL_STATE

    def parse_action(self, text: str) -> Action:
        stripped = begin_action(text, ACTION_HELP)
        body = unfence(stripped, ACTION_HELP)
        raw = _json_action(body)
        if raw is not None:
            payload = _validate_keystrokes(raw)
        elif all(_CONTROL_KEYS.match(key) for key in body.split()):
            payload = [{"keystrokes": key, "duration": CONTROL_KEY_DURATION} for key in body.split()]
        else:
            # A plain command: type it and press Enter.
            payload = [{"keystrokes": body.rstrip("\r\n").strip() + "\n", "duration": DEFAULT_DURATION}]
        return Action(text=stripped, payload=payload, prompt_text=keystrokes_text(payload))


def _json_action(body: str) -> Any:
    """The JSON array or object `body` holds, or None when it is a shell command.

    Valid JSON that is an array or object is always meant as keystrokes (no useful shell
    command is valid JSON); invalid JSON is a shell command unless it starts like
    keystroke JSON, and then its syntax error is the clearest answer.
    """
    if not body.startswith(("[", "{")):
        return None
    try:
        raw = safe_parse.load_json(body)
    except safe_parse.SyntaxProblem as problem:
        if _MEANT_AS_JSON.match(body):
            raise ActionError(f"Invalid JSON action ({problem.reason}).", ACTION_HELP) from None
        return None
    return raw if isinstance(raw, (list, dict)) else None
