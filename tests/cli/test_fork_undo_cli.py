"""`awl fork`, undo at the end of a session, and damaged or hostile files through the real CLI."""

from __future__ import annotations

import json
import os

from agentworld_local.trajectory import TrajectoryWriter, read_trajectory
from tests.cli.helpers import assert_one_line_error, awl
from tests.unit.test_trajectory import make_header, make_turn, write_linear
from tests.unit.test_trajectory_faults import UTC_FORM, hostile_session

FAST = ["--think", "4", "--max-tokens", "8", "--ctx", "4096", "--seed", "3"]


def test_an_undo_at_the_end_is_what_replay_export_and_fork_show(tmp_path, qwen_gguf):
    script = tmp_path / "a.txt"
    script.write_text("ls\npwd\n:undo\n", encoding="utf-8")
    out = tmp_path / "s.jsonl"
    result = awl("run", str(script), "-m", str(qwen_gguf), "-o", str(out), *FAST, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "saved 1 turn " in result.stderr
    saved = read_trajectory(out)
    assert [t.action for t in saved.current_branch()] == ["ls"]
    # Turn timestamps have the header's form (they used to end in +00:00).
    assert all(UTC_FORM.match(stamp) for stamp in [saved.header.created, *(t.created for t in saved.turns)])
    replayed = awl("replay", str(out), "--plain", home=tmp_path)
    assert replayed.returncode == 0 and "turns: 1 (plus 1 undone)" in replayed.stdout
    assert "== Turn 2" not in replayed.stdout and "pwd" not in replayed.stdout.split("== Turn 1")[1]
    exported = awl("export", str(out), home=tmp_path)
    assert exported.returncode == 0, exported.stderr
    [row] = [json.loads(line) for line in exported.stdout.splitlines()]
    assert row["total_turns"] == 1 and len(row["prompt"]) == 1
    forked = awl("fork", str(out), "--out", str(tmp_path / "f.jsonl"), home=tmp_path)
    assert forked.returncode == 0 and "wrote 1 turn to" in forked.stderr
    assert [t.action for t in read_trajectory(tmp_path / "f.jsonl").turns] == ["ls"]


def damaged_file(tmp_path):
    path = tmp_path / "s.jsonl"
    write_linear(path, [("ls", "a.txt"), ("pwd", "/home"), ("whoami", "me")])
    lines = path.read_bytes().split(b"\n")
    lines[3] = b'{"type": "turn", "id": 3, "action": "\xff' + b"[" * 100_000  # line 4: bad bytes, deep
    path.write_bytes(b"\n".join(lines))
    return path


def test_a_damaged_file_replays_and_exports_its_intact_turns_and_forks_clean(tmp_path):
    path = damaged_file(tmp_path)
    replayed = awl("replay", str(path), "--plain", home=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert "/home" in replayed.stdout and "whoami" not in replayed.stdout
    [warning] = replayed.stderr.splitlines()
    assert warning.startswith("awl: warning: line 4 is damaged (not UTF-8") and "kept the 2 intact turns before it" in warning
    assert f"awl fork {path} --turn 2 --out NEW.jsonl" in warning and "Traceback" not in replayed.stderr
    clean = tmp_path / "clean.jsonl"
    forked = awl("fork", str(path), "--turn", "2", "--out", str(clean), home=tmp_path)
    assert forked.returncode == 0, forked.stderr
    assert "line 4 is damaged" in forked.stderr and "To keep going" not in forked.stderr
    assert [t.action for t in read_trajectory(clean).turns] == ["ls", "pwd"] and read_trajectory(clean).warnings == []
    # The hint's own command works as written.
    again = awl("fork", str(path), "--turn", "2", "--out", str(tmp_path / "NEW.jsonl"), home=tmp_path)
    assert again.returncode == 0, again.stderr


def test_fork_of_a_cut_off_file_and_its_errors(tmp_path):
    path = tmp_path / "s.jsonl"
    write_linear(path, [("ls", "a"), ("pwd", "/")])
    with open(path, "ab") as handle:
        handle.write(b'{"type": "turn", "id": 3, "par')
    result = awl("fork", str(path), "--out", str(tmp_path / "f.jsonl"), home=tmp_path)
    assert result.returncode == 0 and "wrote 2 turns" in result.stderr and "line 4 is incomplete" in result.stderr
    assert_one_line_error(awl("fork", str(path), "--out", str(tmp_path / "f.jsonl"), home=tmp_path), "already exists")
    assert_one_line_error(awl("fork", str(path), "--turn", "5", "--out", str(tmp_path / "g.jsonl"), home=tmp_path),
                          "cannot fork at turn 5", "from 0 to 2")
    assert_one_line_error(awl("fork", str(path), "--turn", "-1", "--out", str(tmp_path / "g.jsonl"), home=tmp_path),
                          "--turn counts from 0")
    assert_one_line_error(awl("fork", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "g.jsonl"), home=tmp_path),
                          "does not exist")
    assert not (tmp_path / "g.jsonl").exists()
    zero = awl("fork", str(path), "--turn", "0", "--out", str(tmp_path / "z.jsonl"), home=tmp_path)
    assert zero.returncode == 0 and read_trajectory(tmp_path / "z.jsonl").turns == []


def test_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    assert_one_line_error(awl("replay", str(fifo), home=tmp_path), "not a regular file")
    assert_one_line_error(awl("export", str(fifo), home=tmp_path), "not a regular file")
    assert_one_line_error(awl("import", str(fifo), "--out-dir", str(tmp_path / "o"), home=tmp_path), "not a regular file")


def test_hostile_text_replays_and_exports_without_a_traceback(tmp_path):
    path = tmp_path / "s.jsonl"
    hostile_session(path)
    for mode in (["--plain"], []):
        result = awl("replay", str(path), "--thinking", *mode, home=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "\x1b]" not in result.stdout and "\\x1b]0;pwned" in result.stdout
    exported = awl("export", str(path), home=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["prompt"] == ["### Turn 1\n\x1b[2J \ud800"]
    out = tmp_path / "rows.jsonl"
    assert awl("export", str(path), "--out", str(out), home=tmp_path).returncode == 0
    assert out.read_text(encoding="utf-8") == exported.stdout


def test_export_into_a_closed_pipe_is_quiet(tmp_path):
    path = tmp_path / "s.jsonl"
    with TrajectoryWriter.create(path, make_header()) as writer:
        parent = None
        for n in range(1, 200):
            turn = make_turn(f"echo {n}", "x" * 2000, parent)
            turn.prompt = f"### Turn {n}\n" + "p" * 2000
            parent = writer.append(turn).id
    import subprocess
    import sys

    from tests.cli.helpers import REPO, awl_env

    shell = f"{sys.executable} -m agentworld_local.cli.main export {path} | head -c 100 > /dev/null"
    result = subprocess.run(["bash", "-c", "set -o pipefail; " + shell], env=awl_env(tmp_path), cwd=REPO,
                            capture_output=True, text=True)
    assert "Traceback" not in result.stderr and "Broken pipe" not in result.stderr, result.stderr
