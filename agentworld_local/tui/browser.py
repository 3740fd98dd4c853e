"""Opening a simulated web page in the user's real browser (session and replay screens)."""

from __future__ import annotations

import tempfile
import webbrowser
from dataclasses import dataclass
from pathlib import Path

from agentworld_local.views.web_page import write_web_page

#: Every page this process wrote, under one private folder; removed when the app exits
#: (`remove_web_pages`) and, failing that, when the interpreter ends (TemporaryDirectory's finalizer).
_pages: tempfile.TemporaryDirectory[str] | None = None


@dataclass(frozen=True)
class OpenedPage:
    path: Path
    opened: bool  # False: no browser could be started (none installed, an SSH session)

    def message(self) -> str:
        """What to tell the user: where the page went, or where it is when no browser took it."""
        if self.opened:
            return f"Opened {self.path} in the browser."
        return (f"No browser could be opened here (none installed, or a remote session). "
                f"The page is written to {self.path}; copy it to a machine with a browser (it is removed when awl exits).")


def open_web_page(state: str, note: str) -> OpenedPage:
    """Write the page (HTML or accessibility tree) to a new private temporary folder and hand
    it to the browser; `webbrowser.open` answers False when it found no browser to start."""
    global _pages
    if _pages is None:
        _pages = tempfile.TemporaryDirectory(prefix="awl-web-")
    folder = tempfile.mkdtemp(dir=_pages.name)  # one per page: an open tab is never overwritten
    path = write_web_page(state, directory=folder,
                          note=f"{note}. Simulated by a world model: nothing on this page is real.")
    try:
        opened = bool(webbrowser.open(path.as_uri()))
    except webbrowser.Error:
        opened = False
    return OpenedPage(path, opened)


def remove_web_pages() -> None:
    """The pages written so far are deleted (the app is exiting)."""
    global _pages
    if _pages is not None:
        _pages.cleanup()
        _pages = None
