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
    assert again.returncode == 0 and "all 6 selected rows are already in" in again.stderr
    [summary] = [json.loads(line) for line in again.stdout.splitlines()]
    assert summary["event"] == "done" and summary["predicted"] == 0 and summary["skipped"] == 6


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
        ready, _, _ = select.select([main], [], [])  # no deadline: pytest-timeout stops a hang
        try:
            chunk = os.read(main, 4096) if ready else b""
        except OSError:  # the child closed the terminal
            chunk = b""
        if not chunk:
            break
        shown += chunk
    os.close(main)
    assert process.wait() == 0, shown
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
    stdout, stderr = process.communicate()
    assert process.returncode == 143, stderr
    assert "Traceback" not in stderr and "Run the same command again to go on." in stderr
    kept = predicted_lines(out)
    assert kept[0] == 1 and len(kept) < 4, "finished rows stay; the signal came before the end"
    again = awl(*command, home=tmp_path)
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


def test_a_malformed_row_is_named_and_skipped_and_the_rest_is_predicted(tmp_path):
    bench, out = write_bench(tmp_path, domains=("web",)), tmp_path / "p.jsonl"
    lines = bench.read_text(encoding="utf-8").splitlines(keepends=True)
    no_turn = {key: value for key, value in bench_job("mcp", 1).items() if key != "turn_idx"}
    bench.write_text(lines[0] + "{oops\n" + lines[1] + json.dumps(no_turn) + "\n" + lines[2], encoding="utf-8")
    model = scripted_model(tmp_path, ANSWER)
    result = awl("bench", "predict", str(bench), "-m", model, "-o", str(out), home=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "bench_test.jsonl: row 2: not valid JSON" in result.stderr and "field 'turn_idx' is missing" in result.stderr
    assert "2 rows of the file were malformed and skipped (lines 2, 4)" in result.stderr
    assert predicted_lines(out) == [1, 3, 5], "the rest of the file is predicted"
    # --rows and --domain pick before rows are checked: a bad row they leave out changes nothing.
    quiet = awl("bench", "predict", str(bench), "-m", model, "-o", str(tmp_path / "q.jsonl"), "--rows", "3-5",
                "--domain", "web", "--json", home=tmp_path)
    assert quiet.returncode == 0, quiet.stderr
    *_, done = [json.loads(line) for line in quiet.stdout.splitlines()]
    assert done["malformed"] == [] and done["predicted"] == 2
    named = awl("bench", "predict", str(bench), "-m", model, "-o", str(tmp_path / "j.jsonl"), "--rows", "1-2", "--json", home=tmp_path)
    events = [json.loads(line) for line in named.stdout.splitlines()]
    assert events[0]["event"] == "row_malformed" and events[0]["line"] == 2 and "not valid JSON" in events[0]["error"]
    assert events[-1]["malformed"] == [2] and named.returncode == 1


def test_a_row_longer_than_the_context_is_written_failed_counted_and_named(tmp_path):
    bench = tmp_path / "bench_test.jsonl"
    jobs = [bench_job("terminal", 1), bench_job("swe", 1, system_str="tool definitions " * 3000), bench_job("terminal", 2)]
    bench.write_text("".join(json.dumps(job) + "\n" for job in jobs), encoding="utf-8")
    model, out = scripted_model(tmp_path, ANSWER), tmp_path / "p.jsonl"
    result = awl("bench", "predict", str(bench), "-m", model, "-o", str(out), "--ctx", "8192", "--max-tokens", "2048",
                 "--json", home=tmp_path)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    [unfit] = [event for event in events if event["event"] == "row_unfit"]
    assert unfit["line"] == 2 and "more than the 8,192-token context" in unfit["error"]
    assert events[-1]["unfit"] == [2] and events[-1]["predicted"] == 2
    written = {json.loads(line)["awl_predict"]["line"]: json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()}
    assert written[2]["gen"] == "" and "more than the 8,192-token context" in written[2]["awl_predict"]["failed"]
    assert written[1]["gen"] and "failed" not in written[1]["awl_predict"]
    plain = awl("bench", "predict", str(bench), "-m", model, "-o", str(tmp_path / "q.jsonl"), "--ctx", "8192",
                "--max-tokens", "2048", home=tmp_path)
    assert "1 row did not fit the context and was written with an empty gen" in plain.stderr and "(lines 2)" in plain.stderr
    # By default the context is sized for the longest row: every row fits, and awl says the size and why.
    sized = awl("bench", "predict", str(bench), "-m", model, "-o", str(tmp_path / "r.jsonl"), "--json", home=tmp_path)
    assert sized.returncode == 0, sized.stderr
    summary = json.loads(sized.stdout.splitlines()[-1])
    assert summary["unfit"] == [] and summary["ctx"] >= 32768 + 8
    assert "context" in sized.stderr and "the longest selected row's prompt" in sized.stderr and "32,768 tokens of generation" in sized.stderr


def test_a_rerun_with_another_model_file_is_refused_naming_both(tmp_path):
    bench, out = write_bench(tmp_path), tmp_path / "p.jsonl"
    first = scripted_model(tmp_path, ANSWER, name="first.json")
    assert awl("bench", "predict", str(bench), "-m", first, "-o", str(out), "--rows", "1", home=tmp_path).returncode == 0
    other = scripted_model(tmp_path, ANSWER.replace("README.md", "setup.py"), name="second.json")
    result = awl("bench", "predict", str(bench), "-m", other, "-o", str(out), home=tmp_path)
    assert_one_line_error(result, "was written with the model scripted:first.json (", "this run loads scripted:second.json (")
    # The same file under another name is the same model.
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "first.json").write_bytes((tmp_path / "first.json").read_bytes())
    same = awl("bench", "predict", str(bench), "-m", f"scripted:{tmp_path / 'copy' / 'first.json'}", "-o", str(out), home=tmp_path)
    assert same.returncode == 0, same.stderr


def test_a_failed_write_is_one_line_and_the_file_keeps_whole_rows(tmp_path):
    """A full disk, made real with a file size limit (RLIMIT_FSIZE): the write fails part-way."""
    bench, out = write_bench(tmp_path), tmp_path / "p.jsonl"
    model = scripted_model(tmp_path, ANSWER)
    assert awl("bench", "predict", str(bench), "-m", model, "-o", str(out), "--rows", "1-2", home=tmp_path).returncode == 0
    whole = out.read_bytes()
    limit = len(whole) + 300  # row 3's line is longer: it is cut part-way
    code = ("import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit})); "
            "from agentworld_local.cli.main import main; sys.argv[0] = 'awl'; sys.exit(main())")
    result = subprocess.run([sys.executable, "-c", code, "bench", "predict", str(bench), "-m", model, "-o", str(out)],
                            capture_output=True, text=True, env=awl_env(tmp_path), cwd=REPO)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("awl: error:")]
    assert len(errors) == 1 and "could not save row 3" in errors[0] and "cut back to its last whole row" in errors[0]
    assert out.read_bytes() == whole, "the file ends at its last whole row"
    again = awl("bench", "predict", str(bench), "-m", model, "-o", str(out), home=tmp_path)
    assert again.returncode == 0 and predicted_lines(out) == [1, 2, 3, 4, 5, 6]


def test_from_bench_generates_as_the_official_evaluation_unless_told_otherwise(tmp_path):
    bench = write_bench(tmp_path, domains=("terminal",))
    two_blocks = ("<think>\nFirst a draft, then the screen.\n</think>\n\n<predicted_observation>\ndraft\n</predicted_observation>\n"
                  "<predicted_observation>\nmain.py  tests\nroot@box:/app# \n</predicted_observation>")
    model, out = scripted_model(tmp_path, two_blocks), tmp_path / "row.jsonl"
    result = awl("run", "--from-bench", str(bench), "--row", "2", "-m", model, "-o", str(out), "--json", home=tmp_path)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout.splitlines()[0])
    assert payload["prediction"] == "main.py  tests\nroot@box:/app# ", "to the end of the turn: the last block"
    header = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert header["think"] == "full" and header["sampling"]["temperature"] == 0.6
    assert header["sampling"]["max_tokens"] == 32768 and header["sampling"]["max_tokens_counts_thinking"]
    assert not header["sampling"]["stop_at_observation"] and not header["sampling"]["repetition_guard"]
    assert "32,768 tokens of generation" in result.stderr, "the context is sized for the row, and awl says so"
    # Options given still win; --max-tokens counts thinking and answer.
    out2 = tmp_path / "row2.jsonl"
    given = awl("run", "--from-bench", str(bench), "--row", "2", "-m", model, "-o", str(out2), "--think", "off",
                "--max-tokens", "900", "--temperature", "0.2", home=tmp_path)
    assert given.returncode == 0, given.stderr
    header = json.loads(out2.read_text(encoding="utf-8").splitlines()[0])
    assert (header["think"], header["sampling"]["max_tokens"], header["sampling"]["temperature"]) == ("off", 900, 0.2)


def test_the_session_rules_are_options_of_the_benchmark_commands(tmp_path):
    bench = write_bench(tmp_path, domains=("terminal",))
    two_blocks = ("<think>\nA draft first.\n</think>\n<predicted_observation>\ndraft\n</predicted_observation>\n"
                  "<predicted_observation>\nfinal\n</predicted_observation>")
    model = scripted_model(tmp_path, two_blocks)
    stopped = awl("run", "--from-bench", str(bench), "--row", "1", "-m", model, "-o", str(tmp_path / "r.jsonl"), "--json",
                  "--stop-at-observation", "--repetition-guard", home=tmp_path)
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout.splitlines()[0])["prediction"] == "draft", "stopped at the first block"
    header = json.loads((tmp_path / "r.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert header["sampling"]["stop_at_observation"] and header["sampling"]["repetition_guard"]
    out = tmp_path / "p.jsonl"
    predicted = awl("bench", "predict", str(bench), "-m", model, "-o", str(out), "--rows", "1", "--stop-at-observation",
                    home=tmp_path)
    assert predicted.returncode == 0, predicted.stderr
    [line] = [json.loads(text) for text in out.read_text(encoding="utf-8").splitlines()]
    assert "final" not in line["gen"] and line["awl_predict"]["sampling"]["stop_at_observation"]
    assert_one_line_error(awl("run", "-m", model, "--stop-at-observation", home=tmp_path, stdin="ls\n"),
                          "--stop-at-observation only works with --from-bench")


def test_from_bench_refuses_a_row_that_does_not_fit_instead_of_cutting_its_history(tmp_path):
    bench = write_bench(tmp_path, domains=("terminal",))
    model, out = scripted_model(tmp_path, ANSWER), tmp_path / "row.jsonl"
    result = awl("run", "--from-bench", str(bench), "--row", "3", "-m", model, "-o", str(out), "--ctx", "8192", home=tmp_path)
    assert_one_line_error(result, "Row 3 does not fit", "32,768", "more than the 8,192-token context", "larger `--ctx`")
    assert not out.exists(), "nothing is written"
    fits = awl("run", "--from-bench", str(bench), "--row", "3", "-m", model, "-o", str(out), "--ctx", "8192",
               "--max-tokens", "4000", home=tmp_path)
    assert fits.returncode == 0, fits.stderr
