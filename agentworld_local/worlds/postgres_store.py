"""Shared worlds in PostgreSQL: every world of one database, for `awl serve` on several machines.

`AWL_WORLDS_DIR=postgresql://user:password@host:5432/database` (or the config file's
`[worlds] store`) keeps every world in that database: one set of tables for all worlds, keyed by
the world's name, with the SQLite store's rules (worlds/sqlite_store.py):

- versioned: `awl_world_meta` holds the format (worlds/store.py STORE_VERSION); a newer one is
  refused with one line, never rewritten;
- the first answer stored stays (`INSERT ... ON CONFLICT DO NOTHING`, then SELECT, in one
  transaction), samples beside each other;
- bounded per world: past `max_bytes` the least recently used answers go, down to 90 % of the
  bound; a world's writers take turns on its row in `awl_worlds` (PostgreSQL's row lock), as
  SQLite's writers take turns on the file;
- settings per world (`awl_worlds`), created on first use or by `create_world`.

The answer texts are kept as UTF-8 bytes (BYTEA): PostgreSQL's TEXT holds neither NUL nor a
lone surrogate, and a stored answer must come back byte-identical.

Errors are one WorldStoreError line that names the database without its password: a server
that refuses the connection, a wrong password, no such database, a connection lost mid-run
(awl connects again once, at once, and on every later call). The driver is psycopg 3 (the
`worlds-postgres` extra), imported here only, and only when a database is used.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from agentworld_local.errors import WorldStoreError
from agentworld_local.worlds.names import LOCATION_SETTING, redacted_url
from agentworld_local.worlds.sqlite_store import EVICT_TO, TOUCH_EVERY_S
from agentworld_local.worlds.store import same_settings, STORE_VERSION, StoredAnswer, StoreStats, WorldSettings

#: What to install for the driver.
INSTALL = "pip install 'agentworld-local[worlds-postgres]'"
#: A server that does not answer is given up after this long (libpq's connect_timeout).
CONNECT_TIMEOUT_S = 10
#: The advisory lock that makes creating the tables one process's job (any constant of ours).
_SCHEMA_LOCK = 0x61776C_776F726C  # "awl" "worl"

_TABLES = ("awl_world_meta", "awl_worlds", "awl_world_answers")
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS awl_world_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS awl_worlds ("
    " world TEXT PRIMARY KEY, shared_reads BOOLEAN NOT NULL, max_bytes BIGINT NOT NULL,"
    " bytes BIGINT NOT NULL DEFAULT 0, evicted BIGINT NOT NULL DEFAULT 0, created DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS awl_world_answers ("
    " world TEXT NOT NULL REFERENCES awl_worlds (world) ON DELETE CASCADE,"
    " key TEXT NOT NULL, sample INTEGER NOT NULL,"
    " raw_output BYTEA NOT NULL, thinking BYTEA NOT NULL, observation BYTEA NOT NULL,"
    " parse_method TEXT NOT NULL, finish TEXT NOT NULL,"
    " size BIGINT NOT NULL, created DOUBLE PRECISION NOT NULL, used DOUBLE PRECISION NOT NULL,"
    " PRIMARY KEY (world, key, sample))",
    "CREATE INDEX IF NOT EXISTS awl_world_answers_by_use ON awl_world_answers (world, used, created)",
)
_ANSWER = "raw_output, thinking, observation, parse_method, finish"
#: Removes the least recently used answers of a world (never the one just stored) until
#: `need` bytes are freed, and counts them in the world's row: one statement, in the server.
_EVICT = """
WITH ranked AS (
    SELECT key, sample, SUM(size) OVER (ORDER BY used, created, key, sample ROWS UNBOUNDED PRECEDING) - size AS before
    FROM awl_world_answers WHERE world = %(world)s AND NOT (key = %(key)s AND sample = %(sample)s)
), gone AS (
    DELETE FROM awl_world_answers AS a USING ranked AS r
    WHERE a.world = %(world)s AND a.key = r.key AND a.sample = r.sample AND r.before < %(need)s
    RETURNING a.size
)
UPDATE awl_worlds SET bytes = bytes - (SELECT COALESCE(SUM(size), 0) FROM gone),
                      evicted = evicted + (SELECT COUNT(*) FROM gone)
WHERE world = %(world)s
"""

T = TypeVar("T")


class Database:
    """One PostgreSQL URL: how to connect to it, and its errors said as one line without its password."""

    def __init__(self, url: str) -> None:
        self.url = url.strip()
        self.location = redacted_url(self.url)
        self._secrets = _secrets(self.url)

    def connect(self, *, again: bool = False) -> Any:
        """A new connection (autocommit: a transaction is asked for where one is meant).
        `again`: the last one was lost, and an error says so."""
        psycopg = _driver(self.location)
        given = _given(psycopg, self.url)
        try:
            return psycopg.connect(self.url, autocommit=True,
                                   **{key: value for key, value in _CONNECT_DEFAULTS.items() if key not in given})
        except psycopg.Error as error:
            raise self.failed(error, connecting=True, lost=again) from None

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A short-lived connection (listing, removing a world), closed after."""
        conn = self.connect()
        try:
            with self.said():
                yield conn
        finally:
            conn.close()

    @contextmanager
    def said(self) -> Iterator[None]:
        """psycopg's errors inside, said as WorldStoreError."""
        psycopg = _driver(self.location)
        try:
            yield
        except psycopg.Error as error:
            raise self.failed(error) from None

    def failed(self, error: Exception, *, connecting: bool = False, lost: bool = False) -> WorldStoreError:
        """`error` as one line, without the password; what to do next."""
        state = getattr(error, "sqlstate", None) or ""
        text = self._clean(str(error))
        lowered = text.lower()
        where = f"The shared worlds' database {self.location}"
        if state in ("28P01", "28000") or "password authentication failed" in lowered \
                or "no password supplied" in lowered or "authentication failed" in lowered:
            return WorldStoreError(f"{where} refused awl's login ({_reason(text)}).",
                                   f"Check the user and password in the URL ({LOCATION_SETTING}).")
        if state == "3D000" or ("database" in lowered and "does not exist" in lowered):
            name = urlsplit(self.location).path.lstrip("/") or "(the user's own)"
            return WorldStoreError(f"{where} cannot be used: there is no database `{name}` on that server.",
                                   f"Create it (`createdb {name}` there), or name an existing one in the URL "
                                   f"({LOCATION_SETTING}).")
        if state == "42501":
            return WorldStoreError(f"{where} refused awl ({_reason(text)}).",
                                   "Grant the user the right to create and write tables in that database "
                                   "(awl keeps its worlds in tables named awl_world*).")
        if state == "53100" or "no space left" in lowered:
            return WorldStoreError(f"{where} cannot be written: its disk is full.",
                                   "Free some space on the database server, or remove worlds (`awl worlds remove NAME`).")
        if lost:
            return WorldStoreError(f"The connection to the shared worlds' database {self.location} was lost and "
                                   f"could not be made again ({_reason(text)}).",
                                   "Check that PostgreSQL is running there; awl connects again on the next turn.")
        if connecting or state.startswith("08") or isinstance(error, _driver(self.location).OperationalError):
            return WorldStoreError(f"{where} cannot be reached ({_reason(text)}).",
                                   f"Start PostgreSQL there, or check the host and port in the URL ({LOCATION_SETTING}).")
        return WorldStoreError(f"{where} failed: {_reason(text)}.",
                               "Check the database server's log; awl connects again on the next turn.")

    def _clean(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


class PostgresWorldStore:
    """One process's connection to a world kept in PostgreSQL (thread-safe: one connection, one lock).

    A connection found broken is made again once, at once, and the statement run again (every
    statement here may run twice: a stored answer stays stored)."""

    def __init__(self, url: str, name: str, *, create_with: WorldSettings | None = None) -> None:
        self.database = Database(url)
        self.location = self.database.location
        self.name = name
        self._lock = threading.Lock()
        self._conn: Any = None
        #: Whether this store was connected before: a failure to connect again says it was lost.
        self._was_connected = False
        self.settings = WorldSettings()
        with self._lock:
            try:
                self.settings = self._run(lambda conn: self._open(conn, create_with))
            except BaseException:  # refused (a newer format, other settings): no connection left open
                if self._conn is not None:
                    self._drop()
                raise

    # -- the protocol ------------------------------------------------------------------

    def get(self, key: str, sample: int) -> StoredAnswer | None:
        def read(conn: Any) -> StoredAnswer | None:
            row = conn.execute(f"SELECT {_ANSWER}, used FROM awl_world_answers WHERE world = %s AND key = %s "
                               "AND sample = %s", (self.name, key, sample)).fetchone()
            if row is None:
                return None
            now = time.time()
            if now - row[5] > TOUCH_EVERY_S:
                conn.execute("UPDATE awl_world_answers SET used = %s WHERE world = %s AND key = %s AND sample = %s",
                             (now, self.name, key, sample))
            return _answer(row)

        with self._lock:
            return self._run(read)

    def put(self, key: str, sample: int, answer: StoredAnswer) -> StoredAnswer:
        texts = [text.encode("utf-8", "surrogatepass") for text in (answer.raw_output, answer.thinking, answer.observation)]

        def write(conn: Any) -> StoredAnswer:
            now = time.time()
            with conn.transaction():
                max_bytes = self._hold_world(conn)  # this world's writers take turns from here
                added = conn.execute(
                    "INSERT INTO awl_world_answers VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    (self.name, key, sample, *texts, answer.parse_method, answer.finish, answer.size, now, now)).rowcount
                if added:
                    total = conn.execute("UPDATE awl_worlds SET bytes = bytes + %s WHERE world = %s RETURNING bytes",
                                         (answer.size, self.name)).fetchone()[0]
                    if total > max_bytes:
                        conn.execute(_EVICT, {"world": self.name, "key": key, "sample": sample,
                                              "need": total - int(max_bytes * EVICT_TO)})
                row = conn.execute(f"SELECT {_ANSWER} FROM awl_world_answers WHERE world = %s AND key = %s "
                                   "AND sample = %s", (self.name, key, sample)).fetchone()
            return _answer(row)

        with self._lock:
            return self._run(write)

    def stats(self) -> StoreStats:
        def count(conn: Any) -> StoreStats:
            row = conn.execute("SELECT (SELECT COUNT(*) FROM awl_world_answers WHERE world = %s), bytes, evicted "
                               "FROM awl_worlds WHERE world = %s", (self.name, self.name)).fetchone()
            return StoreStats(*(int(value) for value in row)) if row else StoreStats(0, 0, 0)

        with self._lock:
            return self._run(count)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- inside ------------------------------------------------------------------------

    def _run(self, work: Callable[[Any], T]) -> T:
        """`work` on this store's connection (made when there is none); a connection found
        broken is made again once and `work` run again."""
        psycopg = _driver(self.location)
        fresh = self._conn is None
        if fresh:
            self._conn = self.database.connect(again=self._was_connected)
            self._was_connected = True
        try:
            return work(self._conn)
        except psycopg.Error as error:
            if not _broken(self._conn):
                raise self.database.failed(error) from None
            self._drop()
            if fresh:
                raise self.database.failed(error, lost=True) from None
        self._conn = self.database.connect(again=True)
        try:
            return work(self._conn)
        except psycopg.Error as error:
            lost = _broken(self._conn)
            if lost:
                self._drop()
            raise self.database.failed(error, lost=lost) from None

    def _drop(self) -> None:
        try:
            self._conn.close()
        except Exception:  # already gone
            pass
        self._conn = None

    def _open(self, conn: Any, create_with: WorldSettings | None) -> WorldSettings:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            present = [conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()[0] for table in _TABLES]
            version = _format(conn) if present[0] else None
            if version is not None and version > STORE_VERSION:
                raise WorldStoreError(
                    f"The shared worlds' database {self.location} was written by a newer awl (store format {version}; "
                    f"this awl reads {STORE_VERSION}).", "Upgrade awl, or keep this awl's worlds in another database.")
            if not all(present):
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute("INSERT INTO awl_world_meta VALUES ('format', %s) ON CONFLICT DO NOTHING",
                             (str(STORE_VERSION),))
            wanted = create_with or WorldSettings()
            conn.execute("INSERT INTO awl_worlds (world, shared_reads, max_bytes, created) VALUES (%s, %s, %s, %s) "
                         "ON CONFLICT DO NOTHING", (self.name, wanted.shared_reads, wanted.max_bytes, time.time()))
            shared_reads, max_bytes = conn.execute("SELECT shared_reads, max_bytes FROM awl_worlds WHERE world = %s",
                                                   (self.name,)).fetchone()
        settings = WorldSettings(shared_reads=bool(shared_reads), max_bytes=int(max_bytes))
        return same_settings(self.name, create_with, settings)

    def _hold_world(self, conn: Any) -> int:
        """Lock this world's row for the transaction; its bound. A world removed meanwhile
        (`awl worlds remove` elsewhere) comes back with the settings this process knows."""
        for _ in range(2):
            row = conn.execute("SELECT max_bytes FROM awl_worlds WHERE world = %s FOR UPDATE", (self.name,)).fetchone()
            if row is not None:
                return int(row[0])
            conn.execute("INSERT INTO awl_worlds (world, shared_reads, max_bytes, created) VALUES (%s, %s, %s, %s) "
                         "ON CONFLICT DO NOTHING",
                         (self.name, self.settings.shared_reads, self.settings.max_bytes, time.time()))
        return self.settings.max_bytes


def world_names(url: str) -> list[str]:
    """The worlds kept in the database at `url`, by name."""
    database = Database(url)
    with database.connection() as conn:
        if not conn.execute("SELECT to_regclass('awl_worlds') IS NOT NULL").fetchone()[0]:
            return []
        return [row[0] for row in conn.execute("SELECT world FROM awl_worlds ORDER BY world")]


def remove_world(url: str, name: str) -> bool:
    """Remove the world `name` and every answer it holds; False when there was none."""
    database = Database(url)
    with database.connection() as conn:
        if not conn.execute("SELECT to_regclass('awl_worlds') IS NOT NULL").fetchone()[0]:
            return False
        return conn.execute("DELETE FROM awl_worlds WHERE world = %s", (name,)).rowcount > 0


# -- the driver and its errors -------------------------------------------------------------

#: libpq's settings awl gives unless the URL gives its own: a server that does not answer, or
#: a connection that died without a word, is found out in seconds, not hours.
_CONNECT_DEFAULTS = {"application_name": "awl", "connect_timeout": CONNECT_TIMEOUT_S, "keepalives": 1, "keepalives_idle": 30,
                     "keepalives_interval": 10, "keepalives_count": 3}


def _driver(location: str) -> Any:
    try:
        import psycopg
    except ImportError:
        raise WorldStoreError(f"The shared worlds' database {location} needs PostgreSQL's driver (psycopg), which "
                              "is not installed.", f"Install it: {INSTALL}") from None
    return psycopg


def _given(psycopg: Any, url: str) -> dict[str, Any]:
    """The URL's own libpq settings, so that awl's defaults never override them (keywords win
    in psycopg.connect); a malformed URL is libpq's to say, when it connects."""
    try:
        return dict(psycopg.conninfo.conninfo_to_dict(url))
    except psycopg.Error:
        return {}


def _format(conn: Any) -> int | None:
    row = conn.execute("SELECT value FROM awl_world_meta WHERE name = 'format'").fetchone()
    try:
        return int(row[0]) if row else None
    except ValueError:
        return STORE_VERSION + 1  # not a format this awl wrote


def _answer(row: Any) -> StoredAnswer:
    return StoredAnswer(*(bytes(text).decode("utf-8", "surrogatepass") for text in row[:3]), row[3], row[4])


def _broken(conn: Any) -> bool:
    return conn is None or bool(conn.closed) or bool(getattr(conn, "broken", False))


def _reason(text: str) -> str:
    """libpq's message on one line: its first line, without libpq's `connection failed:` prefix
    or `connection to server at ... failed:` (the URL already names the server)."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "no reason given")
    for prefix in ("connection failed:", "connection is bad:"):
        if line.lower().startswith(prefix):
            line = line[len(prefix):].strip()
    if line.lower().startswith("connection to server") and "failed:" in line:
        line = line.split("failed:", 1)[1].strip()
    if "fatal:" in line.lower():
        line = line[line.lower().index("fatal:") + len("fatal:"):].strip()
    return line.rstrip(".") or "no reason given"


def _secrets(url: str) -> list[str]:
    """The password as the URL spells it and as it means it (percent-decoded), longest first."""
    found: set[str] = set()
    try:
        parts = urlsplit(url)
        if parts.password:
            found.update({parts.password, unquote(parts.password)})
        for pair in parts.query.split("&"):
            key, _, value = pair.partition("=")
            if key.strip().lower() == "password" and value:
                found.update({value, unquote(value)})
    except ValueError:  # an unparsable URL: nothing of it is shown but its redacted form
        pass
    return sorted((secret for secret in found if secret), key=len, reverse=True)
