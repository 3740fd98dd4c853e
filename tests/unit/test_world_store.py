"""A shared world's store: first answer stays, versioned, bounded, safe with several processes,
and a damaged or foreign file is one clear error. The rules every store keeps run over both
kinds: SQLite in a folder, and a real PostgreSQL server the tests start (tests/pgserver.py;
skipped, saying why, where PostgreSQL is not installed); test_world_store_postgres.py has the
database's own."""

from __future__ import annotations

import multiprocessing
import sqlite3

import pytest

from agentworld_local.errors import InputError, WorldStoreError
from agentworld_local.worlds import check_world_name
from agentworld_local.worlds.keys import WorldInputs
from agentworld_local.worlds.locations import open_store
from agentworld_local.worlds.sqlite_store import FILE_NAME, SqliteWorldStore
from agentworld_local.worlds.store import STORE_VERSION, StoredAnswer, WorldSettings
from tests.pgserver import postgres_server, postgres_url  # noqa: F401 (fixtures)


def an_answer(text: str, size: int = 0) -> StoredAnswer:
    return StoredAnswer(f"<predicted_observation>{text}</predicted_observation>", "", text + "x" * size, "tag", "stop")


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request, tmp_path):
    """Where the worlds are kept: a folder, or a database of its own on a real PostgreSQL server."""
    return tmp_path if request.param == "sqlite" else request.getfixturevalue("postgres_url")


def test_the_first_answer_stored_stays_and_samples_sit_beside_it(location):
    store = open_store(location, "w")
    first = store.put("k", 0, an_answer("one"))
    assert first == an_answer("one")
    assert store.put("k", 0, an_answer("two")) == an_answer("one")  # a later writer gets the world's answer
    assert store.put("k", 1, an_answer("again")) == an_answer("again")  # a regenerate: another sample
    assert store.get("k", 0) == an_answer("one") and store.get("k", 1) == an_answer("again")
    assert store.get("k", 2) is None and store.get("other", 0) is None
    store.close()
    reopened = open_store(location, "w")  # a restart reads the same world
    assert reopened.get("k", 0) == an_answer("one")
    assert reopened.stats().answers == 2


def test_the_store_carries_its_version_and_refuses_a_newer_one(tmp_path):
    SqliteWorldStore(tmp_path, "w").close()
    with sqlite3.connect(tmp_path / FILE_NAME) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == STORE_VERSION
        db.execute(f"PRAGMA user_version = {STORE_VERSION + 1}")
    with pytest.raises(WorldStoreError, match="newer awl"):
        SqliteWorldStore(tmp_path, "w")


def test_a_damaged_store_is_one_clear_error(tmp_path):
    (tmp_path / FILE_NAME).write_bytes(b"this is not a database" * 100)
    with pytest.raises(WorldStoreError, match="damaged") as raised:
        SqliteWorldStore(tmp_path, "w")
    assert "Move the file aside" in raised.value.one_line()


def test_the_store_is_bounded_and_evicts_the_least_recently_used(location, monkeypatch):
    store = open_store(location, "w", create_with=WorldSettings(max_bytes=10_000))
    for index in range(30):
        store.put(f"k{index}", 0, an_answer(str(index), size=1_000))
    stats = store.stats()
    assert stats.bytes <= 10_000 and stats.evicted > 0
    assert store.get("k29", 0) is not None  # the newest stays
    assert store.get("k0", 0) is None  # the oldest went first
    # Down to 90 % of the bound, not further: about 8 answers of ~1 KB stay.
    assert stats.answers >= 7 and stats.answers + stats.evicted == 30
    # A read marks an answer used: the least recently *used* goes next, not the oldest written.
    survivors = [index for index in range(30) if store.get(f"k{index}", 0) is not None]
    for module in ("sqlite_store", "postgres_store"):
        monkeypatch.setattr(f"agentworld_local.worlds.{module}.TOUCH_EVERY_S", -1.0)
    assert store.get(f"k{survivors[0]}", 0) is not None  # read now: the most recently used of them
    for index in range(30, 33):
        store.put(f"k{index}", 0, an_answer(str(index), size=1_000))
    assert store.get(f"k{survivors[0]}", 0) is not None and store.get(f"k{survivors[1]}", 0) is None


def test_settings_are_the_worlds_own(location):
    open_store(location, "w", create_with=WorldSettings(shared_reads=True, max_bytes=2**20)).close()
    assert open_store(location, "w").settings == WorldSettings(shared_reads=True, max_bytes=2**20)
    with pytest.raises(WorldStoreError, match="other settings"):
        open_store(location, "w", create_with=WorldSettings(shared_reads=False))
    # Another world beside it has its own.
    assert open_store(location, "v").settings == WorldSettings()


def _writer(location, worker: int, keys: int, ready, results) -> None:
    store = open_store(location, "w")
    ready.wait()
    held = [store.put(f"k{index}", 0, an_answer(f"{worker}-{index}")).observation for index in range(keys)]
    results.put(held)


def test_several_processes_writing_at_once_agree_on_every_answer(location):
    context = multiprocessing.get_context("spawn")
    ready, results = context.Event(), context.Queue()
    workers = [context.Process(target=_writer, args=(location, worker, 60, ready, results)) for worker in range(4)]
    for worker in workers:
        worker.start()
    ready.set()
    seen = [results.get() for _ in workers]  # no deadline: pytest-timeout stops a hang
    for worker in workers:
        worker.join()
        assert worker.exitcode == 0
    assert all(held == seen[0] for held in seen)  # every process went on with the same answer per key
    assert open_store(location, "w").stats().answers == 60


@pytest.mark.parametrize("name", ["../x", "a/b", "a\\b", "C:x", ".", "..", ".hidden", "", " ", "x" * 65, "a\0b",
                                  "end.", 7, None, "\ud800"])
def test_a_world_name_is_never_a_path(name):
    with pytest.raises(InputError, match="not a shared world name"):
        check_world_name(name)


def test_a_key_holds_every_earlier_turn_and_the_settings():
    inputs = WorldInputs("m", "terminal", "sys", {"temperature": 0.6}, "off", 0)
    key = inputs.turn_key([("p1", "o1")], "p2")
    assert key == inputs.turn_key([("p1", "o1")], "p2")
    assert key != inputs.turn_key([("p1", "o1*")], "p2")  # another earlier observation: another world state
    assert key != WorldInputs("m", "terminal", "sys", {"temperature": 0.6}, "off", 1).turn_key([("p1", "o1")], "p2")
    assert key != WorldInputs("m", "terminal", "sys", {"temperature": 0.7}, "off", 0).turn_key([("p1", "o1")], "p2")
    assert key != WorldInputs("other", "terminal", "sys", {"temperature": 0.6}, "off", 0).turn_key([("p1", "o1")], "p2")
    # A read's key holds no seed and no history.
    assert inputs.read_key("goto x") == WorldInputs("m", "terminal", "sys", {"temperature": 0.6}, "off", 9).read_key("goto x")


def test_an_answer_with_a_lone_surrogate_or_a_nul_comes_back_byte_identical(location):
    store = open_store(location, "w")
    odd = StoredAnswer("raw \ud800 \0 end", "think \udfff", "obs \ud800\0", "tag", "stop")
    assert store.put("k", 0, odd) == odd
    assert store.get("k", 0) == odd
    store.close()
