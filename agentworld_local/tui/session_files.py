"""The session screen's file actions (a mixin of SessionScreen): fork at a turn, save as, open
a saved session. Each asks for a path, then the app does it through its runner."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentworld_local.files import fit_name
from agentworld_local.tui.dialogs import PromptDialog


class SessionFileActions:
    """Needs the screen's `view`, `branch`, `_picked_turn`, `awl_app`, `_refuse_while_busy`."""

    def action_fork(self) -> None:
        """Fork at the turn picked in the timeline, else at the last turn."""
        if self._refuse_while_busy():
            return
        turn = self._picked_turn if self._picked_turn is not None else len(self.branch)
        if turn == 0 and self._picked_turn is not None:
            self.notify("That turn is not on the current branch; pick one of its turns to fork at.", severity="warning")
            return
        if turn == 0:
            self.notify("There is no turn to fork at yet: run an action first.", severity="warning")
            return
        self._ask_path(f"Fork at turn {turn} into a new file", lambda path: self.awl_app.fork_session(turn, path))

    def action_save_as(self) -> None:
        if self._refuse_while_busy():
            return
        turns = len(self.branch)
        self._ask_path("Save as (the session goes on in the new file)",
                       lambda path: self.awl_app.fork_session(turns, path, save_as=True))

    def action_open(self) -> None:
        if self._refuse_while_busy():
            return
        self._ask_path("Open a saved session (it goes on in that file)", self.awl_app.open_saved, suggest=False)

    def _ask_path(self, title: str, then: Callable[[Path], Any], *, suggest: bool = True) -> None:
        value = str(self.view.path.with_name(fit_name(self.view.path.stem + "-fork", ".jsonl"))) if suggest else ""

        def chosen(text: str | None) -> None:
            if text:
                with self.awl_app.guarded():
                    then(Path(text).expanduser())

        self.app.push_screen(PromptDialog(title, "path/to/session.jsonl", value), chosen)
