"""Through the real entry point: a turn whose thinking the budget cut says so (issue 44) in
`awl run`'s text, its `--json` and its file; the budget's default is explained and its limit
said; `awl bench predict` keeps the official budget; and at 80 columns (a small terminal, a
pipe) help and tables are not cut, `--json` sends no blank untagged text, and a directory given
as `--out` for a recording suggests a `.cast` name (issue 45)."""

from __future__ import annotations

import json
import os

import pytest

from tests.cli.helpers import assert_one_line_error, awl, awl_env, scripted_model
from tests.cli.test_bench_predict_cli import write_bench
from tests.unit.test_thinking_cut_is_said import LONG_THINKING

LS = "<think>\nls in /app.\n</think>\n<predicted_observation>\nmain.py\nroot@box:/app# \n</predicted_observation>"
NARROW = {"COLUMNS": "80", "LINES": "24"}


def test_a_cut_turn_says_so_in_one_line_and_in_its_record(tmp_path):
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", scripted_model(tmp_path, LONG_THINKING, LS, chunk=4), "-o", str(out), "--think", "8",
                 home=tmp_path, stdin="ls\npwd\n")
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "thinking cut" in line]
    assert said == ["── thinking cut at 8 tokens (--think full to let it finish)"]  # turn 2 thought less: not cut
    turns = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()[1:]]
    assert turns[0]["tokens"]["thinking_cut"] is True and "thinking_cut" not in turns[1]["tokens"]
    assert "README.md  src" in result.stdout  # the observation still came


def test_json_carries_the_cut_in_turn_done(tmp_path):
    result = awl("run", "-m", scripted_model(tmp_path, LONG_THINKING, chunk=4), "-o", str(tmp_path / "s.jsonl"),
                 "--think", "8", "--json", home=tmp_path, stdin="ls\n")
    assert result.returncode == 0, result.stderr
    done = [json.loads(line) for line in result.stdout.splitlines() if '"turn_done"' in line]
    assert done[0]["record"]["tokens"]["thinking_cut"] is True
    assert "thinking cut" not in result.stdout.replace('"thinking_cut"', "")  # programs read the field, not a line


def test_replay_notes_the_cut(tmp_path):
    out = tmp_path / "s.jsonl"
    made = awl("run", "-m", scripted_model(tmp_path, LONG_THINKING, chunk=4), "-o", str(out), "--think", "8",
               home=tmp_path, stdin="ls\n")
    assert made.returncode == 0, made.stderr
    replay = awl("replay", str(out), "--plain", home=tmp_path)
    assert replay.returncode == 0 and "thinking cut at 8 tokens by the thinking budget" in replay.stdout


def test_a_budget_past_the_limit_is_refused_naming_the_limit(tmp_path):
    result = awl("run", "-m", scripted_model(tmp_path, LS), "--think", "99999999999", home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, "at most 999,999,999 tokens", "--think full")


def test_the_think_help_explains_the_default_with_the_measurements(tmp_path):
    text = " ".join(awl("run", "--help", home=tmp_path, env=awl_env(tmp_path, COLUMNS="200")).stdout.split())
    for fact in ("Default: 1,024", "32,768", "1,140", "8,192", "9-11k", "25x fewer", "truncated 7 answers"):
        assert fact in text, fact


def test_bench_predict_keeps_the_official_budget_and_says_so(tmp_path):
    help_text = " ".join(awl("bench", "predict", "--help", home=tmp_path, env=awl_env(tmp_path, COLUMNS="200")).stdout.split())
    assert "Default: full, the official evaluation's budget (32,768 new tokens" in help_text
    bench, out = write_bench(tmp_path, domains=("terminal",), turns=(1,)), tmp_path / "predictions.jsonl"
    result = awl("bench", "predict", str(bench), "-m", scripted_model(tmp_path, LS), "--out", str(out), home=tmp_path)
    assert result.returncode == 0, result.stderr
    side = json.loads(out.read_text(encoding="utf-8").splitlines()[0])["awl_predict"]
    assert side["think"] == "full" and side["sampling"]["max_tokens"] == 32768


def test_json_sends_no_untagged_event_of_whitespace_alone(tmp_path):
    result = awl("run", "-m", scripted_model(tmp_path, LS, LS, chunk=1), "-o", str(tmp_path / "s.jsonl"), "--json",
                 home=tmp_path, stdin="ls\nls\n")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert all(event["text"].strip() for event in events if event["event"] == "untagged")
    assert not any(event["event"] == "untagged" for event in events)  # every answer here is tagged


@pytest.mark.parametrize("command", [["run"], ["bench", "predict"], ["bench", "judge"], ["play"], ["serve"], ["mcp"],
                                     ["export"], ["demo"], ["models", "info"]])
def test_help_at_80_columns_cuts_no_option_text(tmp_path, command):
    result = awl(*command, "--help", home=tmp_path, env=awl_env(tmp_path, **NARROW))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in result.stdout, [line for line in lines if "…" in line]


def test_run_help_at_80_columns_gives_the_option_text_room(tmp_path):
    text = awl("run", "--help", home=tmp_path, env=awl_env(tmp_path, **NARROW)).stdout
    assert "qwen-agentworld-35b-a3b:UD-Q2_K_XL" in text  # a long word whole, on a line of its own if need be
    model_line = next(line for line in text.splitlines() if line.startswith("│ --model"))
    assert len(model_line.strip("│ ").split("  ")[-1].strip()) > 40, model_line  # the help column is wide, not ~20 cells


def test_piped_bench_score_fits_80_columns_uncut(tmp_path):
    rows = [json.dumps({"task": f"agentworldbench/{domain}", "failed": 0.0, "total_score": 3.5, "format": 4,
                        "factuality": 3, "consistency": 5, "realism": 2, "quality": 3})
            for domain in ("terminal", "swe", "mcp", "search", "web", "os", "android")]
    judged = tmp_path / "run.judged.jsonl"
    judged.write_text("\n".join(rows) + "\n", encoding="utf-8")
    env = awl_env(tmp_path, **NARROW)
    env.pop("COLUMNS")  # a pipe with no width given: rich's 80
    result = awl("bench", "score", str(judged), home=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout and max(len(line) for line in result.stdout.splitlines()) <= 80
    for header in ("valid/rows", "format", "factuality", "consistency", "realism", "quality", "total"):
        assert header in result.stdout
    assert "Terminal" in result.stdout and "100.00" in result.stdout


@pytest.mark.parametrize("form, name", [(["--format", "asciicast"], "NAME.cast"), (["--format", "html"], "NAME.html"),
                                        ([], "NAME.jsonl")])
def test_a_directory_as_out_suggests_a_name_of_the_output_kind(tmp_path, form, name):
    session = tmp_path / "s.jsonl"
    made = awl("run", "-m", scripted_model(tmp_path, LS), "-o", str(session), home=tmp_path, stdin="ls\n")
    assert made.returncode == 0, made.stderr
    folder = tmp_path / "out"
    folder.mkdir()
    result = awl("export", str(session), *form, "--out", str(folder), home=tmp_path)
    assert_one_line_error(result, "is a directory", f"{folder}{os.sep}{name}")


def test_the_llama_backend_reports_the_cut_too(tmp_path, qwen_gguf):
    """A real llama.cpp model (the tiny Qwen3.5 fixture opens thinking in its prompt): a budget
    of 4 tokens ends the thinking, and the turn records it."""
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", str(qwen_gguf), "-o", str(out), "--think", "4", "--max-tokens", "4", "--ctx", "4096",
                 "--seed", "3", home=tmp_path, stdin="ls\n")
    assert result.returncode == 0, result.stderr
    turn = json.loads(out.read_text(encoding="utf-8").splitlines()[1])
    assert turn["tokens"]["thinking_cut"] is True and turn["tokens"]["thinking"] == 4
    assert "── thinking cut at 4 tokens (--think full to let it finish)" in result.stderr


def test_a_scenarios_own_budget_is_used_and_think_overrides_it(tmp_path):
    scenario = tmp_path / "deep.toml"
    scenario.write_text('version = 1\nname = "deep-shell"\ndomain = "terminal"\ntitle = "Deep"\ntask = "Find the bug."\n'
                        'initial_state = "root@box:/app# "\nthink = 4096\n', encoding="utf-8")
    assert "thinking budget: 4096" in awl("scenarios", "show", str(scenario), home=tmp_path).stdout
    for given, used in (([], "4096"), (["--think", "off"], "off")):
        out = tmp_path / f"s-{used}.jsonl"
        result = awl("run", "-s", str(scenario), "-m", scripted_model(tmp_path, LS), "-o", str(out), *given,
                     home=tmp_path, stdin="ls\n")
        assert result.returncode == 0, result.stderr
        assert json.loads(out.read_text(encoding="utf-8").splitlines()[0])["think"] == used
