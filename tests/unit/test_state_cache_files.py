"""The state cache's files (engine/llama/state_cache.py) without a model: keys, the LRU
budget, atomic publishing under concurrent writers, files it cannot trust, and a lookup that
reads one state file, not one per cached prefix of the prompt (a new process's first turn finds
its start at the cost of one read; a caller that checks the bytes as it reads them, the backend,
skips the lookup's own read)."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from agentworld_local.engine.llama import state_cache
from agentworld_local.engine.llama.state_cache import StateCache, StateKey

KEY = StateKey("a" * 64, 1000, "0.3.36", "f16", "on", "qwen35moe")
OTHER_MODEL = StateKey("b" * 64, 1000, "0.3.36", "f16", "on", "qwen35moe")


def writer(payload: bytes):
    def write(path: Path) -> bool:
        with open(path, "xb") as handle:
            handle.write(payload)
        return True
    return write


def age(cache: StateCache, seconds_ago: float) -> None:
    """Move every entry's last use `seconds_ago` earlier (tests order uses without sleeping)."""
    for header in cache.directory.glob("*.json"):
        when = os.path.getmtime(header) - seconds_ago
        os.utime(header, (when, when))


def test_lookup_finds_the_longest_cached_prefix_of_this_key_only(tmp_path):
    cache = StateCache(tmp_path)
    tokens = list(range(100))
    cache.store(KEY, tokens[:10], writer(b"x" * 10))
    cache.store(KEY, tokens[:40], writer(b"y" * 40))
    cache.store(OTHER_MODEL, tokens[:60], writer(b"z" * 60))
    assert cache.lookup(KEY, tokens).n_tokens == 40
    assert cache.lookup(KEY, tokens, limit=39).n_tokens == 10
    assert cache.lookup(KEY, [7] + tokens[1:]) is None, "a different first token is another prompt"
    assert cache.lookup(OTHER_MODEL, tokens).n_tokens == 60
    assert cache.info().entries == 3


def test_the_budget_evicts_the_least_recently_used(tmp_path):
    cache = StateCache(tmp_path, budget=4000)  # the folder's budget: each entry's header (~650 bytes) counts too
    prompts = [[n] * 5 for n in range(4)]
    for prompt in prompts[:3]:
        cache.store(KEY, prompt, writer(b"s" * 1000))
        age(cache, 10)  # the earlier entries are older
    assert cache.info().entries == 2, "three 1000-byte states and their headers do not fit 4000 bytes"
    assert cache.lookup(KEY, prompts[0] + [9]) is None, "the oldest went first"
    assert cache.lookup(KEY, prompts[1] + [9]) is not None  # a hit makes prompt 1 the most recent
    cache.store(KEY, prompts[3], writer(b"s" * 1000))
    assert cache.lookup(KEY, prompts[1] + [9]) is not None
    assert cache.lookup(KEY, prompts[2] + [9]) is None, "prompt 2 was used least recently"
    assert cache.info().bytes <= 4000  # every file of the folder within the budget


def _write_slowly(directory: str, fill: int, start, tokens: list[int]) -> None:
    cache = StateCache(Path(directory))

    def write(path: Path) -> bool:
        start.wait()
        with open(path, "xb") as handle:
            for _ in range(64):
                handle.write(bytes([fill]) * 4096)
                os.sched_yield()
        return True

    cache.store(KEY, tokens, write)


def test_two_processes_writing_the_same_state_at_once_leave_one_valid_file(tmp_path):
    context = multiprocessing.get_context("fork")
    for round_number in range(15):
        directory = tmp_path / str(round_number)
        start = context.Barrier(2)
        writers = [context.Process(target=_write_slowly, args=(str(directory), fill, start, [1, 2, 3]))
                   for fill in (0xAA, 0x55)]
        for process in writers:
            process.start()
        for process in writers:
            process.join()
        assert all(process.exitcode == 0 for process in writers)
        [header] = directory.glob("*.json")
        record = json.loads(header.read_text())
        state = (directory / record["state_file"]).read_bytes()
        assert len(set(state)) == 1, "the state is one writer's, whole"
        assert record["state_bytes"] == len(state) == 64 * 4096
        assert StateCache(directory).lookup(KEY, [1, 2, 3, 4]) is not None
        # The other writer's state, if its header lost, is a stray of a whole file (removed once stale).
        others = [path for path in directory.iterdir() if path.name not in (header.name, record["state_file"])]
        assert len(others) <= 1 and all(path.suffix == ".seqstate" and path.stat().st_size == 64 * 4096 for path in others)


@pytest.mark.parametrize("damage", [
    lambda header, state: header.write_text("{not json"),
    lambda header, state: header.write_text(json.dumps({"schema": "someone-else", "version": 1})),
    lambda header, state: header.write_text(header.read_text().replace('"version": 1', '"version": 99')),
    lambda header, state: state.write_bytes(state.read_bytes()[:-1]),  # truncated: not its header's size
    lambda header, state: state.write_bytes(b"X" + state.read_bytes()[1:]),  # damaged: not its checksum
    lambda header, state: state.unlink(),
])
def test_a_file_the_cache_cannot_trust_is_a_miss_that_is_removed(tmp_path, damage):
    cache = StateCache(tmp_path)
    cache.store(KEY, [1, 2, 3], writer(b"state"))
    [header] = tmp_path.glob("*.json")
    damage(header, tmp_path / json.loads(header.read_text())["state_file"])
    assert cache.lookup(KEY, [1, 2, 3, 4]) is None
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_nothing(tmp_path):
    cache = StateCache(tmp_path)

    def full_disk(path: Path) -> bool:
        path.write_bytes(b"half")
        raise OSError(28, "No space left on device")

    assert cache.store(KEY, [1, 2], full_disk) is None
    assert cache.store(KEY, [1, 2], lambda path: False) is None
    assert list(tmp_path.iterdir()) == []


def test_clear_removes_every_file_and_says_what(tmp_path):
    cache = StateCache(tmp_path)
    cache.store(KEY, [1], writer(b"x" * 100))
    cache.store(KEY, [2], writer(b"y" * 100))
    removed = cache.clear()
    assert (removed.entries, removed.files) == (2, 4) and removed.bytes > 200
    assert list(tmp_path.iterdir()) == [] and cache.info().files == 0


def test_the_key_changes_with_what_changes_a_state(tmp_path):
    fingerprints = {KEY.fingerprint(), OTHER_MODEL.fingerprint(),
                    StateKey("a" * 64, 1000, "0.3.37", "f16", "on", "qwen35moe").fingerprint(),
                    StateKey("a" * 64, 1000, "0.3.36", "q8_0", "on", "qwen35moe").fingerprint(),
                    StateKey("a" * 64, 1000, "0.3.36", "f16", "off", "qwen35moe").fingerprint(),
                    StateKey("a" * 64, 1000, "0.3.36", "f16", "on", "qwen35moe", n_seq=4).fingerprint()}
    assert len(fingerprints) == 6


def test_a_stray_state_is_removed_once_stale(tmp_path):
    from agentworld_local.engine.llama.state_cache import STALE_S

    cache = StateCache(tmp_path)
    old, recent = tmp_path / "abc-0001.seqstate", tmp_path / "abd-0002.seqstate"  # no header names them
    for path in (old, recent):
        path.write_bytes(b"left by a writer that died")
    long_ago = os.path.getmtime(old) - STALE_S - 60
    os.utime(old, (long_ago, long_ago))
    cache.store(KEY, [1], writer(b"x"))  # eviction runs after every store
    assert not old.exists() and recent.exists(), "a recent one may be a write in progress"


def counting_reads(monkeypatch) -> list[Path]:
    read: list[Path] = []
    real = state_cache._crc32

    def crc32(path: Path) -> int:
        read.append(path)
        return real(path)

    monkeypatch.setattr(state_cache, "_crc32", crc32)
    return read


def test_the_longest_prefix_is_the_only_state_read(tmp_path, monkeypatch):
    cache = StateCache(tmp_path)
    prompt = list(range(100))
    cache.store(KEY, prompt[:40], writer(b"system" * 100))
    cache.store(KEY, prompt[:90], writer(b"first turn's start" * 100))
    read = counting_reads(monkeypatch)
    entry = cache.lookup(KEY, prompt)
    assert entry.n_tokens == 90
    assert read == [entry.state]


def test_a_damaged_longest_prefix_is_removed_and_the_next_one_found(tmp_path):
    cache = StateCache(tmp_path)
    prompt = list(range(100))
    cache.store(KEY, prompt[:40], writer(b"system" * 100))
    longest = cache.store(KEY, prompt[:90], writer(b"first turn's start" * 100))
    longest.state.write_bytes(b"X" + longest.state.read_bytes()[1:])  # not its checksum
    assert cache.lookup(KEY, prompt).n_tokens == 40
    assert not longest.state.exists() and not longest.header.exists()


def test_a_caller_that_checks_as_it_reads_skips_the_lookups_read(tmp_path, monkeypatch):
    cache = StateCache(tmp_path)
    prompt = list(range(100))
    stored = cache.store(KEY, prompt[:90], writer(b"first turn's start" * 100))
    read = counting_reads(monkeypatch)
    entry = cache.lookup(KEY, prompt, verify=False)
    assert read == []
    assert entry.crc32 == json.loads(stored.header.read_text())["state_crc32"]  # what the reader checks
