"""`awl models list|pull|rm|add` through the real entry point, against a real HTTP hub on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from huggingface_hub import scan_cache_dir

from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import REPO, assert_one_line_error, awl, awl_env
from tests.hubserver import HubFile, HubServer

REPO_ID = "awl-test/tiny-world-GGUF"
BIG = "tiny-world-Q4_K_M.gguf"
CHUNK = 10 * 1024 * 1024  # huggingface_hub's http_get writes in chunks of this size


@pytest.fixture(scope="module")
def big_gguf() -> bytes:
    """25 MB that start like a GGUF: big enough for a download to stop half way."""
    return b"GGUF" + os.urandom(25_000_000)


def hub_env(home: Path, endpoint: str, **extra: str) -> dict[str, str]:
    """AWL_HOME plus a private Hugging Face home, so no test touches ~/.cache/huggingface."""
    env = awl_env(home, HF_ENDPOINT=endpoint, HF_HOME=str(home / "hf"), HF_HUB_CACHE=str(home / "hf" / "hub"))
    for inherited in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        env.pop(inherited, None)
    return {**env, **extra}


def register(home: Path, name: str, filename: str, *, repo: str = REPO_ID, quant: str = "Q4_K_M", extra: str = "") -> None:
    """A user registry entry for a model on the test hub."""
    path = home / "config" / "models.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = path.read_text() if path.exists() else "version = 1\n"
    text += f'\n[models.{name}]\nrepo = "{repo}"\ndefault_quant = "{quant}"\n[models.{name}.quants.{quant}]\nfile = "{filename}"\n{extra}'
    path.write_text(text)


def cache_blobs(home: Path) -> list[Path]:
    return sorted((home / "hf" / "hub").glob("models--*/blobs/*"))


def models_json(home: Path, env: dict[str, str]) -> dict[str, dict]:
    result = awl("models", "list", "--json", home=home, env=env)
    assert result.returncode == 0, result.stderr
    return {row["spec"]: row for row in json.loads(result.stdout)}


def test_list_shows_the_registry_without_touching_the_network(tmp_path):
    with HubServer([]) as hub:
        env = hub_env(tmp_path, hub.endpoint)
        rows = models_json(tmp_path, env)
        table = awl("models", "list", home=tmp_path, env=env)
    assert hub.requests == []
    default = rows["qwen-agentworld-35b-a3b:UD-Q4_K_M"]
    assert default["default"] and default["verified"] and default["size"] == 22_134_529_280
    assert default["repo"] == "unsloth/Qwen-AgentWorld-35B-A3B-GGUF" and not default["downloaded"]
    assert default["context_length"] == 262_144 and default["sampling"] == {"temperature": 0.6, "top_p": 0.95, "top_k": 20}
    two_bit = rows["qwen-agentworld-35b-a3b:UD-Q2_K_XL"]
    assert not two_bit["verified"] and two_bit["size"] is None and two_bit["approx_size"]
    assert "qwen-agentworld-35b-a3b:Q8_0" in rows and "qwen3.5-35b-a3b:UD-Q4_K_M" in rows
    assert table.returncode == 0, table.stderr
    assert "qwen-agentworld-35b-a3b:UD-Q4_K_M" in table.stdout and "22.1 GB" in table.stdout and "~12.0 GB" in table.stdout


def test_pull_by_name_then_run_by_name(tmp_path, qwen_gguf):
    content = qwen_gguf.read_bytes()
    with HubServer([HubFile(REPO_ID, "tiny-world-Q8_0.gguf", content)]) as hub:
        env = hub_env(tmp_path, hub.endpoint)
        register(tmp_path, "tiny-world", "tiny-world-Q8_0.gguf", quant="Q8_0")
        pulled = awl("models", "pull", "tiny-world", home=tmp_path, env=env)
        assert pulled.returncode == 0, pulled.stderr
        assert "sha256 verified" in pulled.stdout and "awl run --model tiny-world:Q8_0" in pulled.stdout
        again = awl("models", "pull", "tiny-world:q8_0", home=tmp_path, env=env)
        assert again.returncode == 0 and "already downloaded" in again.stdout
        assert len(hub.cdn_gets()) == 1  # the second pull found the file in the cache

    row = models_json(tmp_path, env)["tiny-world:Q8_0"]
    assert row["downloaded"] and Path(row["path"]).read_bytes() == content
    assert Path(row["path"]).is_relative_to(tmp_path / "hf" / "hub" / "models--awl-test--tiny-world-GGUF")

    out = tmp_path / "s.jsonl"
    # The hub is gone and offline mode is on: running a downloaded model needs no network.
    env["HF_HUB_OFFLINE"] = "1"
    ran = awl("run", "--model", "tiny-world", "--out", str(out), "--think", "4", "--max-tokens", "8", "--ctx", "4096",
              home=tmp_path, env=env, stdin="ls\n")
    assert ran.returncode == 0, ran.stderr
    assert read_trajectory(out).header.model.name == "tiny-world:Q8_0"


def test_a_dropped_connection_resumes_with_a_range_request(tmp_path, big_gguf):
    served = HubFile(REPO_ID, BIG, big_gguf, drop_after=15_000_000)
    with HubServer([served]) as hub:
        env = hub_env(tmp_path, hub.endpoint, HF_TOKEN="hf_awltesttoken")
        register(tmp_path, "tiny-world", BIG)
        result = awl("models", "pull", "tiny-world", home=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    # The token goes to the hub the usual way, never to the CDN, and is never printed.
    (head,) = [r for r in hub.requests if r.method == "HEAD"]
    assert head.authorization == "Bearer hf_awltesttoken"
    assert all(r.authorization is None for r in hub.cdn_gets())
    assert "hf_awltesttoken" not in result.stdout + result.stderr
    first, second = hub.cdn_gets()
    assert first.range is None and first.sent == 15_000_000
    assert second.range == f"bytes={CHUNK}-" and second.sent == len(big_gguf) - CHUNK
    path = Path(models_json(tmp_path, env)["tiny-world:Q4_K_M"]["path"])
    assert hashlib.sha256(path.read_bytes()).hexdigest() == served.sha256


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_a_terminal_shows_a_progress_bar_with_bytes_speed_and_eta(tmp_path, big_gguf):
    import pty
    import threading

    with HubServer([HubFile(REPO_ID, BIG, big_gguf)]) as hub:
        env = {**hub_env(tmp_path, hub.endpoint), "COLUMNS": "120", "TERM": "xterm"}
        register(tmp_path, "tiny-world", BIG)
        leader, follower = pty.openpty()  # stderr is a terminal: rich draws the bar there
        process = subprocess.Popen(
            [sys.executable, "-m", "agentworld_local.cli.main", "models", "pull", "tiny-world"],
            stdout=subprocess.PIPE, stderr=follower, text=True, env=env, cwd=REPO,
        )
        os.close(follower)
        screen: list[bytes] = []

        def drain() -> None:
            while True:
                try:
                    data = os.read(leader, 65536)
                except OSError:
                    return
                if not data:
                    return
                screen.append(data)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        stdout, _ = process.communicate()
        reader.join()
        os.close(leader)
    assert process.returncode == 0, stdout
    drawn = b"".join(screen).decode(errors="replace")
    assert "25.0/25.0 MB" in drawn  # bytes
    assert "MB/s" in drawn  # speed
    assert "0:00:00" in drawn  # time remaining
    assert "verifying sha256" in drawn


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery differs on Windows")
def test_ctrl_c_keeps_the_partial_file_and_the_next_pull_resumes(tmp_path, big_gguf):
    served = HubFile(REPO_ID, BIG, big_gguf, stall_after=15_000_000)
    with HubServer([served]) as hub:
        env = hub_env(tmp_path, hub.endpoint)
        register(tmp_path, "tiny-world", BIG)
        process = subprocess.Popen(
            [sys.executable, "-m", "agentworld_local.cli.main", "models", "pull", "tiny-world"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
        )
        partial = tmp_path / "hf" / "hub" / "models--awl-test--tiny-world-GGUF" / "blobs" / f"{served.sha256}.incomplete"
        while not (partial.exists() and partial.stat().st_size >= CHUNK):  # no deadline: pytest-timeout stops a hang
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate()
        hub.release.set()
        assert process.returncode == 130, stderr
        (said,) = stderr.strip().splitlines()
        assert "Traceback" not in stderr and said.startswith("awl: ")
        assert "interrupted" in said and "10.5 MB of 25.0 MB kept" in said and "again to resume" in said
        assert partial.stat().st_size == CHUNK

        resumed = awl("models", "pull", "tiny-world", home=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed after 10.5 MB" in resumed.stdout
    second = hub.cdn_gets()[-1]
    assert second.range == f"bytes={CHUNK}-" and second.sent == len(big_gguf) - CHUNK
    assert not partial.exists()
    path = Path(models_json(tmp_path, env)["tiny-world:Q4_K_M"]["path"])
    assert hashlib.sha256(path.read_bytes()).hexdigest() == served.sha256


def test_a_corrupt_download_is_deleted_with_a_clear_error(tmp_path, big_gguf):
    with HubServer([HubFile(REPO_ID, BIG, big_gguf, corrupt=True)]) as hub:
        env = hub_env(tmp_path, hub.endpoint)
        register(tmp_path, "tiny-world", BIG)
        result = awl("models", "pull", "tiny-world", home=tmp_path, env=env)
    assert_one_line_error(result, "corrupt", "sha256", "deleted", "awl models pull tiny-world:Q4_K_M")
    assert cache_blobs(tmp_path) == []  # neither a blob nor a partial file is left
    assert scan_cache_dir(tmp_path / "hf" / "hub").warnings == []  # and `hf cache ls` still reads the cache
    assert not models_json(tmp_path, env)["tiny-world:Q4_K_M"]["downloaded"]


def test_missing_file_and_missing_repo_are_one_line_errors(tmp_path):
    with HubServer([HubFile(REPO_ID, "other.gguf", b"GGUF")]) as hub:
        env = hub_env(tmp_path, hub.endpoint)
        register(tmp_path, "gone-file", "tiny-world-Q4_K_M.gguf")
        register(tmp_path, "gone-repo", BIG, repo="awl-test/no-such-repo")
        missing_file = awl("models", "pull", "gone-file", home=tmp_path, env=env)
        missing_repo = awl("models", "pull", "gone-repo", home=tmp_path, env=env)
    assert_one_line_error(missing_file, "has no file `tiny-world-Q4_K_M.gguf`", f"/{REPO_ID}/tree/main")
    assert_one_line_error(missing_repo, "no repo `awl-test/no-such-repo`", "hf auth login")
    assert hub.cdn_gets() == []


def test_no_network_is_a_one_line_error(tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    env = hub_env(tmp_path, closed)
    register(tmp_path, "tiny-world", BIG)
    result = awl("models", "pull", "tiny-world", home=tmp_path, env=env)
    assert_one_line_error(result, f"Cannot reach the model hub at {closed}", "nothing was downloaded", "network")


def test_offline_mode_refuses_without_a_network_attempt(tmp_path):
    with HubServer([HubFile(REPO_ID, BIG, b"GGUF" + b"\0" * 100)]) as hub:
        env = hub_env(tmp_path, hub.endpoint, HF_HUB_OFFLINE="1")
        register(tmp_path, "tiny-world", BIG)
        result = awl("models", "pull", "tiny-world", home=tmp_path, env=env)
    assert_one_line_error(result, "HF_HUB_OFFLINE", "not in the Hugging Face cache", "awl models add")
    assert hub.requests == []


def test_not_enough_disk_space_refuses_before_downloading(tmp_path):
    free = shutil.disk_usage(tmp_path).free
    huge = HubFile(REPO_ID, BIG, b"GGUF" + b"\0" * 100, advertised_size=free + 10**12)
    with HubServer([huge]) as hub:
        env = hub_env(tmp_path, hub.endpoint)
        register(tmp_path, "tiny-world", BIG)
        result = awl("models", "pull", "tiny-world", home=tmp_path, env=env)
    assert_one_line_error(result, "Not enough disk space", "free", "HF_HUB_CACHE", "awl models pull tiny-world:Q4_K_M")
    assert hub.cdn_gets() == [] and cache_blobs(tmp_path) == []


@pytest.fixture
def small_disk(tmp_path):
    """A real 24 MiB filesystem (tmpfs) for the hub cache; needs the right to mount (root)."""
    mount_point = tmp_path / "hf"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount_point)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_a_really_full_disk(tmp_path, small_disk, big_gguf):
    filler = small_disk / "filler.bin"
    medium = b"GGUF" + os.urandom(12_000_000)
    filled_once: list[bool] = []

    def fill_the_disk() -> None:  # another program fills the disk while the download starts (once)
        if not filled_once:
            filled_once.append(True)
            filler.write_bytes(b"\0" * 20 * 1024 * 1024)

    files = [HubFile(REPO_ID, BIG, big_gguf), HubFile(REPO_ID, "medium.gguf", medium, on_get=fill_the_disk)]
    with HubServer(files) as hub:
        env = hub_env(tmp_path, hub.endpoint)
        register(tmp_path, "too-big", BIG)
        register(tmp_path, "medium", "medium.gguf")
        refused = awl("models", "pull", "too-big", home=tmp_path, env=env)
        assert_one_line_error(refused, "Not enough disk space", "MB free")
        assert hub.cdn_gets() == []

        filled = awl("models", "pull", "medium", home=tmp_path, env=env)
        assert_one_line_error(filled, "disk filled up", "are kept and the next pull resumes", "Free up space")
        (partial,) = small_disk.glob("hub/models--*/blobs/*.incomplete")
        kept = partial.stat().st_size
        assert 0 < kept < len(medium)

        filler.unlink()
        resumed = awl("models", "pull", "medium", home=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert hub.cdn_gets()[-1].range == f"bytes={kept}-"
    path = Path(models_json(tmp_path, env)["medium:Q4_K_M"]["path"])
    assert path.read_bytes() == medium


def test_unknown_names_and_quants(tmp_path):
    env = hub_env(tmp_path, "http://127.0.0.1:9")
    assert_one_line_error(awl("models", "pull", "qwen-agentwrld", home=tmp_path, env=env), "Did you mean qwen-agentworld-35b-a3b")
    assert_one_line_error(
        awl("run", "--model", "qwen-agentworld-35b-a3b:Q5_K_M", home=tmp_path, env=env, stdin="ls\n"),
        "no quantization `Q5_K_M`", "UD-Q2_K_XL", "UD-Q4_K_M (default)", "Q8_0",
    )
    not_yet = awl("run", "--model", "qwen-agentworld-35b-a3b", home=tmp_path, env=env, stdin="ls\n")
    assert_one_line_error(not_yet, "is not downloaded yet", "awl models pull qwen-agentworld-35b-a3b:UD-Q4_K_M", "(22.1 GB)")


def test_add_a_file_you_have_then_forget_it(tmp_path, qwen_gguf):
    mine = tmp_path / "downloads" / "my-world.gguf"
    mine.parent.mkdir()
    shutil.copyfile(qwen_gguf, mine)
    env = hub_env(tmp_path, "http://127.0.0.1:9")

    added = awl("models", "add", "my-world", str(mine), home=tmp_path, env=env)
    assert added.returncode == 0, added.stderr
    assert "awl run --model my-world:local" in added.stdout
    copy = awl("models", "add", "qwen-agentworld-35b-a3b:ud-q2_k_xl", str(mine), home=tmp_path, env=env)
    assert copy.returncode == 0, copy.stderr
    rows = models_json(tmp_path, env)
    assert rows["my-world:local"]["path"] == str(mine) and rows["my-world:local"]["source"] == "user"
    assert rows["qwen-agentworld-35b-a3b:UD-Q2_K_XL"]["path"] == str(mine)
    assert not rows["qwen-agentworld-35b-a3b:UD-Q4_K_M"]["downloaded"]

    assert_one_line_error(awl("models", "add", "bad", str(tmp_path / "nope.gguf"), home=tmp_path, env=env), "not found")
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    assert_one_line_error(awl("models", "add", "bad", str(text), home=tmp_path, env=env), "not a GGUF")

    declined = awl("models", "rm", "my-world", home=tmp_path, env=env, stdin="n\n")
    assert declined.returncode == 1 and "Nothing removed" in declined.stdout
    assert "my-world:local" in models_json(tmp_path, env)
    removed = awl("models", "rm", "my-world", home=tmp_path, env=env, stdin="y\n")
    assert removed.returncode == 0, removed.stderr
    assert f"your file {mine} stays" in removed.stdout
    forgot_copy = awl("models", "rm", "qwen-agentworld-35b-a3b:UD-Q2_K_XL", "--yes", home=tmp_path, env=env)
    assert forgot_copy.returncode == 0, forgot_copy.stderr
    rows = models_json(tmp_path, env)
    assert "my-world:local" not in rows and not rows["qwen-agentworld-35b-a3b:UD-Q2_K_XL"]["downloaded"]
    assert mine.read_bytes() == qwen_gguf.read_bytes()  # the user's own file is never deleted
    assert_one_line_error(awl("models", "rm", "qwen-agentworld-35b-a3b", "--yes", home=tmp_path, env=env), "Nothing to remove")


def test_list_fits_80_columns_and_keeps_paths_whole(tmp_path, qwen_gguf):
    deep = tmp_path / "a-rather-long-folder-name" / "with-more-folders" / "Qwen-AgentWorld-35B-A3B-UD-Q4_K_M.gguf"
    deep.parent.mkdir(parents=True)
    shutil.copyfile(qwen_gguf, deep)
    env = hub_env(tmp_path, "http://127.0.0.1:9", COLUMNS="80")
    assert awl("models", "add", "qwen-agentworld-35b-a3b", str(deep), home=tmp_path, env=env).returncode == 0
    assert awl("models", "add", "my-own-world-model", str(deep), home=tmp_path, env=env).returncode == 0
    listed = awl("models", "list", home=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    table = lines[: lines.index("")]
    assert all(len(line.rstrip()) <= 80 for line in table), "\n".join(table)  # before: specs cut with `…`
    assert any("world" in line for line in table[:2]) and any(line.startswith("* qwen3.5-0.8b:Q4_K_M") for line in table)
    small = next(line for line in table if "qwen3.5-0.8b" in line).split()
    assert small == ["*", "qwen3.5-0.8b:Q4_K_M", "~530.0", "MB", "no", "no", "no"]  # world model, verified, downloaded
    assert "* my-own-world-model:UD-Q4_K_M" in listed.stdout
    assert f"  qwen-agentworld-35b-a3b:UD-Q4_K_M  {deep}" in lines  # the path on one line, copyable
    own = next(line for line in table if "qwen-agentworld-35b-a3b:UD-Q4_K_M" in line)
    assert "1.1 MB" in own and "differs" in own  # the file on disk, not the registry's 22.1 GB as verified
    legend = lines[lines.index("") + 1:]
    assert all(len(line) <= 80 for line in legend if not line.startswith(("Your registry", "  ")))
    rows = models_json(tmp_path, env)
    assert rows["qwen3.5-0.8b:Q4_K_M"]["world_model"] is False
    assert rows["qwen-agentworld-35b-a3b:UD-Q4_K_M"]["world_model"] is True
    assert rows["qwen-agentworld-35b-a3b:UD-Q4_K_M"]["file_size"] == deep.stat().st_size


def test_add_on_a_taken_name_needs_force_and_shows_the_entry_after(tmp_path, qwen_gguf, llama_gguf):
    first, second = tmp_path / "first.gguf", tmp_path / "second.gguf"
    shutil.copyfile(qwen_gguf, first)
    shutil.copyfile(llama_gguf, second)
    env = hub_env(tmp_path, "http://127.0.0.1:9")
    added = awl("models", "add", "mine", str(first), home=tmp_path, env=env)
    assert added.returncode == 0, added.stderr
    assert f"file         {first}" in added.stdout and "world model  not said" in added.stdout
    refused = awl("models", "add", "mine", str(second), home=tmp_path, env=env)
    assert_one_line_error(refused, f"`mine:local` already points to {first}", "--force")
    assert models_json(tmp_path, env)["mine:local"]["path"] == str(first)
    moved = awl("models", "add", "mine", str(second), "--force", home=tmp_path, env=env)
    assert moved.returncode == 0, moved.stderr
    size = second.stat().st_size
    assert f"`mine:local` pointed to {first}; now:" in moved.stdout
    assert f"file         {second}" in moved.stdout and f"({size:,} bytes)" in moved.stdout
    row = models_json(tmp_path, env)["mine:local"]
    assert (row["path"], row["size"], row["file_size"]) == (str(second), size, size)


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_add_refuses_a_pipe_or_a_device_at_once(tmp_path, kind):
    if kind == "fifo":
        target = tmp_path / "model.gguf"
        os.mkfifo(target)
    else:
        target = Path("/dev/zero")
    env = hub_env(tmp_path, "http://127.0.0.1:9")
    result = awl("models", "add", "mine", str(target), home=tmp_path, env=env)  # before: a FIFO hung
    assert_one_line_error(result, f"{target} is not a regular file")
    info = awl("models", "info", str(target), home=tmp_path, env=env)
    assert_one_line_error(info, "not a regular file")


def test_rm_deletes_the_download_and_says_what_it_freed(tmp_path, big_gguf):
    with HubServer([HubFile(REPO_ID, BIG, big_gguf)]) as hub:
        env = hub_env(tmp_path, hub.endpoint)
        register(tmp_path, "tiny-world", BIG)
        assert awl("models", "pull", "tiny-world", home=tmp_path, env=env).returncode == 0
    path = Path(models_json(tmp_path, env)["tiny-world:Q4_K_M"]["path"])
    removed = awl("models", "rm", "tiny-world:Q4_K_M", "--yes", home=tmp_path, env=env)
    assert removed.returncode == 0, removed.stderr
    assert f"delete {path}" in removed.stdout and "freed 25.0 MB" in removed.stdout
    assert not path.exists() and cache_blobs(tmp_path) == []
    assert "tiny-world:Q4_K_M" in models_json(tmp_path, env)  # the registry entry stays: pull it again any time


def test_a_newer_registry_format_is_refused(tmp_path):
    user_file = tmp_path / "config" / "models.toml"
    user_file.parent.mkdir(parents=True)
    user_file.write_text('version = 2\n[models.x]\nrepo = "a/b"\n')
    result = awl("models", "list", home=tmp_path, env=hub_env(tmp_path, "http://127.0.0.1:9"))
    assert_one_line_error(result, "version 2", "pip install -U agentworld-local")
