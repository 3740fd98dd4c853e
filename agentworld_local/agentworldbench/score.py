"""Aggregating judged rows as the official scoring does.

Per domain (the task's last path part): the valid rows are those with `failed` equal to 0
(a row without `failed` is not valid); each dimension and the total are averaged over the
valid rows where they are not 0, then mapped from 1..5 to 0..100 as (x - 1) / 4 * 100.
Overall: the same mapping of the mean total over every valid row of every domain (rows
weigh equally, not domains). Failed rows are counted, never scored.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Any

from agentworld_local.agentworldbench.judge import domain_of
from agentworld_local.agentworldbench.verdict import DIMENSIONS

TOTAL = "total_score"
COLUMNS = (*DIMENSIONS, TOTAL)


def normalised(value: float) -> float:
    return (value - 1) / 4 * 100


def _number(value: Any) -> float | None:
    """A score as stored; None for anything that is not a finite number other than 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value in (0, float("inf")):
        return None
    return float(value)


def _valid(row: dict[str, Any]) -> bool:
    failed = row.get("failed", 1.0)
    return not isinstance(failed, bool) and isinstance(failed, (int, float)) and failed == 0


def has_verdicts(rows: list[dict[str, Any]]) -> bool:
    """Whether any row went through a judge step (awl's or the official one): it says `failed`."""
    return any("failed" in row for row in rows)


def aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """{"domains": {name: {rows, valid, failed, scores: {column: 0..100 or None}}}, "overall", ...}"""
    by_domain: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_domain[domain_of(row)].append(row)
    domains: dict[str, Any] = {}
    totals: list[float] = []
    for name in sorted(by_domain):
        group = by_domain[name]
        valid = [row for row in group if _valid(row)]
        scores: dict[str, float | None] = {}
        for column in COLUMNS:
            values = [v for v in (_number(row.get(column, 0)) for row in valid) if v is not None]
            scores[column] = normalised(mean(values)) if values else None
            if column == TOTAL:
                totals.extend(values)
        domains[name] = {"rows": len(group), "valid": len(valid), "failed": len(group) - len(valid), "scores": scores}
    return {
        "domains": domains,
        "overall": normalised(mean(totals)) if totals else None,
        "rows": len(rows),
        "valid": len(totals),
        "failed": len(rows) - len(totals),
    }
