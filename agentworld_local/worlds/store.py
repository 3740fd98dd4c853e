"""What a shared world's store keeps, and the one small interface every store offers.

A store maps a key (worlds/keys.py: everything that shapes a prediction) and a sample number
(0 for a turn's first answer, n for its n-th regenerate) to the answer the model gave. The
first answer stored under a key stays: `put` returns what the store holds, so two sessions
(or two processes) that predicted the same key at once both go on with one answer.

SQLite in the world's folder (worlds/sqlite_store.py) is the store for one machine;
PostgreSQL (worlds/postgres_store.py) the store for several, with the same protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from agentworld_local.errors import WorldStoreError

#: The store's format. A store written by a newer format is refused, never rewritten.
STORE_VERSION = 1
#: The default bound of a world's store (`awl worlds create --max-size`).
DEFAULT_MAX_BYTES = 1024**3


@dataclass(frozen=True)
class StoredAnswer:
    """One prediction as the turn record holds it."""

    raw_output: str
    thinking: str
    observation: str
    parse_method: str
    finish: str

    @property
    def size(self) -> int:
        """What the answer costs the store's bound (its text, as UTF-8)."""
        return sum(len(text.encode("utf-8", "surrogatepass"))
                   for text in (self.raw_output, self.thinking, self.observation))


@dataclass(frozen=True)
class WorldSettings:
    """What a world was created with (kept in the store, the same for every session)."""

    #: Actions that only read (worlds/reads.py) are answered as the world first answered them,
    #: whatever the episode's history.
    shared_reads: bool = False
    #: The store's bound in bytes of answer text; past it the least recently used answers go.
    max_bytes: int = DEFAULT_MAX_BYTES


def same_settings(name: str, wanted: WorldSettings | None, settings: WorldSettings) -> WorldSettings:
    """`settings` (a world's own), after checking a creation that asked for `wanted` asked for them."""
    if wanted is not None and wanted != settings:
        raise WorldStoreError(f"The shared world `{name}` exists with other settings "
                              f"(shared reads {'on' if settings.shared_reads else 'off'}, "
                              f"at most {settings.max_bytes:,} bytes).",
                              "Use it as it is, or create a world with another name.")
    return settings


@dataclass(frozen=True)
class StoreStats:
    answers: int
    bytes: int
    evicted: int


class WorldStore(Protocol):
    """A shared world's answers. Safe to call from several threads and several processes."""

    settings: WorldSettings
    #: Where the store is, as a user would find it (a file, a database URL without its password).
    location: str

    def get(self, key: str, sample: int) -> StoredAnswer | None:
        """The answer stored under (`key`, `sample`), or None."""

    def put(self, key: str, sample: int, answer: StoredAnswer) -> StoredAnswer:
        """Store `answer` unless one is there already; return the one the store holds."""

    def stats(self) -> StoreStats: ...

    def close(self) -> None: ...
