"""A state-cache lookup reads one state file, not one per cached prefix of the prompt: a new
process's first turn finds its start (the system prompt's state and the first turn's start are
both prefixes of its prompt) at the cost of one read, and a caller that checks the bytes as it
reads them (the backend) skips the lookup's own read."""

from __future__ import annotations

import json
from pathlib import Path

from agentworld_local.engine.llama import state_cache
from agentworld_local.engine.llama.state_cache import StateCache, StateKey

KEY = StateKey("a" * 64, 1000, "0.3.36", "f16", "on", "gemma3")


def writer(payload: bytes):
    def write(path: Path) -> bool:
        with open(path, "xb") as handle:
            handle.write(payload)
        return True
    return write


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
