"""Shared worlds: the same actions meet the same world, across sessions, processes and restarts.

A session joins a world by name (`--shared-world NAME`); its turns are looked up in the
world's store (worlds/keys.py says what a key holds) and predicted only when the world has not
seen them. See docs/worlds.md.
"""

from agentworld_local.worlds.names import check_world_name, world_folder, worlds_dir
from agentworld_local.worlds.shared import SharedWorld, create_world, shared_world
from agentworld_local.worlds.store import StoredAnswer, WorldSettings

__all__ = [
    "SharedWorld", "StoredAnswer", "WorldSettings", "check_world_name", "create_world", "shared_world",
    "world_folder", "worlds_dir",
]
