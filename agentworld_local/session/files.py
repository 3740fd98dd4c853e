"""Where sessions are saved, and the rule that a saved file is never overwritten."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from agentworld_local.errors import InputError
from agentworld_local.paths import sessions_dir


def default_session_path(domain: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return sessions_dir() / f"{stamp}-{domain}.jsonl"


def ensure_new_file(path: Path) -> None:
    """Refuse before the model loads or anything is written: awl never overwrites a saved file."""
    if path.exists():
        raise InputError(f"{path} already exists.", "Choose another `--out` file, or delete that one first.")
