"""Benchmark fields are a file's text, not awl's: a row's `task` or `id` holding control
characters, ANSI escapes, rich markup or lone surrogates is shown escaped on the terminal
(`awl bench judge`'s and `awl bench score`'s table, `awl run --from-bench`'s lines) and never
used raw in a file name (it was a traceback: the score table, the --from-bench file name)."""

from __future__ import annotations

import json
import re

import pytest

from tests.cli.helpers import assert_one_line_error, awl, awl_env, scripted_model
from tests.unit.test_agentworldbench import bench_job

#: Tasks as a damaged or hostile benchmark file may hold them (the domain is the last part).
TASKS = ["agentworldbench/term\x1b[2Jinal", "agentworldbench/a\ud800b", "agentworldbench/x\x07\x9b31m",
         "agentworldbench/\x1b]0;pwned\x07web", "agentworldbench/[bold]markup[red]", "agentworldbench/txt.\u202egpj"]
ANSWER = "<think>\nx\n</think>\n\n<predicted_observation>\nmain.py\n</predicted_observation>"
#: What no terminal output may hold raw: ESC, BEL, C1 controls (CSI 0x9b), bidirectional overrides.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def assert_escaped(text: str) -> None:
    assert not RAW_CONTROL.search(text), repr(text)
    assert "Traceback" not in text
    text.encode("utf-8")  # no lone surrogate reached the output


def write_rows(path, rows) -> None:
    # ensure_ascii: a lone surrogate travels as its \ud800 escape, as in a damaged real file
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def test_the_score_table_shows_hostile_tasks_escaped(tmp_path):
    rows = [{"task": task, "failed": 0.0, "total_score": 4, **{name: 3 for name in
            ("format", "factuality", "consistency", "realism", "quality")}} for task in TASKS]
    judged = tmp_path / "run.judged.jsonl"
    write_rows(judged, rows)
    result = awl("bench", "score", str(judged), home=tmp_path, env=awl_env(tmp_path, COLUMNS="200"))
    assert result.returncode == 0, result.stderr
    assert_escaped(result.stdout + result.stderr)
    assert "\\x1b" in result.stdout and "\ufffd" in result.stdout and "[bold]markup[red]" in result.stdout
    assert f"rows: {len(TASKS)}, valid: {len(TASKS)}" in result.stdout


def test_bench_judge_shows_hostile_tasks_escaped(tmp_path):
    """Rows without a prediction are judged failed without a request: the table still lists their domains."""
    predictions = tmp_path / "p.jsonl"
    write_rows(predictions, [{**bench_job("terminal", 1), "task": task} for task in TASKS])
    (tmp_path / "prompts").mkdir()
    result = awl("bench", "judge", str(predictions), "--judge-base-url", "http://127.0.0.1:9/v1", "--judge-model", "j",
                 "--prompts", str(tmp_path / "prompts"), home=tmp_path, env=awl_env(tmp_path, COLUMNS="200"))
    assert result.returncode == 1, result.stderr  # every row failed: no prediction
    assert_escaped(result.stdout + result.stderr)
    assert "\\x1b" in result.stdout and f"rows: {len(TASKS)}" in result.stdout


@pytest.mark.parametrize("domain", ["..", ".", "", "a\ud800b", "term\x1b[2Jinal"])
def test_a_domain_that_is_no_folder_name_never_reaches_the_prompt_pack(tmp_path, domain):
    """The domain names a folder of --prompts: `..` would read the pack's parent."""
    (tmp_path / "judge_system_prompt.txt").write_text("the parent's file")
    (tmp_path / "prompts").mkdir()
    predictions = tmp_path / "p.jsonl"
    write_rows(predictions, [{**bench_job("terminal", 1), "task": f"agentworldbench/{domain}", "gen": ANSWER}])
    result = awl("bench", "judge", str(predictions), "--judge-base-url", "http://127.0.0.1:9/v1", "--judge-model", "j",
                 "--prompts", str(tmp_path / "prompts"), home=tmp_path)
    assert_one_line_error(result, "judge prompt")
    assert_escaped(result.stderr)


@pytest.mark.parametrize("task", TASKS + ["x/../../evil"])
def test_run_from_bench_names_its_file_safely_and_shows_the_row_escaped(tmp_path, task):
    bench = tmp_path / "bench.jsonl"
    write_rows(bench, [bench_job("terminal", 1, task=task, id="id\x1b]0;pwn\x07\ud801")])
    result = awl("run", "--from-bench", str(bench), "--row", "1", "-m", scripted_model(tmp_path, ANSWER), home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert_escaped(result.stdout + result.stderr)
    [made] = (tmp_path / "data" / "sessions").glob("*.jsonl")
    assert re.fullmatch(r"[0-9]{8}-[0-9]{6}-bench-[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.jsonl", made.name), made.name
    assert str(made) in result.stderr
