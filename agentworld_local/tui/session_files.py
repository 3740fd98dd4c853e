"""The session screen's file actions (a mixin of SessionScreen): fork at a turn, save as, open
a saved session. Each asks for a path, then the app does it through its runner. A fork or a
save-as asked for while the screen's commands run is sent once they have ended, so it holds
every turn they save; opening another session closes this one after what runs (the runner
queues the close in its mailbox)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentworld_local.files import fit_name, user_path
from agentworld_local.tui.dialogs import PromptDialog


class SessionFileActions:
    """Needs the screen's `view`, `branch`, `busy`, `_picked_turn`, `awl_app`, `_after_pending`."""

    def action_fork(self) -> None:
        """Fork at the turn picked in the timeline, else at the last turn (the last once what
        runs has ended, when something does)."""
        picked = self._picked_turn
        if picked == 0:
            self.notify("That turn is not on the current branch; pick one of its turns to fork at.", severity="warning")
            return
        if picked is None and not self.busy:
            picked = len(self.branch)
            if picked == 0:
                self.notify("There is no turn to fork at yet: run an action first.", severity="warning")
                return
        title = f"Fork at turn {picked} into a new file" if picked is not None else "Fork at the last turn into a new file"

        def fork(path: Path) -> None:
            turn = picked if picked is not None else len(self.branch)
            if turn == 0:
                self.notify("There is no turn to fork at yet: run an action first.", severity="warning")
                return
            self.awl_app.fork_session(turn, path)

        self._ask_path(title, lambda path: self._after_pending(lambda: fork(path), "The fork is made"))

    def action_save_as(self) -> None:
        self._ask_path("Save as (the session goes on in the new file)",
                       lambda path: self._after_pending(
                           lambda: self.awl_app.fork_session(len(self.branch), path, save_as=True), "It is saved"))

    def action_open(self) -> None:
        self._ask_path("Open a saved session (it goes on in that file)", self.awl_app.open_saved, suggest=False)

    def _ask_path(self, title: str, then: Callable[[Path], Any], *, suggest: bool = True) -> None:
        value = str(self.view.path.with_name(fit_name(self.view.path.stem + "-fork", ".jsonl"))) if suggest else ""

        def chosen(text: str | None) -> None:
            if text:
                with self.awl_app.guarded():
                    then(user_path(text))  # the one rule for a path a user writes (`~`, `~name`)

        self.app.push_screen(PromptDialog(title, "path/to/session.jsonl", value), chosen)
