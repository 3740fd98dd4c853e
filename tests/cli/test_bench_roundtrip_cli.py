"""`awl import` then `awl export` through the real entry point is the identity, for rows whose
`prompt` list holds an empty string too (it was refused: "does not record the prompts of its
turns"); U+0085, U+2028 and U+2029 come back JSON-equal, escaped by awl's writer
(docs/agentworldbench.md)."""

from __future__ import annotations

import json

import pytest

from tests.cli.helpers import awl
from tests.unit.test_agentworldbench import bench_job


def empty_prompt_rows() -> list[dict]:
    first = bench_job("terminal", 2)
    first["prompt"][1] = ""  # a turn whose prompt the benchmark left empty
    first["current_prompt"] = ""
    last = bench_job("mcp", 3)
    last["prompt"][2] = ""
    last["current_prompt"] = ""
    return [first, {**first, "turn_idx": 3, "current_prompt": first["prompt"][2]}, last]


def round_trip(tmp_path, rows: list[dict]) -> list[str]:
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    imported = awl("import", str(bench), "--out-dir", str(tmp_path / "imported"), home=tmp_path)
    assert imported.returncode == 0, imported.stderr
    exported = []
    for path in imported.stdout.splitlines():
        result = awl("export", path, home=tmp_path)
        assert result.returncode == 0, result.stderr
        exported += result.stdout.splitlines()
    return exported


def test_rows_with_an_empty_prompt_come_back_line_for_line(tmp_path):
    rows = empty_prompt_rows()
    exported = round_trip(tmp_path, rows)
    assert [json.loads(line) for line in exported] == rows
    assert [list(json.loads(line)) for line in exported] == [list(row) for row in rows]  # key order too


@pytest.mark.parametrize("char", ["\u0085", "\u2028", "\u2029"])
def test_the_three_escaped_characters_come_back_json_equal_not_byte_equal(tmp_path, char):
    row = bench_job("terminal", 1)
    row["response"][0] += f"line{char}break"
    row["extra_note"] = f"a{char}b"
    [line] = round_trip(tmp_path, [row])
    assert json.loads(line) == row  # the same JSON value
    assert char not in line and f"\\u{ord(char):04x}" in line  # escaped, so every JSONL reader sees one line
