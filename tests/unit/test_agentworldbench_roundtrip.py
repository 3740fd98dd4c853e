"""AgentWorldBench files: import then export gives back the same rows; hostile rows get clear errors."""

from __future__ import annotations

import json
import os

import pytest

from agentworld_local.errors import InputError
from agentworld_local.trajectory import read_trajectory
from agentworld_local.trajectory import writer as writer_module
from agentworld_local.agentworldbench.rows import import_bench, read_bench_row, read_bench_rows
from agentworld_local.agentworldbench.export import ExportPlan, trajectory_to_rows
from tests.unit.test_agentworldbench import OBS, bench_job


def thirteen_rows() -> list[dict]:
    """Rows as a benchmark file holds them: several trajectories, only some turns evaluated,
    fields this awl does not know, a bare-string prompt, a marker-less response."""
    rows = [bench_job("terminal", n) for n in (1, 2, 3)]
    rows += [bench_job("mcp", n, extra_score={"judge": [4, 5]}) for n in (2, 3)]
    rows += [bench_job("web", 3, current_prompt="")]  # only the last turn evaluated
    rows += [{**bench_job("os", n), "difficulty": "hard", "task": "benchmarks/os"} for n in (1, 3)]
    android = bench_job("android", 2)
    android["response"][0] = "exit status 0"
    rows += [android, {**android, "turn_idx": 3, "current_prompt": android["prompt"][2]}]
    rows += [{"id": "s-1", "task": "mcp", "prompt": "### Turn 1\n**Action:**\nping", "response": OBS + "pong", "turn_idx": 1}]
    short = bench_job("swe", 2)
    short["response"] = short["response"][:2]  # the evaluated turn's response is not in the row
    rows += [short, {**bench_job("search", 1), "id": 7}]
    assert len(rows) == 13
    return rows


def export_all(paths) -> list[dict]:
    rows = []
    for path in paths:
        rows += [json.loads(line) for line in b"".join(ExportPlan(read_trajectory(path)).chunks()).decode().splitlines()]
    return rows


def test_import_then_export_gives_back_the_same_rows(tmp_path):
    rows = thirteen_rows()
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    written = import_bench(bench, tmp_path / "imported")
    assert len(written) == 8
    exported = export_all(written)
    assert len(exported) == 13  # it used to be 27: every imported trajectory exported all its turns
    # Files come in first-row order; within each, rows keep their order: the same rows, line for line.
    order = sorted(range(13), key=lambda i: [j for j, path in enumerate(written)
                                              if i + 1 in read_trajectory(path).header.extra["agentworldbench"]["rows"]])
    assert exported == [rows[i] for i in order]
    assert [list(r) for r in exported] == [list(rows[i]) for i in order], "key order kept too"


def test_a_changed_imported_trajectory_exports_as_a_session(tmp_path):
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps(bench_job("terminal", 3)) + "\n", encoding="utf-8")
    [path] = import_bench(bench, tmp_path / "i")
    with writer_module.TrajectoryWriter.append_to(path) as writer:
        writer.record_undo(2)
    rows = trajectory_to_rows(read_trajectory(path))
    assert [r["turn_idx"] for r in rows] == [1, 2] and len(rows[0]["prompt"]) == 2


ROW_FAULTS = {
    "deep": (b'{"task": "web", "prompt": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "row 2: not valid JSON (nested deeper"),
    "huge-int": (b'{"task": "web", "id": ' + b"7" * 5000 + b"}", "row 2: not valid JSON (a number with more than 4,300 digits"),
    "bad-utf8": (b'{"task": "w\xffeb"}', "row 2: not UTF-8 text (byte 0xff at column 12)"),
    "huge-turn-idx": (json.dumps({**bench_job("web", 1), "turn_idx": 10**4000}).encode(), "row 2: field 'turn_idx' is 1000"),
}


@pytest.mark.parametrize("name", sorted(ROW_FAULTS))
def test_hostile_rows_get_one_clear_error_naming_the_row(tmp_path, name):
    bad, fragment = ROW_FAULTS[name]
    path = tmp_path / "rows.jsonl"
    path.write_bytes(json.dumps(bench_job("web", 1)).encode() + b"\n" + bad + b"\n")
    for read in (lambda: read_bench_rows(path), lambda: read_bench_row(path, 2), lambda: import_bench(path, tmp_path / "o")):
        with pytest.raises(InputError) as caught:
            read()
        line = caught.value.one_line()
        assert fragment in line and "\n" not in line and len(line) < 600, line
    assert not (tmp_path / "o").exists()
    assert read_bench_row(path, 1).turn_idx == 1  # the other row is still usable


def test_surrogates_in_a_row_are_imported_and_exported(tmp_path):
    path = tmp_path / "rows.jsonl"
    job = bench_job("terminal", 2)
    job["response"][0] = OBS + "bad \ud800 byte"
    job["system_str"] = "sys \udfff"
    path.write_text(json.dumps(job) + "\n", encoding="utf-8")  # json.dumps escapes them: valid JSON
    [written] = import_bench(path, tmp_path / "o")
    assert export_all([written]) == [job]


def test_empty_and_blank_files_say_so(tmp_path):
    path = tmp_path / "rows.jsonl"
    for content in ("", "\n\n"):
        path.write_text(content)
        for read in (lambda: read_bench_rows(path), lambda: read_bench_row(path, 1)):
            with pytest.raises(InputError) as caught:
                read()
            assert "holds no rows" in caught.value.one_line() and "from 1 to 0" not in caught.value.one_line()


def test_a_fifo_benchmark_file_is_refused_at_once(tmp_path):
    fifo = tmp_path / "rows.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        read_bench_rows(fifo)


def test_a_row_holding_a_line_separator_is_one_row(tmp_path):
    path = tmp_path / "rows.jsonl"
    job = bench_job("web", 1)
    job["prompt"][0] += "\u2028 and \x1c"
    path.write_text(json.dumps(job, ensure_ascii=False) + "\n", encoding="utf-8")
    assert read_bench_rows(path)[0].prompts[0].endswith("\u2028 and \x1c")


def test_a_failed_import_leaves_no_files(tmp_path, monkeypatch):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(bench_job("web", 1)) + "\n" + json.dumps(bench_job("mcp", 1)) + "\n", encoding="utf-8")
    calls = []
    real = writer_module.write_new

    def failing(target, header, turns):
        calls.append(target)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(target, header, turns)

    import agentworld_local.agentworldbench.rows as bench_module
    monkeypatch.setattr(bench_module, "write_new", failing)
    with pytest.raises(OSError):
        import_bench(path, tmp_path / "out")
    assert list((tmp_path / "out").glob("*")) == []
