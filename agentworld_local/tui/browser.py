"""Opening a simulated web page in the user's real browser (session and replay screens)."""

from __future__ import annotations

import webbrowser
from pathlib import Path

from agentworld_local.views.web_page import write_web_page


def open_web_page(state: str, note: str) -> Path:
    """Write the page (HTML or accessibility tree) to a new private temporary folder and hand
    it to the browser; the file's path, for the notice."""
    path = write_web_page(state, note=f"{note}. Simulated by a world model: nothing on this page is real.")
    webbrowser.open(path.as_uri())
    return path
