"""`awl play` and `awl` alone: mistakes refused in one line before the screen opens; no
terminal, no TUI; and once in a real terminal (tmux): type an action, see the observation,
quit, and find the turn in the file."""

from __future__ import annotations

import json
import shutil

import pytest

from agentworld_local.testing.answers import answer
from agentworld_local.trajectory.reader import read_trajectory

from tests.cli.helpers import AwlInTmux, assert_one_line_error, awl


def test_play_without_a_terminal_is_refused_in_one_line(tmp_path):
    result = awl("play", home=tmp_path, stdin="")
    assert_one_line_error(result, "needs a terminal", "awl run")


@pytest.mark.parametrize("args, fragment", [
    (["--think", "lots"], "lots"),
    (["--scenario", "no-such-world"], "no-such-world"),
    (["--domain", "spaceship"], "spaceship"),
    (["--ctx", "10"], "--ctx 10"),
    (["--domain", "web", "--scenario", "python-web-app"], "`awl scenarios list --domain web`"),  # the session spec's rule
])
def test_play_refuses_bad_options_before_the_screen_opens(tmp_path, args, fragment):
    assert_one_line_error(awl("play", *args, home=tmp_path, stdin=""), fragment)


def test_play_never_overwrites_a_file(tmp_path):
    taken = tmp_path / "taken.jsonl"
    taken.write_text("keep\n")
    assert_one_line_error(awl("play", "--out", str(taken), home=tmp_path, stdin=""), "already exists")
    assert taken.read_text() == "keep\n"


def test_awl_alone_in_a_pipe_prints_the_help(tmp_path):
    result = awl(home=tmp_path, stdin="")
    assert "Usage: awl" in result.stdout and "play" in result.stdout  # the help, as before: no screen
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed; the real-terminal check needs it")
def test_play_in_a_real_terminal(tmp_path):
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"version": 1, "answers": [{"raw": answer("thinking_then_tags").raw}]}))
    out = tmp_path / "played.jsonl"
    with AwlInTmux("play", "-m", f"scripted:{answers}", "--out", str(out), home=tmp_path, exited_marker="PLAY-EXITED") as term:
        screen = term.wait_for("Timeline")
        assert "Linux terminal" in screen, screen
        term.keys("ls -la", literal=True)
        term.keys("Enter")
        screen = term.wait_for("drwxr-xr-x 2 root root 4096 Mar  4 09:12 src")
        assert screen.count("drwxr-xr-x 2 root root 4096 Mar  4 09:12 src") == 1, screen
        assert "turn 1" in screen, screen
        term.keys("C-q")
        screen = term.wait_for("PLAY-EXITED-")
        assert "PLAY-EXITED-0" in screen, screen
    assert [record.action for record in read_trajectory(out).turns] == ["ls -la"]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed; the real-terminal check needs it")
def test_play_takes_the_session_options_of_run(tmp_path):
    """--task, --control, --prompts, --temperature, --max-tokens, --seed and --ctx reach the
    session as they do with `awl run` (the same option definitions, cli/session_options.py)."""
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"version": 1, "answers": [{"raw": answer("thinking_then_tags").raw}]}))
    pack = tmp_path / "prompts" / "terminal"
    pack.mkdir(parents=True)
    (pack / "system_prompt.txt").write_text("You are the terminal of a machine that only I describe.\n", encoding="utf-8")
    out = tmp_path / "played.jsonl"
    options = ["--task", "free some disk space", "--control", "the disk is full", "--prompts", str(tmp_path / "prompts"),
               "--temperature", "0.25", "--max-tokens", "321", "--seed", "7", "--ctx", "4096"]
    with AwlInTmux("play", "-m", f"scripted:{answers}", "--out", str(out), *options, home=tmp_path,
                   exited_marker="PLAY-EXITED") as term:
        screen = term.wait_for("Timeline")
        assert "/4,096" in screen, screen  # the context asked for
        term.keys("pwd", literal=True)
        term.keys("Enter")
        term.wait_for("turn 1")  # a session is kept once it has a turn
        term.keys("C-q")
        assert "PLAY-EXITED-0" in term.wait_for("PLAY-EXITED-")
    header = read_trajectory(out).header
    assert header.task == "free some disk space"
    assert header.controls == ["the disk is full"]
    assert "only I describe" in header.system_prompt
    assert header.sampling["temperature"] == 0.25 and header.sampling["max_tokens"] == 321
    assert header.seed == 7


def test_play_and_run_share_their_session_options():
    """One definition each (cli/session_options.py): the same flags, help and defaults."""
    import typer.main

    from agentworld_local.cli.main import _register_commands, app

    _register_commands()
    commands = {command.name: command for command in typer.main.get_command(app).commands.values()}
    shared = ("--task", "--control", "--prompts", "--temperature", "--max-tokens", "--seed", "--ctx", "--think",
              "--domain", "--scenario", "--gpu-layers", "--threads")

    def options(name):
        return {flag: (param.help, param.default) for param in commands[name].params for flag in param.opts}

    play, run = options("play"), options("run")
    for flag in shared:
        assert flag in play and play[flag] == run[flag], flag


def test_play_refuses_session_options_with_resume(tmp_path):
    saved = tmp_path / "s.jsonl"
    saved.write_text("")
    assert_one_line_error(awl("play", "--resume", str(saved), "--task", "x", home=tmp_path, stdin=""), "--task")
