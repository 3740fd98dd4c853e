"""A shared world's store in SQLite: `<world folder>/world.sqlite3`.

SQLite because it is made for this: one file, transactions, and several processes writing at
once (write-ahead log; a writer waits for another's short transaction instead of failing).
`PRAGMA user_version` carries the format (worlds/store.py STORE_VERSION). Bounded: past
`max_bytes` of answer text the least recently used answers are removed (a turn that reaches
an evicted key is predicted again, and stored again).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
import threading
import time
from pathlib import Path

from agentworld_local.errors import WorldStoreError
from agentworld_local.files import os_error_text
from agentworld_local.worlds.store import same_settings, STORE_VERSION, StoredAnswer, StoreStats, WorldSettings

FILE_NAME = "world.sqlite3"
#: A writer waits this long for another process's transaction (they last milliseconds).
BUSY_TIMEOUT_S = 120.0
#: Eviction frees down to this share of the bound, so it does not run on every later turn.
EVICT_TO = 0.9
#: A read marks an answer used at most this often (a read is not a write on every turn).
TOUCH_EVERY_S = 60.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS answers (
    key TEXT NOT NULL, sample INTEGER NOT NULL,
    raw_output TEXT NOT NULL, thinking TEXT NOT NULL, observation TEXT NOT NULL,
    parse_method TEXT NOT NULL, finish TEXT NOT NULL,
    size INTEGER NOT NULL, created REAL NOT NULL, used REAL NOT NULL,
    PRIMARY KEY (key, sample)
);
CREATE INDEX IF NOT EXISTS answers_by_use ON answers (used);
"""


class SqliteWorldStore:
    """One process's connection to a world's store (thread-safe: one lock around it)."""

    def __init__(self, folder: Path, name: str, *, create_with: WorldSettings | None = None) -> None:
        self.path = folder / FILE_NAME
        self.location = str(self.path)
        self.name = name
        self._lock = threading.Lock()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                       check_same_thread=False)
        except OSError as error:
            raise self._cannot(f"cannot be created: {os_error_text(error)}") from None
        except sqlite3.Error as error:
            raise self._failed(error) from None
        try:
            self.settings = self._open(create_with)
        except sqlite3.Error as error:
            self._db.close()
            raise self._failed(error) from None
        except BaseException:
            self._db.close()
            raise

    # -- the protocol ------------------------------------------------------------------

    def get(self, key: str, sample: int) -> StoredAnswer | None:
        with self._guard():
            row = self._db.execute(
                "SELECT raw_output, thinking, observation, parse_method, finish, used FROM answers "
                "WHERE key = ? AND sample = ?", (key, sample)).fetchone()
            if row is None:
                return None
            now = time.time()
            if now - row[5] > TOUCH_EVERY_S:
                self._db.execute("UPDATE answers SET used = ? WHERE key = ? AND sample = ?", (now, key, sample))
            return _answer(row[:5])

    def put(self, key: str, sample: int, answer: StoredAnswer) -> StoredAnswer:
        with self._guard():
            now = time.time()
            self._db.execute("BEGIN IMMEDIATE")
            try:
                added = self._db.execute(
                    "INSERT OR IGNORE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (key, sample, _bytes(answer.raw_output), _bytes(answer.thinking), _bytes(answer.observation),
                     answer.parse_method, answer.finish, answer.size, now, now)).rowcount
                if added:
                    total = self._add_meta("bytes", answer.size)
                    if total > self.settings.max_bytes:
                        self._evict(total, keep=(key, sample))
                row = self._db.execute(
                    "SELECT raw_output, thinking, observation, parse_method, finish FROM answers "
                    "WHERE key = ? AND sample = ?", (key, sample)).fetchone()
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            return _answer(row)

    def stats(self) -> StoreStats:
        with self._guard():
            answers = self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
            return StoreStats(answers, self._meta_int("bytes"), self._meta_int("evicted"))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- inside ------------------------------------------------------------------------

    def _open(self, create_with: WorldSettings | None) -> WorldSettings:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > STORE_VERSION:
            raise WorldStoreError(
                f"The shared world `{self.name}` was written by a newer awl (store format {version}; this awl "
                f"reads {STORE_VERSION}).", "Upgrade awl, or use another world name.")
        self._db.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer
        # No fsync per answer: with the log, a crash of awl loses nothing and a power cut at most
        # the last answers (predicted again when reached); each turn's session file is synced.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for statement in filter(str.strip, _SCHEMA.split(";")):
                self._db.execute(statement)
            stored = dict(self._db.execute("SELECT name, value FROM meta").fetchall())
            if not stored:
                wanted = create_with or WorldSettings()
                self._db.executemany("INSERT INTO meta VALUES (?, ?)", [
                    ("shared_reads", str(int(wanted.shared_reads))), ("max_bytes", str(wanted.max_bytes)),
                    ("bytes", "0"), ("evicted", "0"), ("created", str(time.time()))])
                self._db.execute(f"PRAGMA user_version = {STORE_VERSION}")
                stored = dict(self._db.execute("SELECT name, value FROM meta").fetchall())
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        settings = WorldSettings(shared_reads=stored.get("shared_reads") == "1",
                                 max_bytes=int(stored.get("max_bytes", "0") or 0))
        return same_settings(self.name, create_with, settings)

    def _add_meta(self, name: str, amount: int) -> int:
        self._db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE name = ?", (amount, name))
        return self._meta_int(name)

    def _meta_int(self, name: str) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return int(row[0]) if row else 0

    def _evict(self, total: int, *, keep: tuple[str, int]) -> None:
        """Remove the least recently used answers (never the one just stored) until the store
        is back under EVICT_TO of its bound."""
        target = int(self.settings.max_bytes * EVICT_TO)
        freed, removed = 0, []
        for key, sample, size in self._db.execute("SELECT key, sample, size FROM answers ORDER BY used, created"):
            if total - freed <= target:
                break
            if (key, sample) != keep:
                removed.append((key, sample))
                freed += size
        self._db.executemany("DELETE FROM answers WHERE key = ? AND sample = ?", removed)
        self._add_meta("bytes", -freed)
        self._add_meta("evicted", len(removed))

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """The store's lock, with SQLite's errors said as WorldStoreError."""
        with self._lock:
            try:
                yield
            except sqlite3.Error as error:
                raise self._failed(error) from None

    def _cannot(self, what: str) -> WorldStoreError:
        return WorldStoreError(f"The shared world `{self.name}`'s store {self.path} {what}.",
                               "Free some space or check the folder's permissions (AWL_WORLDS_DIR moves it).")

    def _failed(self, error: sqlite3.Error) -> WorldStoreError:
        text = str(error)
        if "full" in text:
            return self._cannot("cannot be written: the disk is full")
        if isinstance(error, sqlite3.DatabaseError) and not isinstance(error, sqlite3.OperationalError) \
                or "malformed" in text or "not a database" in text:
            return WorldStoreError(f"The shared world `{self.name}`'s store {self.path} is damaged ({text}).",
                                   "Move the file aside to start the world anew, or use another world name.")
        return self._cannot(f"failed: {text}")


def _bytes(text: str) -> bytes:
    """An answer's text as stored: UTF-8 bytes that keep a lone surrogate (a model's text may
    hold one), so it comes back byte-identical."""
    return text.encode("utf-8", "surrogatepass")


def _answer(row: tuple) -> StoredAnswer:
    texts = [value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value for value in row[:3]]
    return StoredAnswer(*texts, *row[3:5])
