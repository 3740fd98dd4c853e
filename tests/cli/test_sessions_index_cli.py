"""`awl sessions list` and `--resume last` find sessions wherever awl wrote them (the index
session/files.py appends to), say when there are none, and name their columns."""

from __future__ import annotations

import json
import os
import time

from agentworld_local.session import files, listing
from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import awl, scripted_model

LS = "<predicted_observation>\na.txt\n</predicted_observation>"


def test_no_sessions_is_said_and_scripts_get_no_line(tmp_path):
    result = awl("sessions", "list", home=tmp_path)
    assert result.returncode == 0 and result.stdout == ""
    assert "No sessions yet in" in result.stderr and "awl run" in result.stderr
    assert json.loads(awl("sessions", "list", "--json", home=tmp_path).stdout) == []


def test_a_session_written_elsewhere_is_listed_and_resumed_as_last(tmp_path):
    model = scripted_model(tmp_path, LS, LS)
    elsewhere = tmp_path / "work" / "mine.jsonl"
    assert awl("run", "-m", model, home=tmp_path, stdin="ls\n").returncode == 0  # in the sessions dir
    in_dir = next((tmp_path / "data" / "sessions").glob("*.jsonl"))
    os.utime(in_dir, (1_700_000_000, 1_700_000_000))
    assert awl("run", "-m", model, "-o", str(elsewhere), home=tmp_path, stdin="ls\n").returncode == 0
    plain = awl("sessions", "list", home=tmp_path)
    lines = plain.stdout.splitlines()
    assert lines[0].split("\t") == ["file", "world", "model", "turns", "changed"]
    assert [line.split("\t")[0] for line in lines[1:]] == [str(elsewhere), str(in_dir)]
    again = awl("run", "--resume", "last", home=tmp_path, stdin="pwd\n")
    assert again.returncode == 0, again.stderr
    assert [turn.action for turn in read_trajectory(elsewhere).current_branch()] == ["ls", "pwd"]
    elsewhere.unlink()  # a file the user removed is no longer listed
    rows = json.loads(awl("sessions", "list", "--json", home=tmp_path).stdout)
    assert [row["file"] for row in rows] == [str(in_dir)]


def test_an_export_is_not_a_session(tmp_path):
    cast = tmp_path / "demo.cast"
    done = awl("export", "assets/examples/terminal-demo.jsonl", "--format", "asciicast", "--out", str(cast), home=tmp_path)
    assert done.returncode == 0, done.stderr
    forked = tmp_path / "forked.jsonl"
    assert awl("fork", "assets/examples/terminal-demo.jsonl", "--out", str(forked), home=tmp_path).returncode == 0
    rows = json.loads(awl("sessions", "list", "--json", home=tmp_path).stdout)
    assert [row["file"] for row in rows] == [str(forked)]


def test_the_index_forgets_files_long_gone_but_not_one_being_written(tmp_path, monkeypatch):
    monkeypatch.setenv("AWL_HOME", str(tmp_path))
    index = files.sessions_index()
    index.parent.mkdir(parents=True)
    gone, loading, there = tmp_path / "gone.jsonl", tmp_path / "loading.jsonl", tmp_path / "there.jsonl"
    there.write_text("{}\n")
    old = time.time() - 2 * listing.FORGET_MISSING_S
    lines = [{"file": str(gone), "at": old}, {"file": str(loading), "at": time.time()}, {"file": str(there), "at": old}]
    index.write_text("".join(json.dumps(line) + "\n" for line in lines) + "not json\n")
    assert listing.indexed_paths() == [there]
    assert [json.loads(line)["file"] for line in index.read_text().splitlines()] == [str(loading), str(there)]


def test_a_program_that_imports_awl_adds_nothing_to_the_index(tmp_path, monkeypatch):
    monkeypatch.setenv("AWL_HOME", str(tmp_path))
    files.ensure_new_file(tmp_path / "episode.jsonl")  # a gym environment's episodes are its own
    assert not files.sessions_index().exists()
