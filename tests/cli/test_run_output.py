"""What `awl run` and `awl demo` show and say, on the answers a real model writes (scripted backend).

Random-weight fixtures never write `<think>` or `<predicted_observation>`; the real model
does on every turn, so the answer path is driven by `--model scripted:FILE`.
"""

from __future__ import annotations

import json

import gguf
import pytest
import typer.main

from agentworld_local.engine.types import DEFAULT_THINK_TOKENS
from agentworld_local.fixtures.tiny_gguf import write_llama_fixture
from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import awl, awl_env, scripted_model

LS = "<predicted_observation>\ntotal 0\n</predicted_observation>"
THOUGHT_LS = "<think>\nAn empty directory lists nothing.\n</think>\n" + LS


@pytest.mark.parametrize("answer", [LS, THOUGHT_LS])
@pytest.mark.parametrize("chunk", [1, 2, 5])
def test_the_observation_is_printed_exactly_once(tmp_path, answer, chunk):
    """It was printed, then "[the final observation differs...]", then printed again."""
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", scripted_model(tmp_path, answer, chunk=chunk), "-o", str(out), home=tmp_path, stdin="ls\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "total 0\n"
    assert "differs" not in result.stdout + result.stderr
    assert read_trajectory(out).turns[0].observation == "total 0"


@pytest.mark.parametrize("chunk", [1, 3])
def test_json_streams_the_observation_without_a_replacement_and_ends_with_the_saved_file(tmp_path, chunk):
    out = tmp_path / "s.jsonl"
    model = scripted_model(tmp_path, THOUGHT_LS, chunk=chunk)
    result = awl("run", "-m", model, "-o", str(out), "--json", home=tmp_path, stdin="ls\npwd\n")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert "observation_replaced" not in {e["event"] for e in events}
    streamed = "".join(e["text"] for e in events if e["event"] == "observation" and e["turn"] == 1)
    assert streamed == "total 0"
    assert events[-1] == {"event": "saved", "path": str(out), "turns": 2}


def test_help_offers_the_scripted_backend_to_try_awl_without_a_model(tmp_path):
    result = awl("run", "--help", home=tmp_path, env=awl_env(tmp_path, COLUMNS="400"))
    assert "To try awl without a model: `scripted:FILE`" in result.stdout


def test_control_bytes_from_the_model_cannot_drive_the_terminal(tmp_path):
    """A simulated screen may hold anything; what reaches the user's terminal is made inert."""
    screen = "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 bell\x07 nul\x00 \x1b[2J"
    model = scripted_model(tmp_path, f"<predicted_observation>\n{screen}\n</predicted_observation>", chunk=4)
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", model, "-o", str(out), home=tmp_path, stdin="cat motd\n")
    assert result.returncode == 0, result.stderr
    shown = result.stdout
    assert "\x1b[31mred\x1b[0m" in shown  # colour stays
    assert "\x07" not in shown and "\x00" not in shown and "\x1b]" not in shown and "\x1b[2J" not in shown
    assert "\\x07" in shown and "\\x00" in shown
    assert read_trajectory(out).turns[0].observation == screen  # the record keeps the exact text

    as_json = awl("run", "-m", model, "-o", str(tmp_path / "j.jsonl"), "--json", home=tmp_path, stdin="cat motd\n")
    events = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert "".join(e["text"] for e in events if e["event"] == "observation") == screen  # JSON stays exact


def test_a_huge_action_is_shortened_in_the_turn_header(tmp_path):
    action = "echo " + "a" * 100_000
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", scripted_model(tmp_path, LS), "-o", str(out), "--ctx", "65536", home=tmp_path, stdin=action + "\n")
    assert result.returncode == 0, result.stderr
    header = next(line for line in result.stderr.splitlines() if "── turn 1 ──" in line)
    assert len(header) < 400 and "(100,005 characters)" in header
    assert read_trajectory(out).turns[0].action == action


def test_counts_are_grammatical(tmp_path):
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", scripted_model(tmp_path, LS), "-o", str(out), home=tmp_path, stdin="ls\n")
    assert f"saved 1 turn to {out}" in result.stderr


@pytest.mark.parametrize(
    "answer, said",
    [
        ("<predicted_observation>\n</predicted_observation>", "turn 1: the model predicted an empty observation"),
        ({"raw": "<predicted_observation>\nline one\nline tw", "finish": "length"}, "turn 1: the observation was cut off"),
        ("<predicted_observation>\n" + "ab" * 1000, "turn 1: the model was repeating itself"),
    ],
)
def test_what_went_wrong_in_a_turn_is_said_once(tmp_path, answer, said):
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", scripted_model(tmp_path, answer), "-o", str(out), home=tmp_path, stdin="ls\npwd\n")
    assert result.returncode == 0, result.stderr
    assert result.stderr.count(said) == 1, result.stderr  # turn 2 ended the same way: not said again
    assert said.replace("turn 1", "turn 2") not in result.stderr


def test_an_empty_script_is_said_and_loads_nothing(tmp_path, qwen_gguf):
    script = tmp_path / "a.txt"
    script.write_text("# nothing yet\n\n", encoding="utf-8")
    out = tmp_path / "s.jsonl"
    result = awl("run", str(script), "-m", str(qwen_gguf), "-o", str(out), home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "holds no actions" in result.stderr and "memory estimate" not in result.stderr
    assert not out.exists()


def test_empty_stdin_is_said(tmp_path):
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", scripted_model(tmp_path, LS), "-o", str(out), home=tmp_path, stdin="")
    assert result.returncode == 0, result.stderr
    # Like an empty script: nothing to save, so no file (the sessions folder lists sessions).
    assert "no actions were given, so no turn was run; no file was written." in result.stderr
    assert "saved" not in result.stderr and not out.exists()


def test_a_gguf_without_a_chat_template_is_said(tmp_path, monkeypatch):
    monkeypatch.setattr(gguf.GGUFWriter, "add_chat_template", lambda self, value: None)
    plain = write_llama_fixture(tmp_path / "plain.gguf")
    result = awl("run", "-m", str(plain), "-o", str(tmp_path / "s.jsonl"), "--think", "off", "--max-tokens", "4",
                 "--ctx", "4096", home=tmp_path, stdin="ls\n")
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("carries no chat template") == 1


def test_think_on_a_model_that_never_thinks_is_said(tmp_path, llama_gguf):
    """The tiny llama fixture has a plain ChatML template: no thinking at all."""
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", str(llama_gguf), "-o", str(out), "--think", "64", "--max-tokens", "4", "--ctx", "4096",
                 home=tmp_path, stdin="ls\n")
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("--think 64 has no effect") == 1


def test_demo_and_run_share_the_thinking_default(tmp_path):
    for command in ("run", "demo"):
        shown = awl(command, "--help", home=tmp_path, env=awl_env(tmp_path, COLUMNS="400")).stdout
        assert f"Default: {DEFAULT_THINK_TOKENS:,}," in shown
    out = tmp_path / "live.jsonl"
    result = awl("demo", "--model", scripted_model(tmp_path, THOUGHT_LS), "--out", str(out), home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert read_trajectory(out).header.think == str(DEFAULT_THINK_TOKENS)


def _every_command(group, path=()):
    for name, command in getattr(group, "commands", {}).items():
        yield (*path, name)
        yield from _every_command(command, (*path, name))


def test_no_flag_shows_a_value_type_in_help():
    """`--json <bool>` suggested that the flag takes a value."""
    from typer.testing import CliRunner

    from agentworld_local.cli.main import _hide_flag_types, _register_commands, app

    _register_commands()
    _hide_flag_types()
    root = typer.main.get_command(app)
    commands = [(), *_every_command(root)]
    assert ("run",) in commands and len(commands) > 8
    runner = CliRunner()
    for command in commands:
        shown = runner.invoke(app, [*command, "--help"], terminal_width=200)
        assert shown.exit_code == 0, (command, shown.output)
        assert "<bool>" not in shown.output, command


def test_run_help_lists_every_domains_action_forms(tmp_path):
    from agentworld_local.domains import domain_names

    result = awl("run", "--help", home=tmp_path, env={**awl_env(tmp_path), "COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for name in domain_names():
        # One line per domain, naming a friendly form and the raw form.
        assert any(line.strip().startswith(name + " ") and "raw" in line for line in lines), name


def test_the_untagged_answer_marker_writes_no_escape_codes_into_a_pipe(tmp_path):
    """Small models write no observation tag; the marker is dim on a terminal only, never raw
    ANSI in a pipe or a log file (nor the user's own escape bytes in the turn heading)."""
    model = scripted_model(tmp_path, "<think>\nok\n</think>\n\ntotal 0\nfile\n")
    result = awl("run", "-m", model, "--out", str(tmp_path / "s.jsonl"), home=tmp_path, stdin="ls \x1b[31mred\n")
    assert result.returncode == 0, result.stderr
    assert "(untagged answer) total 0" in result.stderr and "\x1b" not in result.stderr
