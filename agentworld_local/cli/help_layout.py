"""`--help` that fits 80 columns: typer prints an option's name, short name, `--no-` form and
value type in four columns of their own, so at 80 columns (`--stop-at-observation` beside
`--no-prefetch`) the help text got about 20 cells and long words were cut with `…`. Here they
share one column, and the help text takes the rest of the line and wraps, never cut."""

from __future__ import annotations

from typing import Any

#: The most cells the option names take; longer ones (rare) wrap.
NAMES_CELLS = 28
#: An option's row: [required], long names, short names, `--no-` long, `--no-` short, type, help.
_OPTION_CELLS = 6


def fit_option_help() -> None:
    """Install the layout (once) on typer's help printer."""
    import typer.rich_utils as rich_utils
    from rich.table import Table
    from rich.text import Text

    if getattr(rich_utils, "_awl_fitted", False):
        return

    class OptionTable(Table):
        """typer's options table with the names in one column; other tables as they were."""

        def add_row(self, *cells: Any, **options: Any) -> None:
            if len(cells) < _OPTION_CELLS or self.show_header:
                super().add_row(*cells, **options)
                return
            *names, help_text = cells
            merged = Text()
            for part in names:
                piece = part if isinstance(part, Text) else Text(str(part or ""))
                if piece.plain.strip():
                    merged.append_text(piece if not merged.plain else Text(" ").append_text(piece))
            if not self.columns:
                self.add_column(max_width=NAMES_CELLS, overflow="fold")
                self.add_column(ratio=1, overflow="fold")
            super().add_row(merged, help_text, **options)

    rich_utils.Table = OptionTable  # type: ignore[misc]
    rich_utils._awl_fitted = True  # type: ignore[attr-defined]
