"""`awl bench predict` through the real entry point: the official output format, progress,
resuming after a signal or a kill mid-write, and one-line errors before any model loads."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
from pathlib import Path

from tests.cli.helpers import REPO, assert_one_line_error, awl, awl_env, scripted_model
from tests.unit.test_agentworldbench import bench_job

FAST = ["--think", "4", "--max-tokens", "8", "--ctx", "4096", "--seed", "3"]
ANSWER = ("<think>\nThe agent ran ls in /app.\n</think>\n\n"
          "<predicted_observation>\nmain.py  tests  README.md\nroot@box:/app# \n</predicted_observation>")


def write_bench(tmp_path: Path, domains=("terminal", "mcp"), turns=(1, 2, 3)) -> Path:
    bench = tmp_path / "bench_test.jsonl"
    bench.write_text("".join(json.dumps(bench_job(d, n)) + "\n" for d in domains for n in turns), encoding="utf-8")
    return bench


def predicted_lines(out: Path) -> list[int]:
    return [json.loads(line)["awl_predict"]["line"] for line in out.read_text(encoding="utf-8").splitlines()]


def test_predict_writes_every_selected_row_and_says_what_the_reuse_saved(tmp_path, qwen_gguf):
    bench, out = write_bench(tmp_path), tmp_path / "predictions.jsonl"
    result = awl("bench", "predict", str(bench), "-m", str(qwen_gguf), "--out", str(out), "--rows", "1-5", "--domain", "terminal",
                 *FAST, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert predicted_lines(out) == [1, 2, 3]
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert {k: v for k, v in first.items() if k not in ("gen", "awl_predict")} == bench_job("terminal", 1)
    assert isinstance(first["gen"], str) and first["awl_predict"]["model"] == qwen_gguf.name
    assert first["awl_predict"]["sampling"]["top_k"] == 20 and first["awl_predict"]["think"] == "4"
    assert "\r" not in result.stderr, "no live progress line into a pipe"
    assert "awl: predicted 3 rows into" in result.stderr and "x fewer than from scratch" in result.stderr
    assert result.stdout == ""


def test_json_gives_one_event_per_row_and_a_summary(tmp_path):
    bench, out = write_bench(tmp_path), tmp_path / "p.jsonl"
    model = scripted_model(tmp_path, ANSWER)
    result = awl("bench", "predict", str(bench), "-m", model, "-o", str(out), "--json", home=tmp_path)
    assert result.returncode == 0, result.stderr
    *rows, done = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 3, 4, 5, 6] and [r["done"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert all(r["event"] == "row" and r["total"] == 6 and r["finish"] == "stop" for r in rows)
    assert rows[-1]["eta_s"] == 0 and rows[0]["tokens_per_s"] > 0
    assert done["event"] == "done" and done["predicted"] == 6 and done["skipped"] == 0 and done["failed"] == []
    assert done["prompt_tokens_evaluated"] < done["prompt_tokens_total"]
    again = awl("bench", "predict", str(bench), "-m", model, "-o", str(out), "--json", home=tmp_path)
    assert again.returncode == 0 and again.stdout == "" and "all 6 selected rows are already in" in again.stderr


def test_a_terminal_shows_rows_speed_and_time_left(tmp_path):
    bench, out = write_bench(tmp_path, domains=("swe",)), tmp_path / "p.jsonl"
    model = scripted_model(tmp_path, ANSWER)
    main, child = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "agentworld_local.cli.main", "bench", "predict", str(bench), "-m", model, "-o", str(out)],
        stdout=subprocess.PIPE, stderr=child, env=awl_env(tmp_path), cwd=REPO,
    )
    os.close(child)
    shown = b""
    while True:
        ready, _, _ = select.select([main], [], [], 60)
        try:
            chunk = os.read(main, 4096) if ready else b""
        except OSError:  # the child closed the terminal
            chunk = b""
        if not chunk:
            break
        shown += chunk
    os.close(main)
    assert process.wait(timeout=60) == 0, shown
    text = shown.decode("utf-8", errors="replace")
    assert "\r\x1b[Krows 1/3" in text and "\r\x1b[Krows 3/3" in text
    assert "tok/s" in text and "ETA 0m00s" in text and "awl: predicted 3 rows" in text


def test_sigterm_mid_file_keeps_finished_rows_and_the_same_command_goes_on(tmp_path, qwen_gguf):
    bench, out = write_bench(tmp_path, turns=(1, 2)), tmp_path / "p.jsonl"
    # Long enough answers that the signal lands while rows are left (about a second a row).
    command = ["bench", "predict", str(bench), "-m", str(qwen_gguf), "-o", str(out), "--think", "off",
               "--max-tokens", "1200", "--ctx", "4096", "--json"]
    process = subprocess.Popen([sys.executable, "-m", "agentworld_local.cli.main", *command], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=awl_env(tmp_path), cwd=REPO)
    first = json.loads(process.stdout.readline())
    assert first["event"] == "row" and first["done"] == 1
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 143, stderr
    assert "Traceback" not in stderr and "Run the same command again to go on." in stderr
    kept = predicted_lines(out)
    assert kept[0] == 1 and len(kept) < 4, "finished rows stay; the signal came before the end"
    again = awl(*command, home=tmp_path, timeout=120)
    assert again.returncode == 0, again.stderr
    assert f"{len(kept)} of 4 selected rows are done" in again.stderr
    assert sorted(predicted_lines(out)) == [1, 2, 3, 4], "each row once"


def test_a_kill_mid_write_is_cut_off_and_that_row_done_again(tmp_path):
    bench, out = write_bench(tmp_path), tmp_path / "p.jsonl"
    model = scripted_model(tmp_path, ANSWER)
    assert awl("bench", "predict", str(bench), "-m", model, "-o", str(out), "--rows", "1-2", home=tmp_path).returncode == 0
    whole = out.read_bytes()
    out.write_bytes(whole + b'{"task": "terminal", "id": 10')  # what a kill during the third write leaves
    result = awl("bench", "predict", str(bench), "-m", model, "-o", str(out), home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ended in an unfinished line (29 bytes, cut off)" in result.stderr
    assert predicted_lines(out) == [1, 2, 3, 4, 5, 6]
    assert out.read_bytes().startswith(whole)


def test_bad_input_is_one_line_before_the_model_loads(tmp_path):
    bench = write_bench(tmp_path)
    never = ["-m", str(tmp_path / "never-loaded.gguf")]
    out = ["--out", str(tmp_path / "p.jsonl")]
    scripted = ["-m", f"scripted:{tmp_path / 'never-read.json'}"]
    predict = ("bench", "predict")
    assert_one_line_error(awl(*predict, str(tmp_path / "missing.jsonl"), *never, *out, home=tmp_path), "missing.jsonl does not exist")
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(bench_job("web", 1)) + "\n" + "{oops\n", encoding="utf-8")
    assert_one_line_error(awl(*predict, str(broken), *never, *out, home=tmp_path), "broken.jsonl: row 2: not valid JSON")
    assert_one_line_error(awl(*predict, str(bench), *never, *out, "--rows", "4-9", home=tmp_path),
                          "--rows '4-9' goes past the file's last row, on line 6")
    assert_one_line_error(awl(*predict, str(bench), *never, *out, "--rows", "two", home=tmp_path), "`two` is not a line number")
    assert_one_line_error(awl(*predict, str(bench), *never, *out, "--domain", "wbe", home=tmp_path),
                          "Unknown domain `wbe`", "Did you mean `web`?")
    assert_one_line_error(awl(*predict, str(bench), *scripted, "--out", str(tmp_path), home=tmp_path), "is a directory")
    assert_one_line_error(awl(*predict, str(bench), *scripted, *out, "--top-p", "0", home=tmp_path), "--top-p 0.0 is not allowed")
    assert_one_line_error(awl(*predict, str(bench), *scripted, *out, "--think", "lots", home=tmp_path), "Invalid thinking budget")
    assert not (tmp_path / "p.jsonl").exists()


def test_an_out_file_from_other_settings_is_refused_before_the_model_loads(tmp_path):
    bench, out = write_bench(tmp_path), tmp_path / "p.jsonl"
    model = scripted_model(tmp_path, ANSWER)
    assert awl("bench", "predict", str(bench), "-m", model, "-o", str(out), "--rows", "1", home=tmp_path).returncode == 0
    before = out.read_bytes()
    result = awl("bench", "predict", str(bench), "-m", model, "-o", str(out), "--temperature", "1.0", home=tmp_path)
    assert_one_line_error(result, "was written with temperature 0.6; this run asks for 1.0", "choose another `--out`")
    other = tmp_path / "other_test.jsonl"
    other.write_text(json.dumps(bench_job("os", 1)) + "\n", encoding="utf-8")
    result = awl("bench", "predict", str(other), "-m", model, "-o", str(out), home=tmp_path)
    assert_one_line_error(result, "holds predictions for another benchmark file")
    assert out.read_bytes() == before
