"""The system-prompt state cache on a disk that cannot hold it: a full file system, a
read-only one, a directory or a FIFO under a cache file's name, a file damaged between the
lookup and the load. Each is a miss on disk with at most one notice, never a crash (a state written
through a memory map of a file on a full disk was a SIGBUS that killed the process), and the
session's answers are those of a cold evaluation.

The full and read-only disks are small tmpfs mounts (root only; skipped with the reason
elsewhere). Sessions run in a child process, so a crash is a failed test, not a dead pytest."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.llama.state_cache import StateCache
from tests.cli.helpers import REPO
from tests.engine.test_state_cache_llama import answer

#: Two sessions on one backend and a third on a new one, each answering `ls -la` greedily.
SESSIONS = """
import json, sys
from pathlib import Path
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.llama.state_cache import StateCache
from tests.engine.test_state_cache_llama import answer

model, directory = Path(sys.argv[1]), sys.argv[2]
notices = []
cache = StateCache(Path(directory)) if directory != "-" else None
outputs = []
backend = LlamaBackend(model, n_ctx=1024, gpu_layers=0, state_cache=cache, notice=notices.append)
for _ in range(2):
    done = answer(backend)
    outputs.append([done.raw_output, done.stats.prompt_tokens_evaluated, done.stats.prompt_tokens_total])
    backend.reset()
backend.close()
again = LlamaBackend(model, n_ctx=1024, gpu_layers=0, state_cache=cache, notice=notices.append)
done = answer(again)
outputs.append([done.raw_output, done.stats.prompt_tokens_evaluated, done.stats.prompt_tokens_total])
again.close()
print(json.dumps({"outputs": outputs, "notices": notices}))
"""


def sessions(model: Path, directory: Path | str) -> dict:
    result = subprocess.run([sys.executable, "-c", SESSIONS, str(model), str(directory)], capture_output=True,
                            text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, f"the sessions died (signal {-result.returncode}): {result.stderr[-2000:]}"
    return json.loads(result.stdout.splitlines()[-1])


@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs of 64 KiB: mount(tmpfs) needs root; where it is refused the test is skipped."""
    mounted: list[Path] = []

    def mount(name: str, *options: str) -> Path:
        point = tmp_path / name
        point.mkdir()
        if shutil.which("mount") is None or os.geteuid() != 0:
            pytest.skip("mounting a small tmpfs needs root and mount(8)")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(["size=64k", *options]), "tmpfs", str(point)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", "-l", str(point)], capture_output=True)


@pytest.fixture(scope="module")
def cold(llama_gguf):
    return sessions(llama_gguf, "-")["outputs"]


def assert_as_cold(seen: dict, cold: list) -> None:
    assert [raw for raw, _, _ in seen["outputs"]] == [raw for raw, _, _ in cold], "no lost or changed turn"
    (first, first_total), (second, second_total), (next_process, next_total) = [row[1:] for row in seen["outputs"]]
    assert first == first_total and next_process == next_total, "nothing on disk: each process evaluates the prompt"
    assert second < second_total, "within one process the state is held in memory, disk or no disk"
    said = [text for text in seen["notices"] if "Could not write the system prompt's state" in text]
    assert len(said) <= 2, seen["notices"]  # at most once a backend (two backends here)


def test_a_full_cache_disk_is_a_miss_said_once_never_a_crash(llama_gguf, small_disk, cold):
    disk = small_disk("full")
    (disk / "filler").write_bytes(b"\0" * (60 * 1024))  # the state (tens of KB) no longer fits
    seen = sessions(llama_gguf, disk / "states")
    assert_as_cold(seen, cold)
    assert any("Could not write" in text for text in seen["notices"])
    assert sorted(path.name for path in (disk / "states").iterdir()) == [], "no partial or temporary file left"


def test_a_read_only_cache_disk_is_a_miss_said_once(llama_gguf, small_disk, cold):
    disk = small_disk("read-only", "ro")
    seen = sessions(llama_gguf, disk)
    assert_as_cold(seen, cold)


def _entry(cache: StateCache) -> tuple[Path, Path]:
    [header] = cache.directory.glob("*.json")
    return header, cache.directory / json.loads(header.read_text())["state_file"]


@pytest.mark.parametrize("blocker", ["directory", "fifo"])
def test_a_directory_or_fifo_under_a_state_file_s_name_is_replaced(llama_gguf, tmp_path, cold, blocker):
    """A directory there was a silent miss forever: every store failed on it."""
    cache = StateCache(tmp_path / "states")
    first = LlamaBackend(llama_gguf, n_ctx=1024, gpu_layers=0, state_cache=cache)
    answer(first)
    first.close()
    header, state = _entry(cache)
    state.unlink()
    if blocker == "directory":
        state.mkdir()
        (state / "inside").write_text("x")
    else:
        os.mkfifo(state)
    seen = sessions(llama_gguf, cache.directory)
    [miss, hit, new_backend_hit] = seen["outputs"]
    assert [miss[0], hit[0], new_backend_hit[0]] == [raw for raw, _, _ in cold]
    assert miss[1] == miss[2], "the blocked entry is a miss"
    assert hit[1] < hit[2] and new_backend_hit[1] < new_backend_hit[2], "stored again: the next sessions hit"
    assert not [text for text in seen["notices"] if "state" in text and "memory estimate" not in text]
    assert state.is_file() and cache.info().entries == 1


class DamagedInUse(StateCache):
    """The state file changes after the lookup checked it, before llama.cpp reads it."""

    def __init__(self, directory: Path, damage) -> None:
        super().__init__(directory)
        self.damage = damage

    def lookup(self, key, tokens, **options):
        entry = super().lookup(key, tokens, **options)
        if entry is not None:
            self.damage(entry.state)
        return entry


def _cut_in_half(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def _flip_bytes(path: Path) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_cut_in_half, _flip_bytes], ids=["cut", "flipped"])
def test_a_state_file_damaged_while_in_use_is_a_miss_that_is_removed(llama_gguf, tmp_path, cold, damage):
    writer = LlamaBackend(llama_gguf, n_ctx=1024, gpu_layers=0, state_cache=StateCache(tmp_path))
    answer(writer)
    writer.close()
    notices: list[str] = []
    reader = LlamaBackend(llama_gguf, n_ctx=1024, gpu_layers=0, state_cache=DamagedInUse(tmp_path, damage),
                          notice=notices.append)
    done = answer(reader)
    reader.close()
    assert done.raw_output == cold[0][0]
    assert done.stats.prompt_tokens_evaluated == done.stats.prompt_tokens_total, "a damaged state is never loaded"
    assert not [text for text in notices if "Could not write" in text]
    after = LlamaBackend(llama_gguf, n_ctx=1024, gpu_layers=0, state_cache=StateCache(tmp_path))
    hit = answer(after)
    after.close()
    assert hit.raw_output == cold[0][0] and hit.stats.prompt_tokens_evaluated < hit.stats.prompt_tokens_total, \
        "the damaged file was removed and the prompt stored again, whole"
