"""`awl run` given bad options, odd files and hostile bytes: one clear line, early, never a traceback.

Checks that need no model happen before the model loads: the memory estimate, printed just
before every load, must not appear when an option is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentworld_local.errors import InputError
from agentworld_local.models.hardware import Hardware
from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import REPO, assert_one_line_error, awl, awl_env, scripted_model

FAST = ["--think", "4", "--max-tokens", "12", "--ctx", "4096", "--seed", "3"]
LOADING = "memory estimate"  # printed right before a GGUF loads


def one_error_mid_session(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit 2, one `awl: error:` line (the turns before it may have printed), no traceback."""
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and errors[0].startswith("awl: error:"), result.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    return errors[0]


def refused_before_loading(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert_one_line_error(result, *fragments)
    assert LOADING not in result.stderr


@pytest.mark.parametrize(
    "options, fragments",
    [
        (["--ctx", "1"], ["--ctx 1 is too small", "at least 2,048"]),
        (["--ctx", "-5"], ["--ctx -5 is too small"]),
        (["--ctx", "100000000"], ["--ctx 100,000,000 is more than", "trained for (65,536 tokens)", "--ctx 65536"]),
        (["--max-tokens", "0"], ["--max-tokens 0 leaves no room"]),
        (["--max-tokens", "-3"], ["--max-tokens -3"]),
        (["--temperature", "-0.5"], ["--temperature -0.5", "0 (greedy) or more"]),
        (["--threads", "0"], ["--threads 0 is not a thread count"]),
        (["--threads", "-2"], ["--threads -2"]),
    ],
)
def test_options_that_cannot_work_are_refused_before_loading(tmp_path, qwen_gguf, options, fragments):
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", str(qwen_gguf), "-o", str(out), *options, home=tmp_path, stdin="ls\n")
    refused_before_loading(result, *fragments)
    assert not out.exists()


def test_a_context_larger_than_memory_is_refused_with_one_that_fits(qwen_gguf):
    from agentworld_local.engine.loading import check_ctx_for_model

    small = Hardware(ram_total=1024**3, ram_available=256 * 1024**2, cpu_threads=2, cpu_cores=2)
    with pytest.raises(InputError) as refused:
        check_ctx_for_model(qwen_gguf, 60000, hardware=small)
    assert "A 60,000-token context needs about" in refused.value.message and "MiB free" in refused.value.message
    fits = int(refused.value.hint.split("--ctx ")[1].split("`")[0])
    assert check_ctx_for_model(qwen_gguf, fits, hardware=small) == fits


def test_the_default_context_is_lowered_to_what_the_model_was_trained_for(tmp_path, llama_gguf):
    """The tiny llama fixture was trained for 4,096 tokens, less than the default's ceiling."""
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", str(llama_gguf), "-o", str(out), "--max-tokens", "8", "--think", "off",
                 home=tmp_path, stdin="ls\n")
    assert result.returncode == 0, result.stderr
    assert "context: 4,096 tokens, what the model was trained for" in result.stderr
    assert "4,096-token context" in result.stderr


def test_too_many_threads_are_capped_and_said_once(tmp_path, llama_gguf):
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", str(llama_gguf), "-o", str(out), "--threads", "10000", *FAST, home=tmp_path, stdin="ls\n")
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("--threads 10000 is more than the") == 1
    assert len(read_trajectory(out).turns) == 1


def test_out_under_a_regular_file_says_the_parent_is_not_a_directory(tmp_path, qwen_gguf):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file\n")
    result = awl("run", "-m", str(qwen_gguf), "-o", str(blocker / "s.jsonl"), home=tmp_path, stdin="ls\n")
    refused_before_loading(result, f"{blocker} is a file, not a directory")
    assert blocker.read_text() == "a file\n"


@pytest.mark.skipif(sys.platform != "linux", reason="uses a read-only Linux mount")
def test_an_unwritable_out_is_refused_before_loading(tmp_path, qwen_gguf):
    if os.geteuid() == 0:  # root writes anywhere a permission bit allows: use sysfs, mounted read-only
        target = Path("/sys/awl-test/s.jsonl")
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = locked / "s.jsonl"
    result = awl("run", "-m", str(qwen_gguf), "-o", str(target), home=tmp_path, stdin="ls\n")
    refused_before_loading(result, f"Cannot write {target}: permission denied", "folder you can write to")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
@pytest.mark.parametrize("option", ["script", "--initial-state"])
def test_a_fifo_given_as_a_file_is_refused_at_once(tmp_path, qwen_gguf, option):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    where = [str(fifo)] if option == "script" else [option, str(fifo)]
    result = awl("run", *where, "-m", str(qwen_gguf), "-o", str(tmp_path / "s.jsonl"), home=tmp_path, stdin="")
    refused_before_loading(result, "is not a regular file")


def test_a_script_with_a_byte_order_mark_and_a_state_file_with_one_are_read(tmp_path):
    script, state = tmp_path / "a.txt", tmp_path / "screen.txt"
    script.write_bytes("\ufeffls -la\n".encode())
    state.write_bytes("\ufeffuser@box:~$ \n".encode())
    out = tmp_path / "s.jsonl"
    model = scripted_model(tmp_path, "<predicted_observation>\ntotal 0\n</predicted_observation>")
    result = awl("run", str(script), "-m", model, "--initial-state", str(state), "-o", str(out), home=tmp_path)
    assert result.returncode == 0, result.stderr
    trajectory = read_trajectory(out)
    assert trajectory.turns[0].action == "ls -la" and trajectory.header.initial_state == "user@box:~$ \n"


def test_a_script_that_is_not_utf8_names_the_line(tmp_path, qwen_gguf):
    script = tmp_path / "a.txt"
    script.write_bytes(b"ls\necho caf\xe9\n")
    result = awl("run", str(script), "-m", str(qwen_gguf), "-o", str(tmp_path / "s.jsonl"), home=tmp_path)
    refused_before_loading(result, "not UTF-8 text (byte 0xe9 on line 2)")


def test_a_task_that_is_not_utf8_is_refused(tmp_path, qwen_gguf):
    """Bytes from the command line that are not UTF-8 reach Python as lone surrogates."""
    command = [sys.executable, "-m", "agentworld_local.cli.main", "run", "-m", str(qwen_gguf), "--task", b"caf\xe9"]
    result = subprocess.run(command, input="ls\n", capture_output=True, text=True, env=awl_env(tmp_path), cwd=REPO)
    refused_before_loading(result, "--task holds bytes that are not UTF-8")


@pytest.mark.parametrize("bad", [b"echo caf\xe9\n", b"echo \xed\xa0\x80\n", b"\xff\xfe\n"])
def test_piped_stdin_that_is_not_utf8_ends_with_the_line_named_and_the_turns_kept(tmp_path, bad):
    """Latin-1 bytes and an encoded lone surrogate used to reach the tokenizer (UnicodeEncodeError)."""
    out = tmp_path / "s.jsonl"
    model = scripted_model(tmp_path, "<predicted_observation>\nok\n</predicted_observation>")
    result = subprocess.run(
        [sys.executable, "-m", "agentworld_local.cli.main", "run", "-m", model, "-o", str(out)],
        input=b"ls\n" + bad + b"pwd\n", capture_output=True, env=awl_env(tmp_path), cwd=REPO,
    )
    result.stderr = result.stderr.decode()
    one_error_mid_session(result, "stdin:2: the line is not UTF-8 text", f"1 completed turn is saved in {out}")
    assert [t.action for t in read_trajectory(out).turns] == ["ls"]


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_at_the_prompt_a_line_that_is_not_utf8_is_reported_and_the_session_goes_on(tmp_path):
    import pty
    import time

    master, slave = pty.openpty()
    errors, out = tmp_path / "stderr.txt", tmp_path / "s.jsonl"
    model = scripted_model(tmp_path, "<predicted_observation>\nok\n</predicted_observation>")
    with errors.open("w") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "agentworld_local.cli.main", "run", "-m", model, "-o", str(out)],
                                   stdin=slave, stdout=subprocess.DEVNULL, stderr=stderr, env=awl_env(tmp_path), cwd=REPO)
    os.close(slave)

    def wait_for(text: str, count: int = 1) -> None:
        """Until stderr shows `text` (no deadline: pytest-timeout stops a hang), while it runs."""
        while errors.read_text(errors="replace").count(text) < count:
            assert process.poll() is None, errors.read_text()
            time.sleep(0.02)

    try:
        wait_for("action> ")
        os.write(master, b"echo caf\xe9\n")
        wait_for("not UTF-8")
        os.write(master, b"ls\n")
        wait_for("action> ", count=3)
        os.write(master, b"\x04")
        assert process.wait() == 0, errors.read_text()
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
    assert [t.action for t in read_trajectory(out).turns] == ["ls"]
    assert "Traceback" not in errors.read_text()


def test_a_full_context_mid_session_says_what_is_saved_and_how_to_go_on(tmp_path):
    # Turn 1's observation alone outgrows the context: the context policy always keeps turn 1
    # (task and initial state), so no cut can help and the session must stop clearly.
    long_screen = "\n".join(f"line {n} " + "x" * 60 for n in range(120))
    model = scripted_model(tmp_path, f"<predicted_observation>\n{long_screen}\n</predicted_observation>", chunk=400)
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", model, "-o", str(out), "--ctx", "2048", "--json", home=tmp_path, stdin="ls\npwd\nwhoami\n")
    turns = len(read_trajectory(out).turns)
    assert 1 <= turns < 3
    one_error_mid_session(result, "the context holds 2048", f"{turns} completed turn", f"saved in {out}", f"`awl run --resume {out}`", "larger `--ctx`")
    *_, error, saved = (json.loads(line) for line in result.stdout.splitlines())
    # --json tells a program why the session ended (the same words as stderr), then where its turns are.
    assert error["event"] == "error" and "the context holds 2048" in error["message"] and f"saved in {out}" in error["message"]
    assert saved == {"event": "saved", "path": str(out), "turns": turns}


@pytest.mark.skipif(sys.platform == "win32", reason="uses RLIMIT_FSIZE")
def test_a_full_disk_mid_run_gives_one_clear_error_and_keeps_the_saved_turns(tmp_path):
    """The file size limit stands in for a full disk: the third line cannot be written."""
    import resource
    import signal

    listing = "\n".join(f"-rw-r--r-- 1 dev dev {n * 37} Nov 30 09:12 file{n}.log" for n in range(60))
    model = scripted_model(tmp_path, f"<predicted_observation>\n{listing}\n</predicted_observation>", chunk=7)
    probe = tmp_path / "probe.jsonl"
    assert awl("run", "-m", model, "-o", str(probe), home=tmp_path, stdin="ls\n").returncode == 0
    limit = probe.stat().st_size + 1000  # the header and one turn fit; the second turn does not

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    out = tmp_path / "s.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "agentworld_local.cli.main", "run", "-m", model, "-o", str(out)],
        input="ls\npwd\nwhoami\n", capture_output=True, text=True, env=awl_env(tmp_path), cwd=REPO,
        preexec_fn=small_disk,
    )
    one_error_mid_session(result, str(out), "File too large", f"1 completed turn is saved in {out}")
    trajectory = read_trajectory(out)
    assert [t.action for t in trajectory.turns] == ["ls"] and not trajectory.warnings
