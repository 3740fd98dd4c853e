"""Shared worlds kept in PostgreSQL (worlds/postgres_store.py), against a real server the tests
start (tests/pgserver.py; skipped, saying why, where PostgreSQL is not installed).

test_world_store.py runs the rules every store keeps over this one too (first answer stays,
samples, the bound, settings, several processes). Here: the database's own (one set of tables
for every world, its format, threads), two `awl serve`-like processes meeting one world, the
faces (`awl worlds`, `awl run`), and every failure as one line that never shows the password."""

from __future__ import annotations

import multiprocessing
import os
import threading
import traceback
from pathlib import Path

import pytest

from agentworld_local.errors import InputError, WorldStoreError
from agentworld_local.worlds.locations import open_store, remove_world, world_exists, world_names
from agentworld_local.worlds.names import redacted_url, worlds_location
from agentworld_local.worlds.store import STORE_VERSION, StoredAnswer, WorldSettings
from tests.cli.helpers import assert_one_line_error, awl, awl_env, scripted_model
from tests.pgserver import PASSWORD, postgres_server, postgres_url, quoted, started_server  # noqa: F401 (fixtures)

SECRETS = (PASSWORD, quoted(PASSWORD), "wrong-Pa55word")


def an_answer(text: str) -> StoredAnswer:
    return StoredAnswer(f"<predicted_observation>{text}</predicted_observation>", "", text, "tag", "stop")


def psycopg_connect(url: str):
    import psycopg

    return psycopg.connect(url, autocommit=True)


def assert_secret_kept(error: BaseException) -> None:
    """Not in the message, the hint, or what a traceback of it would show (no chained driver error)."""
    chained = [link for link in (error.__cause__, None if error.__suppress_context__ else error.__context__) if link]
    shown = "\n".join([str(error), getattr(error, "one_line", lambda: "")(), repr(error),
                       *("".join(traceback.format_exception_only(link)) for link in (error, *chained))])
    for secret in SECRETS:
        assert secret not in shown, shown


# -- the database's own ---------------------------------------------------------------------

def test_the_location_is_the_url_without_its_password(postgres_url):
    store = open_store(postgres_url, "w")
    assert store.location == redacted_url(postgres_url) and PASSWORD not in store.location
    assert store.location.startswith("postgresql://awl@127.0.0.1:")
    assert redacted_url("postgresql://u:p%40ss@db:5432/w?sslmode=require&password=zz") == \
        "postgresql://u@db:5432/w?sslmode=require"


def test_every_answer_comes_back_byte_identical(postgres_url):
    store = open_store(postgres_url, "w")
    odd = StoredAnswer("nul \x00 and a lone \ud800 surrogate", "думаю 🤔", "é\r\n\t", "json", "length")
    assert store.put("k", 0, odd) == odd
    assert open_store(postgres_url, "w").get("k", 0) == odd


def test_the_database_carries_its_format_and_refuses_a_newer_one(postgres_url):
    open_store(postgres_url, "w").put("k", 0, an_answer("kept"))
    with psycopg_connect(postgres_url) as conn:
        assert conn.execute("SELECT value FROM awl_world_meta WHERE name = 'format'").fetchone()[0] == str(STORE_VERSION)
        conn.execute("UPDATE awl_world_meta SET value = %s WHERE name = 'format'", (str(STORE_VERSION + 1),))
    with pytest.raises(WorldStoreError, match="newer awl") as raised:
        open_store(postgres_url, "other")
    assert "Upgrade awl" in raised.value.one_line()
    assert_secret_kept(raised.value)
    with psycopg_connect(postgres_url) as conn:  # never rewritten
        assert conn.execute("SELECT value FROM awl_world_meta WHERE name = 'format'").fetchone()[0] == str(STORE_VERSION + 1)
        assert conn.execute("SELECT COUNT(*) FROM awl_world_answers").fetchone()[0] == 1


def test_worlds_share_the_tables_and_keep_their_own_answers(postgres_url):
    first, second = open_store(postgres_url, "first"), open_store(postgres_url, "second",
                                                                    create_with=WorldSettings(max_bytes=2**20))
    first.put("k", 0, an_answer("one"))
    second.put("k", 0, an_answer("two"))
    assert first.get("k", 0) == an_answer("one") and second.get("k", 0) == an_answer("two")
    assert world_names(postgres_url) == ["first", "second"]
    assert world_exists("second", postgres_url) and not world_exists("third", postgres_url)
    assert remove_world("second", postgres_url) and not remove_world("second", postgres_url)
    assert world_names(postgres_url) == ["first"] and first.get("k", 0) == an_answer("one")
    assert second.get("k", 0) is None  # its answers went with it
    # A process still in the removed world goes on: the world comes back with the settings it knew.
    assert second.put("k", 1, an_answer("again")) == an_answer("again")
    assert world_names(postgres_url) == ["first", "second"] and second.stats().answers == 1
    assert open_store(postgres_url, "second").settings == WorldSettings(max_bytes=2**20)


def test_an_empty_database_has_no_worlds(postgres_url):
    assert world_names(postgres_url) == [] and not remove_world("w", postgres_url)


def test_threads_sharing_one_store_agree_on_every_answer(postgres_url):
    store = open_store(postgres_url, "w")
    barrier, seen = threading.Barrier(8), {}

    def writer(worker: int) -> None:
        barrier.wait()
        seen[worker] = [store.put(f"k{index}", 0, an_answer(f"{worker}-{index}")).observation for index in range(40)]

    threads = [threading.Thread(target=writer, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 8 and all(held == seen[0] for held in seen.values())
    assert store.stats().answers == 40


def test_a_connection_lost_mid_run_is_made_again_at_once(postgres_url):
    store = open_store(postgres_url, "w")
    store.put("k", 0, an_answer("kept"))
    with psycopg_connect(postgres_url) as admin:
        assert admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchall()
    assert store.get("k", 0) == an_answer("kept")
    assert store.put("k", 1, an_answer("new")) == an_answer("new")


def test_a_server_gone_mid_run_is_one_line_and_awl_connects_again_when_it_is_back():
    server = started_server()
    try:
        url = server.create_database()
        store = open_store(url, "w")
        store.put("k", 0, an_answer("kept"))
        server.stop("fast")
        for call in (lambda: store.get("k", 0), lambda: store.put("k", 1, an_answer("x")), store.stats):
            with pytest.raises(WorldStoreError, match="was lost and could not be made again") as raised:
                call()
            assert "\n" not in raised.value.one_line() and "Check that PostgreSQL is running" in raised.value.one_line()
            assert_secret_kept(raised.value)
        server.start(same_port=True)
        assert store.get("k", 0) == an_answer("kept")
    finally:
        server.remove()


# -- hostile: every failure is one line without the password ------------------------------

@pytest.mark.parametrize("case", ["wrong password", "closed port", "no database", "password parameter"])
def test_a_database_awl_cannot_use_is_one_line_that_never_shows_the_password(postgres_server, case):
    base = postgres_server.url()
    url, said = {
        "wrong password": (postgres_server.url(password="wrong-Pa55word"), "refused awl's login"),
        "closed port": (postgres_server.url(port=_closed_port()), "cannot be reached"),
        "no database": (postgres_server.url("no_such_db"), "there is no database `no_such_db`"),
        "password parameter": (base.replace(f":{quoted(PASSWORD)}@", "@") + "?password=wrong-Pa55word",
                               "refused awl's login"),
    }[case]
    for attempt in (lambda: open_store(url, "w"), lambda: world_names(url), lambda: remove_world("w", url)):
        with pytest.raises(WorldStoreError) as raised:
            attempt()
        line = raised.value.one_line()
        assert said in line and "\n" not in line and redacted_url(url) in line
        assert_secret_kept(raised.value)


def _closed_port() -> int:
    from tests.pgserver import free_port

    return free_port()  # nothing listens there once the probe has closed


def test_a_missing_driver_is_one_line_that_says_what_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(WorldStoreError) as raised:
        open_store("postgresql://awl:wrong-Pa55word@db.example:5432/worlds", "w")
    assert "pip install 'agentworld-local[worlds-postgres]'" in raised.value.one_line()
    assert "postgresql://awl@db.example:5432/worlds" in raised.value.one_line()
    assert_secret_kept(raised.value)


# -- where the worlds are: AWL_WORLDS_DIR, the config file ------------------------------------

def test_the_location_comes_from_the_environment_then_the_config_file(tmp_path, monkeypatch):
    monkeypatch.setenv("AWL_HOME", str(tmp_path))
    monkeypatch.delenv("AWL_WORLDS_DIR", raising=False)
    (tmp_path / "config").mkdir()
    config = tmp_path / "config" / "config.toml"
    config.write_text('version = 1\n[worlds]\nstore = "postgresql://awl:wrong-Pa55word@db:5432/worlds"\n')
    assert worlds_location() == "postgresql://awl:wrong-Pa55word@db:5432/worlds"
    config.write_text('version = 1\n[worlds]\nstore = "shared-worlds"\n')
    assert worlds_location() == tmp_path / "config" / "shared-worlds"  # a folder, read from the file's own
    monkeypatch.setenv("AWL_WORLDS_DIR", "postgres://u@h/db")
    assert worlds_location() == "postgres://u@h/db"  # the environment wins
    monkeypatch.setenv("AWL_WORLDS_DIR", "mysql://u:wrong-Pa55word@h/db")
    with pytest.raises(InputError, match="neither a folder nor a PostgreSQL URL") as raised:
        worlds_location()
    assert_secret_kept(raised.value)
    config.write_text("version = 1\n[worlds]\nstore = 3\n")
    monkeypatch.delenv("AWL_WORLDS_DIR")
    with pytest.raises(InputError, match="worlds.store"):
        worlds_location()


# -- two `awl serve`-like processes, and the faces ---------------------------------------------

ACTIONS = ["ls -la", "cat README.md", "pwd", "whoami"]


def _player(url: str, world: str, prefix: str, folder: str, ready, results) -> None:
    """One process of its own, as `awl serve --shared-world` runs a session: a scripted model
    that answers `prefix-N`, playing ACTIONS in the world kept at `url`."""
    os.environ["AWL_WORLDS_DIR"] = url
    from agentworld_local.domains import get_domain
    from agentworld_local.engine import events
    from agentworld_local.engine.scripted import ScriptedBackend
    from agentworld_local.engine.settings import SessionSettings
    from agentworld_local.engine.world import WORLD_KEY, World
    from agentworld_local.session.core import Session

    model = ScriptedBackend([f"<think>\nt\n</think>\n<predicted_observation>\n{prefix}-{index}\n</predicted_observation>"
                             for index in range(len(ACTIONS))], name="world-model")
    session = Session.create(World(model, get_domain("terminal"), SessionSettings(seed=0, shared_world=world)),
                             Path(folder) / f"{prefix}.jsonl")
    ready.wait()
    seen = []
    for action in ACTIONS:
        finished = list(session.step(action))[-1]
        assert isinstance(finished, events.TurnFinished), finished
        seen.append((finished.record.observation, finished.record.extra[WORLD_KEY]["from"]))
    session.close()
    results.put((prefix, seen, model.calls))


def test_two_processes_in_one_world_meet_identical_observations(postgres_url, tmp_path):
    context = multiprocessing.get_context("spawn")
    ready, results = context.Event(), context.Queue()
    players = [context.Process(target=_player, args=(postgres_url, "grpo-pg", prefix, str(tmp_path), ready, results))
               for prefix in ("A", "B")]
    for player in players:
        player.start()
    ready.set()  # both play at once: where both predicted a turn, the first stored stays
    played = dict((prefix, (seen, calls)) for prefix, seen, calls in (results.get(timeout=600) for _ in players))
    for player in players:
        player.join(timeout=600)
        assert player.exitcode == 0
    first, second = ([observation for observation, _ in played[prefix][0]] for prefix in ("A", "B"))
    assert first == second
    # A player's model numbers its answers by its own calls: one that took earlier turns from the
    # store answers turn `index` with a lower number (B-0 at turn 1, when A stored turn 0 first).
    assert all(observation in {f"{prefix}-{call}" for prefix in "AB" for call in range(index + 1)}
               for index, observation in enumerate(first))
    # A third process later, with a model that would answer otherwise, meets the same world, all stored.
    late = context.Process(target=_player, args=(postgres_url, "grpo-pg", "C", str(tmp_path), ready, results))
    late.start()
    _, seen, calls = results.get(timeout=600)
    late.join(timeout=600)
    assert [observation for observation, _ in seen] == first and calls == 0
    assert {source for _, source in seen} == {"store"}


def test_awl_worlds_and_awl_run_keep_worlds_in_the_database(postgres_url, tmp_path):
    home = tmp_path / "home"
    env = awl_env(home, AWL_WORLDS_DIR=postgres_url)
    shown = redacted_url(postgres_url)

    def run(*args: str, stdin: str | None = None):
        done = awl(*args, home=home, env=env, stdin=stdin)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        for secret in SECRETS:
            assert secret not in done.stdout + done.stderr
        return done

    assert shown in run("worlds", "list").stdout  # "No shared worlds yet in postgresql://awl@..."
    assert "shared reads on" in run("worlds", "create", "pg-1", "--shared-reads", "--max-size", "4MiB").stdout
    folder = tmp_path / "models"
    for prefix in ("A", "B"):
        (folder / prefix).mkdir(parents=True)
    answers = {prefix: scripted_model(folder / prefix, *(
        f"<think>\nt\n</think>\n<predicted_observation>\n{prefix}-{index}\n</predicted_observation>" for index in range(4)))
        for prefix in ("A", "B")}
    run("run", "--model", answers["A"], "--shared-world", "pg-1", "--out", str(tmp_path / "a.jsonl"), stdin="ls\npwd\n")
    second = run("run", "--model", answers["B"], "--shared-world", "pg-1", "--json", "--out", str(tmp_path / "b.jsonl"),
                 stdin="ls\npwd\n")
    assert '"from": "store"' in second.stdout and "A-0" in second.stdout and "B-0" not in second.stdout
    assert run("worlds", "list").stdout.startswith("pg-1: 2 answers")
    info = run("worlds", "info", "pg-1", "--json").stdout
    assert '"shared_reads": true' in info and f'"path": "{shown}"' in info and '"answers": 2' in info
    assert f"Removed the shared world `pg-1` ({shown})" in run("worlds", "remove", "pg-1").stdout
    gone = awl("worlds", "info", "pg-1", home=home, env=env)
    assert_one_line_error(gone, "There is no shared world `pg-1`", shown)


def test_awl_worlds_with_a_wrong_password_is_one_line(postgres_server, tmp_path):
    url = postgres_server.url(password="wrong-Pa55word")
    for args in (["worlds", "list"], ["worlds", "info", "w"], ["worlds", "create", "w"], ["worlds", "remove", "w"]):
        done = awl(*args, home=tmp_path / "home", env=awl_env(tmp_path / "home", AWL_WORLDS_DIR=url))
        assert_one_line_error(done, "refused awl's login", redacted_url(url))
        assert "wrong-Pa55word" not in done.stdout + done.stderr
