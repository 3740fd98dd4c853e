"""`--shared-world NAME` on the command line: `awl run` twice in one world meets the first run's
observations though its scripted model would answer otherwise (`--json` prints `from_world`,
people read a line), and every command refuses a bad name in one line before anything loads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentworld_local.cli.turn_output import from_world_line
from agentworld_local.engine import events
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.worlds.names import NAME_RULE
from tests.cli.helpers import REPO, assert_one_line_error, awl, awl_env, scripted_model

NOT_A_NAME = f"is not a shared world name: a name is {NAME_RULE}."
ACTIONS = "ls -la\ncat README.md\npwd\n"


def said(text: str) -> str:
    return f"<think>\nThe agent looks at {text}.\n</think>\n<predicted_observation>\n{text}\n</predicted_observation>"


def model(tmp_path: Path, prefix: str) -> str:
    """`scripted:FOLDER/answers.json`: every run's model has one name (scripted:answers.json),
    each file its own answers."""
    folder = tmp_path / prefix
    folder.mkdir()
    return scripted_model(folder, *(said(f"{prefix}-{index}") for index in range(8)))


def observations(path: Path) -> list[str]:
    return [record.observation for record in read_trajectory(path).current_branch()]


def test_a_second_run_in_the_world_meets_the_first_runs_observations(tmp_path):
    env = awl_env(tmp_path / "home", AWL_WORLDS_DIR=str(tmp_path / "worlds"))
    first_model, second_model = model(tmp_path, "A"), model(tmp_path, "B")
    first = awl("run", "--model", first_model, "--shared-world", "cli-1", "--out", str(tmp_path / "first.jsonl"),
                home=tmp_path / "home", stdin=ACTIONS, env=env)
    second = awl("run", "--model", second_model, "--shared-world", "cli-1", "--json", "--out",
                 str(tmp_path / "second.jsonl"), home=tmp_path / "home", stdin=ACTIONS + "whoami\n", env=env)
    shown = awl("run", "--model", second_model, "--shared-world", "cli-1", "--out", str(tmp_path / "shown.jsonl"),
                home=tmp_path / "home", stdin="ls -la\n", env=env)
    outside = awl("run", "--model", second_model, "--out", str(tmp_path / "outside.jsonl"), home=tmp_path / "home",
                  stdin=ACTIONS, env=env)
    for done in (first, second, shown, outside):
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert observations(tmp_path / "first.jsonl") == ["A-0", "A-1", "A-2"]
    # The shared prefix is the world's; acting otherwise meets the second model's own answer.
    assert observations(tmp_path / "second.jsonl") == ["A-0", "A-1", "A-2", "B-0"]
    assert observations(tmp_path / "outside.jsonl") == ["B-0", "B-1", "B-2"]
    stream = [json.loads(line) for line in second.stdout.splitlines()]
    assert [(item["turn"], item["world"], item["source"]) for item in stream if item["event"] == "from_world"] == [
        (1, "cli-1", "store"), (2, "cli-1", "store"), (3, "cli-1", "store")]
    finished = [item["record"] for item in stream if item["event"] == "turn_done"]
    assert [record["world"]["from"] for record in finished] == ["store", "store", "store", "model"]
    # People read where the answer came from, once per served turn; the first run predicted its own.
    assert "── from the shared world cli-1 (stored)" in shown.stderr and "from the shared world" not in first.stderr
    assert sorted(path.name for path in (tmp_path / "worlds").iterdir()) == ["cli-1"]
    # A file with served turns is a file as any other: replay shows them, fork copies them.
    replayed = awl("replay", str(tmp_path / "second.jsonl"), "--plain", home=tmp_path / "home", env=env)
    assert replayed.returncode == 0 and all(text in replayed.stdout for text in ("A-0", "A-2", "B-0")), replayed.stderr
    forked = awl("fork", str(tmp_path / "second.jsonl"), "--turn", "2", "--out", str(tmp_path / "forked.jsonl"),
                 home=tmp_path / "home", env=env)
    assert forked.returncode == 0, forked.stderr
    assert observations(tmp_path / "forked.jsonl") == ["A-0", "A-1"]


#: Hostile names as a shell passes them: paths, a huge one, bytes that are not UTF-8 (a lone surrogate).
HOSTILE = ["../x", "/etc", "C:x", "a/b", "x" * 10_240, b"w\xff"]


@pytest.mark.parametrize("value", HOSTILE, ids=["dotdot", "absolute", "drive", "separator", "10kb", "not-utf8"])
def test_awl_run_refuses_a_bad_name_in_one_line(tmp_path, value):
    done = subprocess.run([sys.executable, "-m", "agentworld_local.cli.main", "run", "--model", "scripted:/nowhere.json",
                           "--shared-world", value], input="ls\n", capture_output=True, text=True, cwd=REPO,
                          env=awl_env(tmp_path / "home", AWL_WORLDS_DIR=str(tmp_path / "worlds")))
    assert_one_line_error(done, NOT_A_NAME)
    assert len(done.stderr) < 600 and not (tmp_path / "worlds").exists() and not (tmp_path / "x").exists()


@pytest.mark.parametrize("command", [["play"], ["mcp", "--model", "scripted:/nowhere.json"],
                                     ["run", "--resume", "last"]])
def test_every_command_refuses_a_bad_name_before_anything_loads(tmp_path, command):
    done = awl(*command, "--shared-world", "../x", home=tmp_path / "home")
    assert_one_line_error(done, NOT_A_NAME)


def test_a_resume_keeps_its_own_world(tmp_path):
    env = awl_env(tmp_path / "home", AWL_WORLDS_DIR=str(tmp_path / "worlds"))
    made = awl("run", "--model", model(tmp_path, "A"), "--shared-world", "mine", "--out", str(tmp_path / "s.jsonl"),
               home=tmp_path / "home", stdin="ls\n", env=env)
    assert made.returncode == 0, made.stderr
    done = awl("run", "--resume", str(tmp_path / "s.jsonl"), "--shared-world", "other", home=tmp_path / "home",
               stdin="pwd\n", env=env)
    assert_one_line_error(done, "--shared-world cannot change it")


@pytest.mark.parametrize("command", ["run", "play", "serve", "mcp"])
def test_help_teaches_the_option_with_an_example(tmp_path, command):
    done = awl(command, "--help", home=tmp_path / "home", env=awl_env(tmp_path / "home", COLUMNS="400"))
    assert done.returncode == 0
    line = next(line for line in done.stdout.splitlines() if "--shared-world" in line and "NAME" in line)
    assert "`--shared-world grpo-1`" in line and "same stored observations" in line  # one line: what, and an example


def test_people_read_where_a_served_answer_came_from():
    assert from_world_line(events.FromWorld(2, "grpo-1", "store")) == "── from the shared world grpo-1 (stored)"
    assert from_world_line(events.FromWorld(3, "web-1", "read")) == (
        "── from the shared world web-1 (a read it answered before)")


def test_the_full_screen_session_opens_in_the_world_awl_play_names():
    from agentworld_local.tui.app import make_app
    from agentworld_local.tui.opening import session_spec

    app = make_app(model="scripted:answers.json", shared_world="play-1")
    assert app.request.shared_world == "play-1"
    assert session_spec(app.request).resolve().settings.shared_world == "play-1"
