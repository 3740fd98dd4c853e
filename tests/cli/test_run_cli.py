"""`awl run` and `awl demo` through the real entry point, on the tiny GGUF fixtures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gguf
import pytest

from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import REPO, assert_one_line_error, awl, awl_env
FAST = ["--think", "4", "--max-tokens", "12", "--ctx", "4096", "--seed", "3"]


def test_run_script_writes_a_trajectory_that_replays(tmp_path, qwen_gguf):
    script = tmp_path / "actions.txt"
    script.write_text("# explore the repo\nls -la\n\ncat README.md\nC-c\n", encoding="utf-8")
    out = tmp_path / "session.jsonl"
    result = awl("run", str(script), "--model", str(qwen_gguf), "--out", str(out), "--task", "look around", *FAST, home=tmp_path)
    assert result.returncode == 0, result.stderr
    trajectory = read_trajectory(out)
    assert [t.action for t in trajectory.turns] == ["ls -la", "cat README.md", "C-c"]
    assert trajectory.header.model.architecture == "qwen35moe"
    assert trajectory.header.model.sha256 and trajectory.header.model.file_size == qwen_gguf.stat().st_size
    assert trajectory.header.think == "4" and trajectory.header.seed == 3 and trajectory.header.task == "look around"
    assert trajectory.turns[0].tokens["thinking"] == 4
    assert f"saved 3 turns to {out}" in result.stderr
    assert "memory estimate for a 4,096-token context on the CPU" in result.stderr  # shown before the load

    replayed = awl("replay", str(out), "--plain", home=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.index("ls -la") < replayed.stdout.index("cat README.md")


def test_run_reads_stdin_and_prints_json_events(tmp_path, llama_gguf):
    out = tmp_path / "s.jsonl"
    result = awl("run", "--model", str(llama_gguf), "--json", "--out", str(out), *FAST, home=tmp_path, stdin="pwd\nls\n")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds.count("action") == 2 and kinds.count("turn_done") == 2
    done = [e for e in events if e["event"] == "turn_done"]
    assert done[0]["record"]["action_payload"] == [{"keystrokes": "pwd\n", "duration": 1.0}]
    assert "timings" in done[1]["record"] and done[1]["record"]["tokens"]["generated"] > 0
    assert len(read_trajectory(out).turns) == 2


def test_undo_in_a_script_branches_the_file(tmp_path, qwen_gguf):
    script = tmp_path / "a.txt"
    script.write_text("ls\npwd\n:undo\nwhoami\n", encoding="utf-8")
    out = tmp_path / "s.jsonl"
    result = awl("run", str(script), "-m", str(qwen_gguf), "-o", str(out), *FAST, home=tmp_path)
    assert result.returncode == 0, result.stderr
    trajectory = read_trajectory(out)
    assert [t.action for t in trajectory.turns] == ["ls", "pwd", "whoami"]
    assert [t.action for t in trajectory.current_branch()] == ["ls", "whoami"]


def test_no_action_is_executed_on_the_host(tmp_path, qwen_gguf):
    """The sandbox is a simulator: actions go to the model as text, never to a shell."""
    victim = tmp_path / "created-by-agent"
    script = tmp_path / "a.txt"
    script.write_text(f"touch {victim}\nmkdir {victim}-dir && echo x > {victim}.txt\n", encoding="utf-8")
    result = awl("run", str(script), "-m", str(qwen_gguf), "-o", str(tmp_path / "s.jsonl"), *FAST, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not victim.exists() and not Path(f"{victim}-dir").exists() and not Path(f"{victim}.txt").exists()


def test_a_malformed_script_line_fails_before_loading_with_its_line_number(tmp_path, qwen_gguf):
    script = tmp_path / "bad.txt"
    script.write_text('ls\n# fine\n[{"keystrokes": "ls"\n', encoding="utf-8")
    result = awl("run", str(script), "-m", str(qwen_gguf), "-o", str(tmp_path / "s.jsonl"), home=tmp_path)
    assert_one_line_error(result, f"{script}:3", "Invalid JSON action")
    assert not (tmp_path / "s.jsonl").exists()


def test_missing_model(tmp_path):
    result = awl("run", "--model", str(tmp_path / "nope.gguf"), home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, "Model file not found")


def test_file_that_is_not_gguf(tmp_path):
    fake = tmp_path / "model.gguf"
    fake.write_text("<html>404</html>")
    result = awl("run", "--model", str(fake), home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, "is not a GGUF file")


def test_architecture_this_llama_cpp_does_not_know(tmp_path):
    path = tmp_path / "alien.gguf"
    writer = gguf.GGUFWriter(str(path), "frobnicator")
    writer.add_block_count(1)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    result = awl("run", "--model", str(path), home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, "does not know the architecture `frobnicator`", "pip install -U llama-cpp-python")


def test_bad_think_value_and_existing_output(tmp_path, qwen_gguf):
    assert_one_line_error(awl("run", "-m", str(qwen_gguf), "--think", "lots", home=tmp_path, stdin=""), "--think")
    existing = tmp_path / "kept.jsonl"
    existing.write_text("precious\n")
    result = awl("run", "-m", str(qwen_gguf), "-o", str(existing), home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, "already exists")
    assert existing.read_text() == "precious\n"


def test_unreadable_trajectory(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text("hello world\n")
    assert_one_line_error(awl("replay", str(bad), home=tmp_path), "not an awl trajectory")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery differs on Windows")
def test_ctrl_c_keeps_every_completed_turn(tmp_path, qwen_gguf):
    script = tmp_path / "long.txt"
    script.write_text("\n".join(f"echo {n}" for n in range(200)) + "\n", encoding="utf-8")
    out = tmp_path / "s.jsonl"
    env = awl_env(tmp_path)
    args = ["run", str(script), "-m", str(qwen_gguf), "-o", str(out), "--think", "full", "--max-tokens", "400"]
    process = subprocess.Popen(
        [sys.executable, "-m", "agentworld_local.cli.main", *args, "--ctx", "32768"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )
    # Until 2 turns are saved (no deadline: pytest-timeout stops a hang), while it still runs.
    while not (out.exists() and out.read_text(encoding="utf-8").count('"type": "turn"') >= 2):
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "completed turns are saved" in stderr
    trajectory = read_trajectory(out)
    assert len(trajectory.turns) >= 2 and not trajectory.warnings
    assert all(t.finish in ("stop", "length") for t in trajectory.turns)


def test_demo_replays_the_bundled_session_without_a_model(tmp_path):
    result = awl("demo", "--plain", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "hand-written example, not model output" in result.stdout
    assert "python -m pytest -q" in result.stdout and "4 passed" in result.stdout


def test_demo_runs_the_scenario_live_with_a_model(tmp_path, qwen_gguf):
    out = tmp_path / "live.jsonl"
    result = awl("demo", "--model", str(qwen_gguf), "--out", str(out), "--ctx", "8192", "--max-tokens", "16", home=tmp_path)
    assert result.returncode == 0, result.stderr
    live = read_trajectory(out)
    assert not live.header.hand_written
    assert [t.action for t in live.turns][:2] == ["ls -la", "git status"]
    # The example's setting: the raw starting screen, and the machine in the world description.
    assert live.header.initial_state == "dev@laptop:~/todo-api$ " and "Flask" in live.header.world


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_ctrl_c_at_an_interactive_prompt_cancels_only_the_turn(tmp_path, qwen_gguf):
    """At the `action>` prompt a slow turn can be stopped without losing the loaded model."""
    import pty

    master, slave = pty.openpty()
    errors = tmp_path / "stderr.txt"
    out = tmp_path / "s.jsonl"
    # A long starting screen makes turn 1 take seconds, so the signal surely lands inside it.
    state = tmp_path / "screen.txt"
    state.write_text("".join(f"-rw-r--r-- 1 dev dev {n} Nov 30 09:12 file{n}.log\n" for n in range(300)), encoding="utf-8")
    args = ["run", "-m", str(qwen_gguf), "-o", str(out), "--think", "full", "--max-tokens", "30000", "--ctx", "32768",
            "--initial-state", str(state)]
    with errors.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "agentworld_local.cli.main", *args],
            stdin=slave, stdout=subprocess.DEVNULL, stderr=stderr, env=awl_env(tmp_path), cwd=REPO,
        )
    os.close(slave)

    def wait_for(text: str, count: int = 1) -> None:
        """Until stderr shows `text` (no deadline: pytest-timeout stops a hang), while it runs."""
        while errors.read_text().count(text) < count:
            assert process.poll() is None, errors.read_text()
            time.sleep(0.05)

    try:
        wait_for("action> ")
        os.write(master, b":undo\n")  # a mistake at the prompt is reported, the session goes on
        wait_for("There is no turn to undo yet. Run an action first.")
        os.write(master, b"cat /var/log/syslog\n")
        wait_for("turn 1")
        process.send_signal(signal.SIGINT)
        wait_for("turn cancelled")
        wait_for("action> ", count=3)  # back at the prompt, same process
        assert process.poll() is None
        os.write(master, b"\x04")  # Ctrl+D, end of input: the session ends normally
        assert process.wait() == 0, errors.read_text()
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
    # The one turn was cancelled, so the session never got a turn: it leaves no file behind.
    assert not out.exists() and "no turn was completed, so no session file was kept." in errors.read_text()
    assert "Traceback" not in errors.read_text()


def test_web_state_as_html(tmp_path, qwen_gguf):
    out = tmp_path / "s.jsonl"
    result = awl("run", "-d", "web", "--state-format", "html", "-m", str(qwen_gguf), "-o", str(out), *FAST,
                 home=tmp_path, stdin="click 12\n")
    assert result.returncode == 0, result.stderr
    header = read_trajectory(out).header
    # The official web prompt names no representation: the state shows it (docs/domains.md).
    assert "<html>" in header.initial_state and header.state_format == "html"
    assert read_trajectory(out).turns[0].prompt.endswith("**Action:**\nclick('12')")
    wrong = awl("run", "-d", "terminal", "--state-format", "html", "-m", str(qwen_gguf), home=tmp_path, stdin="ls\n")
    assert_one_line_error(wrong, "no state format `html`")


def test_brackets_in_actions_are_shown_as_typed(tmp_path, llama_gguf):
    """Status lines use rich markup; an action like `echo [/x]` must print, not crash."""
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", str(llama_gguf), "-o", str(out), *FAST, home=tmp_path, stdin="echo [/x] [bold]y\n")
    assert result.returncode == 0, result.stderr
    assert "── turn 1 ── echo [/x] [bold]y" in result.stderr
    assert read_trajectory(out).turns[0].action == "echo [/x] [bold]y"


def test_truncated_model_file(tmp_path, qwen_gguf):
    """An interrupted download: the estimate shown before the load says what to do."""
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(qwen_gguf.read_bytes()[:300_000])
    result = awl("run", "-m", str(cut), "-o", str(tmp_path / "s.jsonl"), home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, "cut.gguf", "Re-download")
