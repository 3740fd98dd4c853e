"""The worlds of a location (worlds/names.py `worlds_location`), whichever kind it is: a folder
(one SQLite store per world, worlds/sqlite_store.py) or a PostgreSQL URL (every world in that
database, worlds/postgres_store.py). Opening a world's store, listing and removing worlds."""

from __future__ import annotations

import shutil
from pathlib import Path

from agentworld_local.worlds.names import check_world_name, redacted_url, worlds_location
from agentworld_local.worlds.sqlite_store import FILE_NAME, SqliteWorldStore
from agentworld_local.worlds.store import WorldSettings, WorldStore

Location = Path | str


def open_store(location: Location, name: str, *, create_with: WorldSettings | None = None) -> WorldStore:
    """The store of the world `name` at `location` (created on first use)."""
    if isinstance(location, str):
        from agentworld_local.worlds.postgres_store import PostgresWorldStore

        return PostgresWorldStore(location, name, create_with=create_with)
    return SqliteWorldStore(location / check_world_name(name), name, create_with=create_with)


def store_identity(location: Location, name: str) -> str:
    """One string per world's store, for a process's one SharedWorld per store."""
    if isinstance(location, str):
        return f"{location.strip()}\n{name}"
    return str((location / check_world_name(name)).resolve())


def world_names(location: Location | None = None) -> list[str]:
    """The worlds there are at `location` (the configured one by default), sorted."""
    location = worlds_location() if location is None else location
    if isinstance(location, str):
        from agentworld_local.worlds.postgres_store import world_names as names_in_database

        return names_in_database(location)
    if not location.is_dir():
        return []
    return sorted(path.name for path in location.iterdir() if (path / FILE_NAME).is_file())


def world_exists(name: str, location: Location | None = None) -> bool:
    location = worlds_location() if location is None else location
    if isinstance(location, str):
        return check_world_name(name) in world_names(location)
    return (location / check_world_name(name) / FILE_NAME).is_file()


def remove_world(name: str, location: Location | None = None) -> bool:
    """Remove the world `name` and every answer it holds; False when there was none."""
    location = worlds_location() if location is None else location
    name = check_world_name(name)
    if isinstance(location, str):
        from agentworld_local.worlds.postgres_store import remove_world as remove_from_database

        return remove_from_database(location, name)
    if not world_exists(name, location):
        return False
    shutil.rmtree(location / name)
    return True


def shown_location(location: Location | None = None) -> str:
    """`location` as a user may read it (a URL without its password)."""
    location = worlds_location() if location is None else location
    return redacted_url(location) if isinstance(location, str) else str(location)
