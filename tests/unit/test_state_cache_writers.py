"""The state cache's budget with several processes writing into one folder
(engine/llama/state_cache.py): the folder stays within it, strays of lost races included, and
a file another process removes meanwhile is a miss, never a crash."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

from agentworld_local.engine.llama import state_cache
from agentworld_local.engine.llama.state_cache import StateCache, StateKey

KEY = StateKey("a" * 64, 1000, "0.3.36", "f16", "on", "qwen35moe")
STATE_BYTES = 64 * 1024
BUDGET = 6 * STATE_BYTES
STORES = 60


def _store_many(directory: str, fill: int, start) -> None:
    """One writer: entries another writer stores too (its own bytes: the loser's state is a
    stray), some its own, with lookups between (a hit touches a header)."""
    cache = StateCache(Path(directory), budget=BUDGET)
    start.wait()
    for n in range(STORES):
        def write(path: Path) -> bool:
            with open(path, "xb") as handle:
                for _ in range(16):  # slowly: the writers overlap
                    handle.write(bytes([fill]) * (STATE_BYTES // 16))
                    os.sched_yield()
            return True

        tokens = [n % 9, n % 4] if n % 3 else [n, fill]
        cache.store(KEY, tokens, write)
        if n % 5 == 0:
            cache.lookup(KEY, [n % 9, n % 4, 0])


def _folder_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.iterdir() if path.is_file())


def test_writers_in_several_processes_keep_the_folder_within_its_budget(tmp_path):
    context = multiprocessing.get_context("fork")
    start = context.Barrier(3)
    writers = [context.Process(target=_store_many, args=(str(tmp_path), fill, start)) for fill in (0x11, 0x22, 0x33)]
    for process in writers:
        process.start()
    for process in writers:
        process.join()
    assert [process.exitcode for process in writers] == [0, 0, 0], "a writer died"
    assert _folder_bytes(tmp_path) <= BUDGET, f"{len(list(tmp_path.iterdir()))} files over a {BUDGET}-byte budget"
    cache = StateCache(tmp_path, budget=BUDGET)
    assert cache.info().entries >= 1, "the budget holds entries, not only strays"
    for header in tmp_path.glob("*.json"):  # what is left is whole: every header names its own state
        record = json.loads(header.read_text())
        assert (tmp_path / record["state_file"]).stat().st_size == record["state_bytes"] == STATE_BYTES


def write_bytes(payload: bytes):
    def write(path: Path) -> bool:
        path.write_bytes(payload)
        return True
    return write


def test_over_budget_a_recent_stray_goes_before_an_entry(tmp_path):
    cache = StateCache(tmp_path, budget=3500)  # two entries of 1000 bytes, with their headers
    cache.store(KEY, [1], write_bytes(b"e" * 1000))
    stray = tmp_path / "0123456789abcdef-lost-00000000.seqstate"  # a state whose header another writer won
    stray.write_bytes(b"s" * 1500)
    cache.store(KEY, [2], write_bytes(b"e" * 1000))
    assert not stray.exists() and cache.info().entries == 2 and _folder_bytes(tmp_path) <= 3500


def test_a_write_under_way_in_another_process_goes_only_when_entries_cannot_make_room(tmp_path):
    cache = StateCache(tmp_path, budget=4000)
    cache.store(KEY, [1], write_bytes(b"e" * 1000))
    temporary = tmp_path / f"{state_cache.TEMPORARY_PREFIX}other-1234.seqstate"  # another writer's, half written
    temporary.write_bytes(b"t" * 1500)
    cache.store(KEY, [2], write_bytes(b"e" * 1000))
    assert temporary.exists() and cache.lookup(KEY, [2, 0]) is not None and cache.lookup(KEY, [1, 0]) is None
    cache.evict(budget=1000)
    assert not temporary.exists() and _folder_bytes(tmp_path) <= 1000


def test_an_entry_another_process_removes_meanwhile_is_passed_over(tmp_path, monkeypatch):
    cache = StateCache(tmp_path, budget=10_000)
    cache.store(KEY, [1], write_bytes(b"e" * 100))
    [header] = tmp_path.glob("*.json")
    # Another writer has just published a new state of the same entry; its header comes next.
    newer = tmp_path / f"{header.stem}-0badcafe.seqstate"
    newer.write_bytes(b"n" * 100)
    read = state_cache._read_header

    def vanishing(path: Path):
        path.unlink(missing_ok=True)  # a third process evicts the entry as it is read
        return read(path)

    monkeypatch.setattr(state_cache, "_read_header", vanishing)
    assert cache.lookup(KEY, [1, 0]) is None
    cache.evict()
    assert newer.exists(), "the other writer's new state is not ours to remove"
