"""The action script language every face reads: one action per line, `#` comments, and the
session commands `:undo` (drop the last turn), `:regenerate` (the last turn again, a new
sample) and `:control TEXT` (a perturbation)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentworld_local.domains.base import Action, Domain
from agentworld_local.errors import AwlError, InputError
from agentworld_local.files import read_text

UNDO = ":undo"
CONTROL = ":control"
REGENERATE = ":regenerate"


@dataclass(frozen=True)
class ScriptLine:
    number: int
    action: Action | None  # None for a session command
    command: str = ""
    text: str = ""  # the command's argument (`:control TEXT`)


def parse_script_line(domain: Domain, text: str, number: int, source: str) -> ScriptLine | None:
    """One action per line; blank lines and `#` comments are skipped; `:undo` drops a turn;
    `:regenerate` runs the last turn again with a new sample; `:control TEXT` adds a control
    instruction (a perturbation) for the next turn."""
    stripped = text.strip()
    if not stripped or stripped.startswith("#"):
        return None
    if stripped.startswith(":"):
        command, _, argument = stripped.partition(" ")
        if command == CONTROL:
            if not argument.strip():
                raise InputError(
                    f"{source}:{number}: `{CONTROL}` needs a text.",
                    f"Write e.g. `{CONTROL} the next tool call fails with a rate limit`.",
                )
            return ScriptLine(number, None, CONTROL, argument.strip())
        if stripped not in (UNDO, REGENERATE):
            raise InputError(
                f"{source}:{number}: unknown session command `{stripped}`.",
                f"Known: `{UNDO}`, `{REGENERATE}`, `{CONTROL} TEXT`.",
            )
        return ScriptLine(number, None, stripped)
    try:
        return ScriptLine(number, domain.parse_action(stripped))
    except AwlError as error:
        # The line number is what the user needs to find the mistake.
        raise InputError(f"{source}:{number}: {error.message}", error.hint) from None


def read_script(domain: Domain, path: Path) -> list[ScriptLine]:
    """Parse a whole script before the model loads, so a typo costs seconds, not a load."""
    text = read_text(path, "script")  # a FIFO or a device is refused at once; a BOM is fine
    lines = [parse_script_line(domain, line, number, str(path)) for number, line in enumerate(text.splitlines(), 1)]
    return [line for line in lines if line is not None]
