"""Running a Textual app from a command: a crash inside it is never a success.

Textual catches an exception raised in the app, prints its traceback after the screen
closes, and returns normally with `return_code` 1; a command that ignored it exited 0.
"""

from __future__ import annotations

from typing import Any

import typer


def run_screen(app: Any, **options: Any) -> None:
    """`app.run(**options)`; raises typer.Exit with the app's code when it ended in failure."""
    app.run(**options)
    if app.return_code:
        raise typer.Exit(app.return_code)
