"""The action script language every face reads: one action per line, `#` comments, and the
session commands `:undo` (drop the last turn), `:regenerate` (the last turn again, a new
sample) and `:control TEXT` (a perturbation).

Only those three words are commands: any other line that starts with `:` is an action
(`: > build.log` truncates a file in a shell), except a lone word that is a near miss of a
command (`:undoo`), which is refused rather than sent to the model as an action.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld_local.domains.base import Action, Domain
from agentworld_local.errors import AwlError, InputError
from agentworld_local.files import read_text

UNDO = ":undo"
CONTROL = ":control"
REGENERATE = ":regenerate"
COMMANDS = (UNDO, REGENERATE, CONTROL)


@dataclass(frozen=True)
class ScriptLine:
    number: int
    action: Action | None  # None for a session command
    command: str = ""
    text: str = ""  # the command's argument (`:control TEXT`)
    #: The agent side of the turn when an agent model proposed the action (TurnRecord.agent).
    agent: dict[str, Any] | None = None
    #: The episode ends after this turn (an agent's last allowed step): a reward may judge it.
    final: bool = False


def parse_script_line(domain: Domain, text: str, number: int, source: str) -> ScriptLine | None:
    """One action per line; blank lines and `#` comments are skipped; `:undo` drops a turn;
    `:regenerate` runs the last turn again with a new sample; `:control TEXT` adds a control
    instruction (a perturbation) for the next turn. Any other line is an action."""
    stripped = text.strip()
    if not stripped or stripped.startswith("#"):
        return None
    command, _, argument = stripped.partition(" ")
    if command == CONTROL:
        if not argument.strip():
            raise InputError(
                f"{source}:{number}: `{CONTROL}` needs a text.",
                f"Write e.g. `{CONTROL} the next tool call fails with a rate limit`.",
            )
        return ScriptLine(number, None, CONTROL, argument.strip())
    if command in (UNDO, REGENERATE):
        if argument.strip():
            raise InputError(f"{source}:{number}: `{command}` takes no text.", f"Write `{command}` alone on its line.")
        return ScriptLine(number, None, command)
    _refuse_near_miss(stripped, number, source)
    try:
        return ScriptLine(number, domain.parse_action(stripped))
    except AwlError as error:
        # The line number is what the user needs to find the mistake.
        raise InputError(f"{source}:{number}: {error.message}", error.hint) from None


def _refuse_near_miss(stripped: str, number: int, source: str) -> None:
    """`:undoo` alone on a line is a typo of a command, not an action for the model."""
    if not stripped.startswith(":") or not stripped[1:].isalpha():
        return
    close = difflib.get_close_matches(stripped, COMMANDS, n=1, cutoff=0.75)
    if close:
        raise InputError(
            f"{source}:{number}: unknown session command `{stripped}`; did you mean `{close[0]}`?",
            f"Known: `{UNDO}`, `{REGENERATE}`, `{CONTROL} TEXT`; any other line is an action.",
        )


def read_script(domain: Domain, path: Path) -> list[ScriptLine]:
    """Parse a whole script before the model loads, so a typo costs seconds, not a load."""
    text = read_text(path, "script")  # a FIFO or a device is refused at once; a BOM is fine
    lines = [parse_script_line(domain, line, number, str(path)) for number, line in enumerate(text.splitlines(), 1)]
    return [line for line in lines if line is not None]
