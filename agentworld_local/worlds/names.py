"""A shared world's name and where its store lives.

A client names a world; it never gives a path. A name is a short word of letters, digits,
`-`, `_` and `.` (not starting with `.`), so `../x`, `C:x` or a name with a separator can
never reach outside `<data dir>/worlds/` (AWL_WORLDS_DIR moves that folder, e.g. to a disk
that several `awl serve` processes share).

Where the worlds live: AWL_WORLDS_DIR, else the config file's `[worlds] store`, else
`<data dir>/worlds/`. Either may be a PostgreSQL URL instead of a folder
(`postgresql://user:password@host:5432/database`): every world is then kept in that database
(worlds/postgres_store.py), for `awl serve` processes on several machines.
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


#: The URL schemes of a PostgreSQL database (libpq's own two).
DATABASE_SCHEMES = ("postgresql://", "postgres://")
#: Where a location's setting comes from, as an error names it.
LOCATION_SETTING = "AWL_WORLDS_DIR or the config file's `[worlds] store`"


def worlds_location() -> Path | str:
    """Where every shared world is kept: a folder (one per world in it), or a PostgreSQL URL
    (a str, as given: it may hold a password, never to be shown; see `redacted_url`)."""
    override = os.environ.get("AWL_WORLDS_DIR", "").strip()
    if not override:
        from agentworld_local.config import load_config

        override = (load_config().worlds_store or "").strip()
    if not override:
        return data_dir() / "worlds"
    if is_database_url(override):
        return override
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", override):
        raise InputError(f"The shared worlds' store `{shown_name(redacted_url(override))}` is neither a folder nor a "
                         "PostgreSQL URL.", f"Set {LOCATION_SETTING} to a folder, or to "
                         "`postgresql://user:password@host:5432/database`.")
    return Path(override).expanduser()


def worlds_dir() -> Path:
    """Where every shared world keeps its folder (InputError when the worlds are kept in a database)."""
    location = worlds_location()
    if isinstance(location, str):
        raise InputError(f"The shared worlds are kept in the database {redacted_url(location)}, not in a folder.",
                         "`awl worlds list` shows them.")
    return location


def is_database_url(text: str) -> bool:
    return text.strip().lower().startswith(DATABASE_SCHEMES)


def redacted_url(url: str) -> str:
    """`url` as it may be shown: without its password (in the user part or a `password=`
    parameter), e.g. `postgresql://awl@db:5432/worlds`."""
    scheme, sep, rest = url.strip().partition("://")
    if not sep:
        return url
    cut = min((at for at in (rest.find("/"), rest.find("?")) if at >= 0), default=len(rest))
    hosts, (path, _, query) = rest[:cut], rest[cut:].partition("?")
    if "@" in hosts:
        user, _, hosts = hosts.rpartition("@")
        hosts = f"{user.partition(':')[0]}@{hosts}"
    kept = [part for part in query.split("&") if part and part.split("=", 1)[0].strip().lower() != "password"]
    return f"{scheme}{sep}{hosts}{path}{'?' + '&'.join(kept) if kept else ''}"


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

