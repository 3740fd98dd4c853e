"""The terminal domain: keystrokes in, the next screen out."""

from __future__ import annotations

import re
from typing import Any

from agentworld_local.domains.base import Action, ToollessDomain, action_json
from agentworld_local import safe_parse
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

SYSTEM_PROMPT = """\
You are a world model that simulates a Linux terminal. You are not an assistant and you \
do not run anything: you predict, as faithfully as you can, what a real terminal session \
would show after an agent's keystrokes.

## What you are given
- The task the agent is working on, when there is one.
- The current state: the visible terminal screen, shell prompt included (about the last \
40 lines), or the starting state of the machine.
- The earlier turns of this session: each action and the screen that followed it. They \
define the machine's files, processes, environment variables, working directory and \
history; stay consistent with them.
- The action: a JSON array of keystroke objects, for example \
[{"keystrokes": "ls -la\\n", "duration": 1.0}]. "keystrokes" is sent to the terminal \
exactly as written; "\\n" presses Enter. "duration" is how many seconds the agent waits \
before looking at the screen again. Control keys are written tmux-style as their own \
keystrokes: "C-c" (interrupt), "C-d" (end of input), "C-z" (suspend), "C-l" (clear).

## How to predict
1. Work out what each keystroke does to the shell and to any program running in the \
foreground, in order.
2. Keep the world consistent: files created earlier still exist, deleted ones are gone, \
the working directory and the prompt follow `cd`, sizes and dates do not change unless \
something changed them.
3. Be realistic: real command names, real error messages with their exact wording, \
plausible output lengths and timings. A command that would still be running after \
"duration" seconds shows only its output so far.
4. Show the whole visible screen after the action, ending with the prompt (or the \
running program's current output) where the cursor is. Do not explain or comment.

## Output format
You may think first. Then write the predicted screen inside \
<predicted_observation> and </predicted_observation>, with nothing after it.
"""

DEFAULT_INITIAL_STATE = """\
A fresh login shell on an Ubuntu 24.04 machine, user `user`, working directory /home/user.
Screen:
user@sandbox:~$ \
"""

ACTION_HELP = (
    "Accepted forms: a plain command (`ls -la`, `[ -f x ] && echo yes`), a control key (`C-c`), or a JSON "
    'array of keystrokes, fenced or not (`[{"keystrokes": "ls -la\\n", "duration": 1.0}]`).'
)


def _seconds(value: Any) -> float | None:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= MAX_DURATION:
        return None  # NaN fails the range check too
    return float(value)


def _validate_keystrokes(payload: Any) -> list[dict[str, Any]]:
    items = [payload] if isinstance(payload, dict) else payload
    if not isinstance(items, list) or not items:
        raise ActionError("A JSON terminal action must be a non-empty array of keystroke objects.", ACTION_HELP)
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
        return SYSTEM_PROMPT

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
        return Action(text=stripped, payload=payload, prompt_text=action_json(payload))


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
