"""`awl run --resume`: the session's own model (taken from the file, another refused unless
allowed), sampling that may change and is recorded, `--resume last`, and `awl sessions list`."""

from __future__ import annotations

import json
import os
import shutil

from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import assert_one_line_error, awl, scripted_model

THOUGHT_LS = "<think>\nAn empty directory lists nothing.\n</think>\n<predicted_observation>\ntotal 0\n</predicted_observation>"
CUT_OFF = {"raw": "<think>\nA long log.\n</think>\n<predicted_observation>\nline 1\nline 2", "chunk": 4, "finish": "length"}
LLAMA = ("--think", "4", "--max-tokens", "8", "--ctx", "4096")


def test_resume_without_model_takes_the_model_from_the_file(tmp_path):
    out = tmp_path / "s.jsonl"
    model = scripted_model(tmp_path, THOUGHT_LS)
    assert awl("run", "-m", model, "-o", str(out), home=tmp_path, stdin="ls\n").returncode == 0
    result = awl("run", "--resume", str(out), "--json", home=tmp_path, stdin="pwd\n")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == {"event": "saved", "path": str(out), "turns": 2}
    turns = read_trajectory(out).current_branch()
    assert [t.action for t in turns] == ["ls", "pwd"] and turns[-1].model is None


def test_another_model_is_refused_naming_the_file_unless_allowed(tmp_path):
    out = tmp_path / "s.jsonl"
    made_with = scripted_model(tmp_path, THOUGHT_LS)
    other = scripted_model(tmp_path, THOUGHT_LS.replace("total 0", "total 8"), name="other.json")
    assert awl("run", "-m", made_with, "-o", str(out), home=tmp_path, stdin="ls\n").returncode == 0
    before = out.read_bytes()
    refused = awl("run", "--resume", str(out), "-m", other, home=tmp_path, stdin="pwd\n")
    assert_one_line_error(refused, f"was made with {tmp_path / 'answers.json'}", "--allow-other-model")
    assert out.read_bytes() == before
    allowed = awl("run", "--resume", str(out), "-m", other, "--allow-other-model", home=tmp_path, stdin="pwd\nid\n")
    assert allowed.returncode == 0, allowed.stderr
    assert "each new turn records it" in allowed.stderr
    turns = read_trajectory(out).current_branch()
    assert [t.model.path if t.model else None for t in turns] == [None, str(tmp_path / "other.json"), str(tmp_path / "other.json")]
    assert turns[-1].observation == "total 8"


def test_allow_other_model_needs_resume(tmp_path):
    model = scripted_model(tmp_path, THOUGHT_LS)
    assert_one_line_error(awl("run", "-m", model, "--allow-other-model", home=tmp_path, stdin="ls\n"),
                          "--allow-other-model only works with --resume")


def test_raising_max_tokens_after_a_length_ending_goes_on_and_is_recorded(tmp_path):
    out = tmp_path / "s.jsonl"
    model = scripted_model(tmp_path, CUT_OFF, THOUGHT_LS)
    first = awl("run", "-m", model, "-o", str(out), "--max-tokens", "64", home=tmp_path, stdin="cat build.log\n")
    assert first.returncode == 0, first.stderr
    assert read_trajectory(out).turns[0].finish == "length"
    again = awl("run", "--resume", str(out), "--max-tokens", "4096", "--think", "off", "--seed", "11",
                home=tmp_path, stdin="cat build.log\n")
    assert again.returncode == 0, again.stderr
    traj = read_trajectory(out)
    assert traj.header.sampling["max_tokens"] == 64 and traj.header.seed == 0
    assert [t.settings for t in traj.current_branch()] == [None, {"max_tokens": 4096, "think": "off", "seed": 11}]


def test_resume_last_continues_the_newest_session_and_sessions_list_shows_it(tmp_path):
    model = scripted_model(tmp_path, THOUGHT_LS)
    assert awl("run", "-m", model, "-d", "terminal", home=tmp_path, stdin="ls\n").returncode == 0
    sessions = tmp_path / "data" if (tmp_path / "data").is_dir() else tmp_path
    older = next(sessions.rglob("*.jsonl"))
    os.utime(older, (1_700_000_000, 1_700_000_000))  # make it clearly the older one
    assert awl("run", "-m", model, "-s", "python-web-app", home=tmp_path, stdin="ls\npwd\n").returncode == 0
    newest = next(path for path in sessions.rglob("*.jsonl") if path != older)
    result = awl("run", "--resume", "last", home=tmp_path, stdin="whoami\n")
    assert result.returncode == 0, result.stderr
    assert [t.action for t in read_trajectory(newest).current_branch()] == ["ls", "pwd", "whoami"]
    listed = awl("sessions", "list", "--json", home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [row["file"] for row in rows] == [str(newest), str(older)]  # newest first
    assert rows[0]["scenario"] == "python-web-app" and rows[0]["turns"] == 3 and rows[0]["model"] == "scripted:answers.json"
    assert rows[1]["domain"] == "terminal" and rows[1]["scenario"] is None and rows[1]["turns"] == 1
    assert rows[1]["changed"] == "2023-11-14T22:13:20Z"
    plain = awl("sessions", "list", home=tmp_path)  # not a terminal: a header, then one tab-separated line each
    assert [line.split("\t")[0] for line in plain.stdout.splitlines()] == ["file", str(newest), str(older)]


def test_resume_last_with_no_session_says_what_to_do(tmp_path):
    assert_one_line_error(awl("run", "--resume", "last", home=tmp_path, stdin=""), "There is no saved session", "awl run")


def test_a_damaged_file_in_the_sessions_dir_is_listed_not_fatal(tmp_path):
    model = scripted_model(tmp_path, THOUGHT_LS)
    assert awl("run", "-m", model, home=tmp_path, stdin="ls\n").returncode == 0
    good = next(tmp_path.rglob("*.jsonl"))
    (good.parent / "broken.jsonl").write_text("not json\n", encoding="utf-8")
    rows = json.loads(awl("sessions", "list", "--json", home=tmp_path).stdout)
    assert {row["file"]: row["turns"] for row in rows} == {str(good): 1, str(good.parent / "broken.jsonl"): None}
    assert next(row for row in rows if row["turns"] is None)["problem"]


def test_a_different_gguf_is_refused_before_it_loads(tmp_path, qwen_gguf):
    out = tmp_path / "s.jsonl"
    first = awl("run", "-m", str(qwen_gguf), *LLAMA, "-o", str(out), home=tmp_path, stdin="ls\n")
    assert first.returncode == 0, first.stderr
    # Another size: refused from the size alone. The file would not even load (only its magic is
    # a GGUF's), so the refusal proves nothing was loaded.
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"GGUF" + b"\0" * 100)
    assert_one_line_error(awl("run", "--resume", str(out), "-m", str(junk), "--ctx", "4096", home=tmp_path, stdin="pwd\n"),
                          f"was made with {qwen_gguf}", "is another model")
    # Same size, other content: refused by the hash the header records.
    twin = tmp_path / "twin.gguf"
    shutil.copy(qwen_gguf, twin)
    data = bytearray(twin.read_bytes())
    data[-1] ^= 0xFF
    twin.write_bytes(bytes(data))
    assert_one_line_error(awl("run", "--resume", str(out), "-m", str(twin), "--ctx", "4096", home=tmp_path, stdin="pwd\n"),
                          "same size, different content")
    # The session's own file, replaced by another: no --model given, refused with what to do.
    moved = tmp_path / "moved.gguf"
    shutil.copy(qwen_gguf, moved)
    made = awl("run", "-m", str(moved), *LLAMA, "-o", str(tmp_path / "m.jsonl"), home=tmp_path, stdin="ls\n")
    assert made.returncode == 0, made.stderr
    shutil.copy(twin, moved)
    assert_one_line_error(awl("run", "--resume", str(tmp_path / "m.jsonl"), "--ctx", "4096", home=tmp_path, stdin="pwd\n"),
                          "same size, different content", "Put the session's model back at that path")
    # The same file under another path is the same model.
    copy = tmp_path / "copy.gguf"
    shutil.copy(qwen_gguf, copy)
    same = awl("run", "--resume", str(out), "-m", str(copy), "--ctx", "4096", home=tmp_path, stdin="pwd\n")
    assert same.returncode == 0, same.stderr
    assert len(read_trajectory(out).current_branch()) == 2


def test_play_resume_applies_the_same_rules_before_the_screen_opens(tmp_path):
    made_with = scripted_model(tmp_path, THOUGHT_LS)
    other = scripted_model(tmp_path, THOUGHT_LS.replace("total 0", "total 8"), name="other.json")
    assert awl("run", "-m", made_with, home=tmp_path, stdin="ls\n").returncode == 0
    out = next(tmp_path.rglob("*.jsonl"))
    # Without a terminal awl play stops before its screen; the model is refused before that.
    assert_one_line_error(awl("play", "--resume", str(out), "-m", other, home=tmp_path),
                          f"was made with {tmp_path / 'answers.json'}")
    assert_one_line_error(awl("play", "--resume", "last", "-m", other, home=tmp_path), "was made with")
    assert_one_line_error(awl("play", "--resume", "last", home=tmp_path), "needs a terminal")  # its own model: fine


def test_a_session_made_with_a_relative_model_path_resumes_from_another_directory(tmp_path):
    import subprocess
    import sys

    from tests.cli.helpers import REPO, awl_env

    made_in, elsewhere = tmp_path / "a", tmp_path / "b"
    made_in.mkdir()
    elsewhere.mkdir()
    scripted_model(made_in, THOUGHT_LS)

    def run(*args: str, cwd) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "agentworld_local.cli.main", *args], input="ls\n", text=True,
                              capture_output=True, cwd=cwd, env=awl_env(tmp_path, PYTHONPATH=str(REPO)))

    assert run("run", "-m", "scripted:answers.json", "-o", "s.jsonl", cwd=made_in).returncode == 0
    resumed = run("run", "--resume", str(made_in / "s.jsonl"), cwd=elsewhere)
    assert resumed.returncode == 0, resumed.stderr
    assert len(read_trajectory(made_in / "s.jsonl").current_branch()) == 2
