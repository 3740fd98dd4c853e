"""User directories. `AWL_HOME` overrides them all (tests, portable installs)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "agentworld-local"


def _home_override() -> Path | None:
    value = os.environ.get("AWL_HOME")
    return Path(value).expanduser() if value else None


def config_dir() -> Path:
    home = _home_override()
    return home / "config" if home else Path(platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    home = _home_override()
    return home / "data" if home else Path(platformdirs.user_data_dir(APP_NAME))


def cache_dir() -> Path:
    home = _home_override()
    return home / "cache" if home else Path(platformdirs.user_cache_dir(APP_NAME))


def state_cache_dir() -> Path:
    """System-prompt states a model evaluated, reused by new sessions (engine/llama/state_cache.py)."""
    return cache_dir() / "prompt-states"


def sessions_dir() -> Path:
    """Where sessions are saved when the user does not name a file."""
    return data_dir() / "sessions"


def package_assets() -> Path:
    """Bundled assets (scenarios, example sessions) inside the installed package."""
    return Path(__file__).parent / "assets"


def action_history_file() -> Path:
    """The actions typed at `awl run`'s prompt, for up/down recall in the next session."""
    return data_dir() / "action_history"
