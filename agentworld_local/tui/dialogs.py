"""Modal dialogs: the error dialog (the app's one error boundary shows it), help, a prompt."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from agentworld_local.terminal_text import safe_for_terminal


class ErrorDialog(ModalScreen[None]):
    """What went wrong and what to do next; the session and its file are untouched."""

    BINDINGS = [Binding("escape,enter", "dismiss", "Close")]

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(classes="dialog")
        self.message = message
        self.hint = hint

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box"):
            yield Label("Something went wrong", id="dialog-title")
            yield Static(Text(safe_for_terminal(self.message, keep_colour=False)), id="error-message")
            if self.hint:
                yield Static(Text(safe_for_terminal(self.hint, keep_colour=False), style="italic"), id="error-hint")
            yield Button("OK", variant="primary", id="ok")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)


class PromptDialog(ModalScreen[str | None]):
    """Ask for one line (a file name, a control instruction); Escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, placeholder: str = "", value: str = "") -> None:
        super().__init__(classes="dialog")
        self.title_text = title
        self.placeholder = placeholder
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box"):
            yield Label(self.title_text, id="dialog-title")
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """Every key binding of the screen below, with what it does."""

    BINDINGS = [Binding("escape,q,f1", "close", "Close")]

    def __init__(self, rows: list[tuple[str, str]]) -> None:
        super().__init__(classes="dialog")
        self.rows = rows

    def compose(self) -> ComposeResult:
        text = Text()
        for key, description in self.rows:
            text.append(f"{key:>12}  ", style="bold cyan")
            text.append(description + "\n")
        text.append("\nAt the action line: ", style="dim")
        text.append(":undo  :regenerate  :control TEXT", style="bold")
        text.append("; up/down recall earlier actions. The command palette (ctrl+p) lists every action.", style="dim")
        with Vertical(id="dialog-box"):
            yield Label("Keys", id="dialog-title")
            yield Static(text, id="help-keys")

    def action_close(self) -> None:
        self.dismiss(None)


class ElementPicker(ModalScreen[str | None]):
    """The page's elements; choosing one offers `click ID`, and `fill ID ` for text fields.
    The choice goes to the action line (to send or to finish typing)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, elements: list[tuple[str, str, str]]) -> None:
        super().__init__(classes="dialog")
        self.elements = elements

    def compose(self) -> ComposeResult:
        from textual.widgets import OptionList
        from textual.widgets.option_list import Option

        from agentworld_local.tui.render import FILLABLE

        options = []
        for bid, role, label in self.elements:
            shown = Text.assemble((f"[{bid}] ", "bold cyan"), (role, "dim"), f" {label}")
            options.append(Option(Text("click ") + shown, id=f"click {bid}"))
            if role.lower() in FILLABLE:
                options.append(Option(Text("fill  ") + shown, id=f"fill {bid} "))
        with Vertical(id="dialog-box"):
            yield Label("Choose an element", id="dialog-title")
            yield OptionList(*options, id="elements")

    def on_option_list_option_selected(self, event: Any) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
