"""`awl bench predict`'s core on the answer path: the scripted backend streams the raw answers
the real model writes (thinking, then the observation block).

What the official evaluation stores (QwenLM/Qwen-AgentWorld eval/eval.py, `infer`): the row
as read plus `gen`, the message content of the server's answer. Its README serves the model
with a reasoning parser, so that content is the text after thinking, observation tags
included; the judge step itself strips thinking and takes the last observation block.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentworld_local.agentworldbench.predict import BENCH_SAMPLING, BENCH_THINK, RowFailed, RowPredicted, gen_text, predict_rows
from agentworld_local.agentworldbench.predictions import PredictionsFile, RunSettings
from agentworld_local.agentworldbench.rows import read_bench_rows
from agentworld_local.agentworldbench.selection import lines_of, parse_row_spec, select_rows, work_order
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.errors import GenerationError, InputError
from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend
from functools import partial
from tests.unit.test_agentworldbench import bench_job

THINKING = "The agent listed the directory; the repository has three entries."
OBSERVATION = "main.py  tests  README.md\nroot@box:/app# "
ANSWER = f"<think>\n{THINKING}\n</think>\n\n<predicted_observation>\n{OBSERVATION}\n</predicted_observation>"
SETTINGS = RunSettings("scripted", BENCH_SAMPLING, BENCH_THINK, 0)
#: A context that holds these small rows and the official 32,768 tokens of generation.
Scripted = partial(ScriptedBackend, n_ctx=40960)


def write_bench(path: Path, jobs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(job) + "\n" for job in jobs), encoding="utf-8")
    return path


def six_rows(tmp_path: Path) -> Path:
    """Two three-turn trajectories (terminal, mcp), one row per turn, as the benchmark has them."""
    return write_bench(tmp_path / "bench.jsonl", [bench_job(domain, n) for domain in ("terminal", "mcp") for n in (1, 2, 3)])


def run(bench: Path, out: Path, backend, settings: RunSettings = SETTINGS, **selection) -> list:
    rows = read_bench_rows(bench)
    predictions = PredictionsFile.open(out, lines_of(rows), settings, source=bench)
    try:
        return list(predict_rows(work_order(select_rows(rows, **selection)), backend, settings, predictions))
    finally:
        predictions.close()


def refused(call) -> str:
    """The one line a user sees for the InputError `call` raises."""
    with pytest.raises(InputError) as raised:
        call()
    return raised.value.one_line()


def read_out(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# -- the output format ------------------------------------------------------------------


def test_each_output_line_is_the_input_row_with_gen_and_the_settings(tmp_path):
    jobs = [bench_job("terminal", n, split="test", extra_field={"keep": [1, 2]}) for n in (1, 2, 3)]
    bench = write_bench(tmp_path / "bench.jsonl", jobs)
    out = tmp_path / "predictions.jsonl"
    events = run(bench, out, Scripted([ScriptedAnswer(ANSWER, chunk=3)]))
    assert all(isinstance(event, RowPredicted) for event in events)
    lines = read_out(out)
    for job, line in zip(jobs, lines):
        side = line.pop("awl_predict")
        gen = line.pop("gen")
        assert list(line) == list(job) and line == job, "every input field, same values, same order"
        assert gen.strip() == f"<predicted_observation>\n{OBSERVATION}\n</predicted_observation>"
        assert THINKING not in gen, "the content a reasoning-parser server returns: no thinking"
        assert side["version"] == 2  # a stored format: the side record says which one
        assert side["line"] == job["turn_idx"] and side["model"] == "scripted"
        assert side["sampling"] == {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "min_p": 0.0, "max_tokens": 32768,
                                    "max_tokens_counts_thinking": True, "stop_at_observation": False,
                                    "repetition_guard": False}
        assert side["think"] == "full" and side["seed"] == 0 and side["finish"] == "stop"
        assert side["tokens"]["prompt_evaluated"] <= side["tokens"]["prompt_total"]


def test_a_row_that_already_has_gen_gets_the_new_one_in_its_place(tmp_path):
    job = {**bench_job("swe", 1), "gen": "an older prediction", "after": 1}
    bench = write_bench(tmp_path / "bench.jsonl", [job])
    out = tmp_path / "p.jsonl"
    run(bench, out, Scripted([ANSWER]))
    [line] = read_out(out)
    assert list(line) == [*job, "awl_predict"] and line["gen"].lstrip().startswith("<predicted_observation>")


@pytest.mark.parametrize(
    ("raw", "think", "expected"),
    [
        (ANSWER, "full", f"\n\n<predicted_observation>\n{OBSERVATION}\n</predicted_observation>"),
        # thinking off: the template closed an empty think block, the model writes only the answer
        (ANSWER, "off", f"<predicted_observation>\n{OBSERVATION}\n</predicted_observation>"),
        # a budget ends thinking early (the forced close ends in a blank line); the answer after it counts
        (ANSWER, "5", f"\n\n<predicted_observation>\n{OBSERVATION}\n</predicted_observation>"),
        # thinking that never closed (the model ran out of tokens): no answer, as a reasoning parser gives
        (f"<think>\n{THINKING} and then", "full", ""),
        # a model that writes no tags at all: its text is the answer
        ("total 0\n", "full", "total 0\n"),
    ],
)
def test_gen_is_the_answer_after_thinking(tmp_path, raw, think, expected):
    bench = write_bench(tmp_path / "bench.jsonl", [bench_job("terminal", 1)])
    settings = RunSettings("scripted", BENCH_SAMPLING, ThinkBudget.parse(think), 0)
    [event] = run(bench, tmp_path / "p.jsonl", Scripted([ScriptedAnswer(raw, chunk=2)]), settings)
    assert event.gen == expected
    assert read_out(tmp_path / "p.jsonl")[0]["gen"] == expected


def test_gen_text_splits_at_the_first_think_close():
    assert gen_text("a</think>b</think>c", "tag") == "b</think>c"
    assert gen_text("<predicted_observation>x</predicted_observation>", "tag") == "<predicted_observation>x</predicted_observation>"
    assert gen_text("still thinking <predicted_observation>x</predicted_observation>", "unclosed-think") == ""


def test_gen_text_over_a_server_is_its_content_as_it_came():
    # Separate thinking: awl's raw answer joins it to the content with `</think>\n\n`; the content is what follows.
    assert gen_text("plan</think>\n\n\n\n<p>x</p>", "tag", served=True) == "\n\n<p>x</p>"
    assert gen_text("plan</think>\n\n<p>x</p>", "tag", served=True) == "<p>x</p>"
    assert gen_text("plan, never finished", "unclosed-think", served=True) == ""
    # Thinking in the text: the content is the whole text, thinking included (the judge removes it).
    assert gen_text("plan</think>\n\n<p>x</p>", "tag", served=False) == "plan</think>\n\n<p>x</p>"
    assert gen_text("plan, never finished", "unclosed-think", served=False) == "plan, never finished"


# -- order and prefix reuse ------------------------------------------------------------


def test_rows_of_one_trajectory_run_together_earliest_turn_first(tmp_path):
    jobs = [bench_job("terminal", 3), bench_job("mcp", 2), bench_job("terminal", 1), bench_job("mcp", 1), bench_job("terminal", 2)]
    bench = write_bench(tmp_path / "bench.jsonl", jobs)
    backend = Scripted([ANSWER])
    events = run(bench, tmp_path / "p.jsonl", backend)
    assert [(e.row.task, e.row.turn_idx, e.row.line) for e in events] == [
        ("terminal", 1, 3), ("terminal", 2, 5), ("terminal", 3, 1), ("mcp", 1, 4), ("mcp", 2, 2)]
    # The run that ends puts the file in the input's order, as the official run writes it.
    assert [line["awl_predict"]["line"] for line in read_out(tmp_path / "p.jsonl")] == [1, 2, 3, 4, 5]
    tokens = [e.side["tokens"] for e in events]
    # Turn k+1 of a trajectory costs only its new messages (the scripted backend counts them
    # as the append-only context does); the first turn of each trajectory costs all of it.
    assert tokens[0]["prompt_evaluated"] == tokens[0]["prompt_total"]
    assert tokens[3]["prompt_evaluated"] == tokens[3]["prompt_total"]
    for later in (1, 2, 4):
        assert tokens[later]["prompt_evaluated"] < tokens[later]["prompt_total"] - tokens[later - 1]["prompt_total"] + 8


# -- selection ----------------------------------------------------------------------------


def test_rows_and_domain_select_lines_of_the_file(tmp_path):
    bench = six_rows(tmp_path)
    events = run(bench, tmp_path / "a.jsonl", Scripted([ANSWER]), spec="2-3,5")
    assert [e.row.line for e in events] == [2, 3, 5]
    events = run(bench, tmp_path / "b.jsonl", Scripted([ANSWER]), domain="mcp")
    assert [e.row.line for e in events] == [4, 5, 6]
    events = run(bench, tmp_path / "c.jsonl", Scripted([ANSWER]), spec="1-4", domain="mcp")
    assert [e.row.line for e in events] == [4]
    assert [json.loads(line)["awl_predict"]["line"] for line in (tmp_path / "a.jsonl").read_text().splitlines()] == [2, 3, 5]


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [("0-3", "not a range from a lower"), ("5-2", "not a range from a lower"), ("1-7", "goes past the file's last row, on line 6"),
     ("x", "`x` is not a line number"), ("1-", "`1-` is not a line number"), ("", "is not a line number"), ("1,,2", "is not a line number")],
)
def test_a_bad_rows_option_is_one_clear_error(tmp_path, spec, fragment):
    rows = read_bench_rows(six_rows(tmp_path))
    with pytest.raises(InputError) as raised:
        select_rows(rows, spec=spec)
    message = raised.value.one_line()
    assert fragment in message and ("Pick lines from 1 to 6." if spec == "1-7" else "`--rows 1-50`") in message


def test_an_unknown_or_absent_domain_is_one_clear_error(tmp_path):
    rows = read_bench_rows(six_rows(tmp_path))
    message = refused(lambda: select_rows(rows, domain="termnal"))
    assert re.search(r"Unknown domain `termnal`\. Did you mean `terminal`\? This file holds: mcp, terminal", message)
    message = refused(lambda: select_rows(rows, domain="web"))
    assert re.search("The file has no web rows. Those rows are of: mcp, terminal", message)
    assert re.search("no mcp rows among --rows 1-2", refused(lambda: select_rows(rows, spec="1-2", domain="mcp")))


@given(st.text(max_size=30))
def test_any_rows_text_gives_lines_in_range_or_an_input_error(spec):
    try:
        lines = parse_row_spec(spec, 40)
    except InputError:
        return
    assert lines and all(1 <= line <= 40 for line in lines)


# -- resuming -----------------------------------------------------------------------------


class InterruptAt:
    """A backend that is stopped by Ctrl+C while it works on its `at`-th row."""

    def __init__(self, backend: ScriptedBackend, at: int) -> None:
        self.backend, self.at, self.info = backend, at, backend.info
        self.calls = 0
        self.parallel = 1

    def for_session(self):
        return self

    def __getattr__(self, name):
        return getattr(self.backend, name)  # count_tokens, prefetch, ...

    def generate(self, messages, **options):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return self.backend.generate(messages, **options)


def test_an_interrupted_run_goes_on_without_redoing_finished_rows(tmp_path):
    bench, out = six_rows(tmp_path), tmp_path / "p.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run(bench, out, InterruptAt(Scripted([ANSWER]), at=4))
    assert [line["awl_predict"]["line"] for line in read_out(out)] == [1, 2, 3], "finished rows are on disk"
    second = Scripted([ANSWER])
    events = run(bench, out, second)
    assert [e.row.line for e in events] == [4, 5, 6] and second.calls == 3
    assert [line["awl_predict"]["line"] for line in read_out(out)] == [1, 2, 3, 4, 5, 6]
    assert run(bench, out, Scripted([ANSWER])) == [], "a finished file has nothing left to do"


class FailAt(InterruptAt):
    """A backend whose generation fails (as a server's request does) on its `at`-th call."""

    def generate(self, messages, **options):
        self.calls += 1
        if self.calls == self.at:
            raise GenerationError("The server failed with HTTP 500.", "Check its log.")
        return self.backend.generate(messages, **options)


def test_a_row_whose_generation_fails_is_written_with_an_empty_gen_and_the_run_goes_on(tmp_path):
    bench, out = six_rows(tmp_path), tmp_path / "p.jsonl"
    events = run(bench, out, FailAt(Scripted([ANSWER]), at=2))
    assert [type(e) for e in events] == [RowPredicted, RowFailed, RowPredicted, RowPredicted, RowPredicted, RowPredicted]
    assert events[-1].progress.failed == 1 and events[-1].progress.done == 6
    lines = read_out(out)
    assert [line["awl_predict"]["line"] for line in lines] == [1, 2, 3, 4, 5, 6]
    assert lines[1]["gen"] == "" and lines[1]["awl_predict"]["cause"] == "request"
    assert "HTTP 500" in lines[1]["awl_predict"]["failed"]
    assert run(bench, out, Scripted([ANSWER])) == [], "a failed row is a result: a rerun keeps it"
    rows = read_bench_rows(bench)
    predictions = PredictionsFile.open(out, lines_of(rows), SETTINGS, source=bench, retry_failed=True)
    assert predictions.retried == 1 and predictions.done == {1, 3, 4, 5, 6}
    assert [line["awl_predict"]["line"] for line in read_out(out)] == [1, 3, 4, 5, 6], "taken out, to be done again"
    events = list(predict_rows(work_order(rows), Scripted([ANSWER]), SETTINGS, predictions))
    predictions.close()
    assert [e.row.line for e in events] == [2] and isinstance(events[0], RowPredicted)
    assert [line["awl_predict"]["line"] for line in read_out(out)] == [1, 2, 3, 4, 5, 6] and read_out(out)[1]["gen"]


def test_an_unfinished_last_line_is_cut_off_and_its_row_predicted_again(tmp_path):
    bench, out = six_rows(tmp_path), tmp_path / "p.jsonl"
    run(bench, out, Scripted([ANSWER]), spec="1-2")
    whole = out.read_bytes()
    out.write_bytes(whole + whole.splitlines(keepends=True)[0][:57])  # a kill in the middle of row 3's line
    rows = read_bench_rows(bench)
    predictions = PredictionsFile.open(out, lines_of(rows), SETTINGS, source=bench)
    assert predictions.cut_bytes == 57 and predictions.done == {1, 2}
    assert out.read_bytes() == whole
    events = list(predict_rows(work_order(rows), Scripted([ANSWER]), SETTINGS, predictions))
    predictions.close()
    assert [e.row.line for e in events] == [3, 4, 5, 6]
    assert [line["awl_predict"]["line"] for line in read_out(out)] == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        (RunSettings("other.gguf", BENCH_SAMPLING, BENCH_THINK, 0, model_file={"size": 9, "sha256": "ab" * 32}),
         "written with the model scripted; this run loads other.gguf (9 bytes, sha256 abababababab)"),
        (RunSettings("openai:other-model@http://127.0.0.1:9/v1", BENCH_SAMPLING, BENCH_THINK, 0),
         "written with the model scripted; this run loads openai:other-model@http://127.0.0.1:9/v1"),
        (RunSettings("scripted", SamplingConfig(temperature=0.7, max_tokens=32768), BENCH_THINK, 0), "written with temperature 0.6; this run asks for 0.7"),
        (RunSettings("scripted", SamplingConfig(top_k=40, max_tokens=32768), BENCH_THINK, 0), "written with top-k 20; this run asks for 40"),
        (RunSettings("scripted", BENCH_SAMPLING, ThinkBudget.parse("512"), 0), "written with think full; this run asks for 512"),
        (RunSettings("scripted", BENCH_SAMPLING, BENCH_THINK, 9), "written with seed 0; this run asks for 9"),
    ],
)
def test_an_out_file_written_with_other_settings_is_refused(tmp_path, settings, fragment):
    bench, out = six_rows(tmp_path), tmp_path / "p.jsonl"
    run(bench, out, Scripted([ANSWER]), spec="1")
    before = out.read_bytes()
    with pytest.raises(InputError) as raised:
        PredictionsFile.open(out, lines_of(read_bench_rows(bench)), settings, source=bench)
    assert fragment in raised.value.one_line() and "another `--out`" in raised.value.one_line()
    assert out.read_bytes() == before, "a refused file is left as it was"


def test_an_out_file_of_another_benchmark_file_is_refused(tmp_path):
    bench, out = six_rows(tmp_path), tmp_path / "p.jsonl"
    run(bench, out, Scripted([ANSWER]), spec="1-2")
    other = write_bench(tmp_path / "other.jsonl", [bench_job("swe", n) for n in (1, 2, 3)])
    message = refused(lambda: PredictionsFile.open(out, lines_of(read_bench_rows(other)), SETTINGS, source=other))
    assert re.search(r"holds predictions for another benchmark file: its line 1 is not row 1 of .*other\.jsonl", message)
    shorter = write_bench(tmp_path / "short.jsonl", [bench_job("terminal", 1)])
    message = refused(lambda: PredictionsFile.open(out, lines_of(read_bench_rows(shorter)), SETTINGS, source=shorter))
    assert re.search("its line 2 is not row 2", message)


def test_out_files_that_are_not_predictions_are_refused(tmp_path):
    bench = six_rows(tmp_path)
    rows = lines_of(read_bench_rows(bench))
    assert re.search("is a directory", refused(lambda: PredictionsFile.open(tmp_path, rows, SETTINGS, source=bench)))
    message = refused(lambda: PredictionsFile.open(bench, rows, SETTINGS, source=bench))
    assert re.search("is the benchmark file itself", message)
    rows_file = write_bench(tmp_path / "rows.jsonl", [bench_job("terminal", 1)])
    message = refused(lambda: PredictionsFile.open(rows_file, rows, SETTINGS, source=bench))
    assert re.search(r"is not a file of `awl bench predict` \(line 1 has no `awl_predict` record\)", message)
    damaged = tmp_path / "damaged.jsonl"
    run(bench, damaged, Scripted([ANSWER]), spec="1-2")
    damaged.write_bytes(b"{not json\n" + damaged.read_bytes())
    message = refused(lambda: PredictionsFile.open(damaged, rows, SETTINGS, source=bench))
    assert re.search("damaged.jsonl line 1 is not a JSON row", message)
    future = tmp_path / "future.jsonl"
    run(bench, future, Scripted([ANSWER]), spec="1")
    future.write_text(future.read_text().replace('"version": 2', '"version": 3', 1))
    message = refused(lambda: PredictionsFile.open(future, rows, SETTINGS, source=bench))
    assert re.search(r"future.jsonl line 1: its `awl_predict` record has version 3; this awl reads version 2", message)


def test_a_row_that_does_not_fit_is_written_failed_as_the_official_run_fails_it(tmp_path):
    jobs = [bench_job("terminal", 1), bench_job("terminal", 2, system_str="long " * 3000)]
    bench, out = write_bench(tmp_path / "bench.jsonl", jobs), tmp_path / "p.jsonl"
    backend = Scripted([ANSWER], n_ctx=34816)
    events = run(bench, out, backend)
    assert [type(event) for event in events] == [RowPredicted, RowPredicted]
    assert events[0].failed is None and events[1].failed and events[1].gen == ""
    assert "more than the 34,816-token context" in events[1].failed and events[1].progress.unfit == 1
    assert backend.calls == 1, "the model never saw the row that does not fit: no history turn was left out"
    lines = read_out(out)
    assert [line["awl_predict"]["line"] for line in lines] == [1, 2] and lines[1]["gen"] == ""
    assert lines[1]["awl_predict"]["failed"] == events[1].failed
    assert run(bench, out, Scripted([ANSWER], n_ctx=65536)) == [], "a failed row is a result: a rerun skips it"
