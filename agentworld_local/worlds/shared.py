"""A shared world as one process sees it: its store, and the turns being predicted for it now.

The first session to reach a key predicts it; another session of this process that reaches the
same key meanwhile waits for that answer instead of predicting it again (a GRPO group's
rollouts reach their common first turns together: one model turn, not eight). Across processes
the store decides: the first answer stored stays, and a process that predicted the same key at
the same moment goes on with the stored one.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from agentworld_local.worlds.locations import open_store, store_identity
from agentworld_local.worlds.names import check_world_name, worlds_location
from agentworld_local.worlds.store import StoredAnswer, WorldSettings, WorldStore

#: How often a session waiting for another's answer looks at its own cancel (seconds).
_CANCEL_CHECK_S = 0.05


@dataclass(frozen=True)
class WorldTurn:
    """Where one turn's answer comes from. `answer`: the stored one (None: this session predicts
    it and must `keep` or `release` it). `source`: "store" (this very turn was seen before),
    "read" (a read the world answered before, worlds/reads.py) or "model"."""

    world: SharedWorld
    key: str
    sample: int
    read_key: str | None
    answer: StoredAnswer | None
    source: str

    def keep(self, answer: StoredAnswer) -> StoredAnswer:
        """Store what the model answered; returns what the world holds (another process's
        answer when it stored the same key first)."""
        kept = self.world.store.put(self.key, self.sample, answer)
        if self.read_key is not None:
            self.world.store.put(self.read_key, 0, kept)
        return kept

    def release(self) -> None:
        """Done with this key (kept, cancelled or failed): whoever waits for it looks again."""
        if self.answer is None:
            self.world._finished(self.key, self.sample)


class SharedWorld:
    def __init__(self, name: str, store: WorldStore) -> None:
        self.name = name
        self.store = store
        self._lock = threading.Lock()
        self._predicting: dict[tuple[str, int], threading.Event] = {}

    @property
    def settings(self) -> WorldSettings:
        return self.store.settings

    def turn(self, key: str, sample: int, read_key: str | None,
             cancel: threading.Event | None = None) -> WorldTurn | None:
        """Where the turn (`key`, `sample`) gets its answer; None when `cancel` was set while it
        waited for another session's answer. `read_key`: the turn only reads (shared reads on)."""
        ident = (key, sample)
        read_key = read_key if self.settings.shared_reads and sample == 0 else None
        while True:
            with self._lock:
                found = self._stored(key, sample, read_key)
                if found is not None:
                    return found
                waiting = self._predicting.get(ident)
                if waiting is None:
                    self._predicting[ident] = threading.Event()
                    return WorldTurn(self, key, sample, read_key, None, "model")
            while not waiting.wait(_CANCEL_CHECK_S):
                if cancel is not None and cancel.is_set():
                    return None

    def _stored(self, key: str, sample: int, read_key: str | None) -> WorldTurn | None:
        answer = self.store.get(key, sample)
        if answer is not None:
            return WorldTurn(self, key, sample, None, answer, "store")
        if read_key is not None and (read := self.store.get(read_key, 0)) is not None:
            # This prefix meets the read's answer from now on, too.
            return WorldTurn(self, key, sample, None, self.store.put(key, sample, read), "read")
        return None

    def _finished(self, key: str, sample: int) -> None:
        with self._lock:
            event = self._predicting.pop((key, sample), None)
        if event is not None:
            event.set()


_open: dict[str, SharedWorld] = {}
_open_lock = threading.Lock()


def shared_world(name: str) -> SharedWorld:
    """The world `name` (created with the default settings on first use), one per process."""
    return _world(check_world_name(name), None)


def create_world(name: str, settings: WorldSettings) -> SharedWorld:
    """A new world with `settings`; an existing one must have the same (WorldStoreError otherwise)."""
    return _world(check_world_name(name), settings)


def _world(name: str, create_with: WorldSettings | None) -> SharedWorld:
    location = worlds_location()  # a folder, or a PostgreSQL URL (worlds/locations.py)
    ident = store_identity(location, name)
    with _open_lock:
        world = _open.get(ident)
        if world is None:
            world = _open[ident] = SharedWorld(name, open_store(location, name, create_with=create_with))
        elif create_with is not None and create_with != world.settings:
            open_store(location, name, create_with=create_with).close()  # raises: other settings
        return world
