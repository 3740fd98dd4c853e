"""A shared world's name and where its store lives.

A client names a world; it never gives a path. A name is a short word of letters, digits,
`-`, `_` and `.` (not starting with `.`), so `../x`, `C:x` or a name with a separator can
never reach outside `<data dir>/worlds/` (AWL_WORLDS_DIR moves that folder, e.g. to a disk
that several `awl serve` processes share).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from agentworld_local.errors import InputError, shown_name
from agentworld_local.paths import data_dir

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
NAME_RULE = "1-64 letters, digits, `-`, `_` or `.`, starting with a letter or digit"


def worlds_dir() -> Path:
    """Where every shared world keeps its folder."""
    override = os.environ.get("AWL_WORLDS_DIR")
    return Path(override).expanduser() if override else data_dir() / "worlds"


def check_world_name(value: Any) -> str:
    """`value` as a world name, or one InputError that says what a name may hold (the same on
    every face; a path is refused as a name, never opened)."""
    name = value.strip() if isinstance(value, str) else None
    if not name or not _NAME.fullmatch(name) or name.endswith("."):
        raise InputError(f"`{shown_name(value)}` is not a shared world name: a name is {NAME_RULE}.",
                         "Name the world, e.g. `--shared-world grpo-run-1`; `awl worlds list` shows the worlds there are.")
    return name


def world_folder(name: str) -> Path:
    return worlds_dir() / check_world_name(name)

