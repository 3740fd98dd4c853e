"""What the session screen (tui/session_screen.py) writes, apart from the widgets: the action
line's hints and completion, the title, the thinking budget as the status says it, and
model or user text made safe for one line."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.suggester import SuggestFromList

from agentworld_local.errors import AwlError
from agentworld_local.terminal_text import safe_for_terminal, shorten
from agentworld_local.trajectory.replay import thinking_cut_note
from agentworld_local.trajectory.schema import TurnRecord

#: The action line's own commands (session/script.py).
SESSION_COMMANDS = (":undo", ":regenerate", ":control ")


def placeholder(domain: Any) -> str:
    """Action forms for the domain as this session built it (a tool-call domain names only its
    own tools; domains/forms.py) and the session commands."""
    from agentworld_local.domains.forms import session_action_examples

    return " · ".join([*session_action_examples(domain), ":undo", ":regenerate", ":control TEXT"])


def action_suggester(domain: Any) -> SuggestFromList:
    """Completion for the first word: the session's tool names and shortcuts, and the commands."""
    words = getattr(domain, "action_words", None)
    return SuggestFromList([*(words() if words else []), *SESSION_COMMANDS], case_sensitive=True)


def title_text(header: Any) -> Text:
    """The scenario's title, else the agent's task: what this session is about."""
    scenario = header.scenario if isinstance(header.scenario, dict) else {}
    title = str(scenario.get("title") or "")
    text = Text(no_wrap=True, overflow="ellipsis", end="")
    if title:
        text.append(f"◆ {plain(title)}", style="bold")
    if header.task:
        text.append(("  task: " if title else "task: ") + plain(header.task), style="dim")
    return text


def think_label(budget: str, last: TurnRecord | None) -> str:
    """The status bar's thinking budget (`1024`, `off`, `full`), with `cut` after it while the
    turn shown last had its thinking ended by the budget (tokens.thinking_cut)."""
    cut = last is not None and last.tokens.get("thinking_cut") is True
    return f"{budget} cut" if cut else budget


def thinking_title(last: TurnRecord | None) -> str:
    """The thinking panel's title: `Thinking`, and where the budget cut the thinking it shows."""
    cut = thinking_cut_note(last) if last is not None else ""
    return f"Thinking · {cut} by the budget (--think full lets it finish)" if cut else "Thinking"


def inline_error(error: AwlError) -> str:
    message = error.message.removeprefix("action:1: ")
    return f"{message} {error.hint}".strip()


def plain(text: str) -> str:
    """Model or user text for one line: no control bytes, no colour."""
    return " ".join(safe_for_terminal(text, keep_colour=False).split())


def safe_title(text: str) -> str:
    """A border title: model or user text, one line, no control bytes, no markup."""
    return shorten(safe_for_terminal(text, keep_colour=False), 70).replace("[", r"\[")
