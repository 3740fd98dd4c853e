"""`awl bench score` counts rows one way per domain and overall, and never shows a score that
is not a finite number: a row holding NaN or an infinity is invalid, counted apart and named."""

from __future__ import annotations

import json

import pytest

from tests.cli.helpers import awl

SCORES = ("format", "factuality", "consistency", "realism", "quality")


def judged(domain: str, total, *, failed=0.0, **scores) -> str:
    row = {"task": f"agentworldbench/{domain}", "failed": failed, "total_score": total,
           **{name: scores.get(name, 3) for name in SCORES}}
    return json.dumps(row)  # NaN and infinities as Python writes them: NaN, Infinity, -Infinity


@pytest.fixture
def scored(tmp_path):
    def run(*rows: str, as_json: bool = True):
        path = tmp_path / "run.judged.jsonl"
        path.write_text("".join(row + "\n" for row in rows), encoding="utf-8")
        result = awl("bench", "score", str(path), *(["--json"] if as_json else []), home=tmp_path)
        assert result.returncode == 0, result.stderr
        return result
    return run


def test_a_valid_row_counts_the_same_per_domain_and_overall(scored):
    # A valid row with total 0 (no total given) is valid everywhere, and not averaged anywhere.
    result = scored(judged("terminal", 5.0), judged("terminal", 0), judged("mcp", 3.0), judged("mcp", 4.0, failed=1.0))
    summary = json.loads(result.stdout)
    terminal, mcp = summary["domains"]["terminal"], summary["domains"]["mcp"]
    assert (terminal["valid"], terminal["failed"], mcp["valid"], mcp["failed"]) == (2, 0, 1, 1)
    assert (summary["rows"], summary["valid"], summary["failed"], summary["invalid"]) == (4, 3, 1, 0)
    assert summary["valid"] == terminal["valid"] + mcp["valid"]
    assert terminal["scores"]["total_score"] == 100.0 and summary["overall"] == pytest.approx(75.0)


@pytest.mark.parametrize("bad", [float("-inf"), float("inf"), float("nan"), 1e308, 10**400],
                         ids=["-inf", "inf", "nan", "too-large-to-scale", "too-large-for-a-float"])
def test_a_score_that_is_not_a_finite_number_makes_its_row_invalid(scored, bad):
    rows = (judged("terminal", 5.0), judged("terminal", bad), judged("web", 3.0, realism=bad))
    result = scored(*rows)
    summary = json.loads(result.stdout)  # strict JSON: no NaN or Infinity in it
    assert "Infinity" not in result.stdout and "NaN" not in result.stdout
    assert (summary["rows"], summary["valid"], summary["failed"], summary["invalid"]) == (3, 1, 0, 2)
    assert summary["domains"]["terminal"]["invalid"] == summary["domains"]["web"]["invalid"] == 1
    assert summary["overall"] == 100.0 and summary["domains"]["web"]["scores"]["total_score"] is None
    assert "2 rows of" in result.stderr and "not a finite number" in result.stderr and "lines 2, 3" in result.stderr
    table = scored(*rows, as_json=False).stdout
    assert "inf" not in table.lower() and "nan" not in table.lower()
    assert "Overall: 100.00" in table and "valid: 1, failed: 0, invalid: 2" in table


def test_only_invalid_rows_leave_no_overall_score(scored):
    result = scored(judged("terminal", float("-inf")), as_json=False)
    assert "Overall: -" in result.stdout and "-inf" not in result.stdout
    assert "1 row of" in result.stderr and "(line 1)" in result.stderr
