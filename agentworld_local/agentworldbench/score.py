"""Aggregating judged rows as the official scoring does.

Per domain (the task's last path part): the valid rows are those with `failed` equal to 0
(a row without `failed` is not valid); each dimension and the total are averaged over the
valid rows where they are not 0, then mapped from 1..5 to 0..100 as (x - 1) / 4 * 100.
Overall: the same mapping of the mean total over every valid row of every domain (rows
weigh equally, not domains). Failed rows are counted, never scored.

One definition of a valid row serves the domains and the overall score alike. A row that
passed the judge step but holds a score that is not a finite number (NaN, an infinity, or
too large to map to 0..100: JSON allows them, the official judge can write them) is not
valid either: it is counted as invalid, apart, so no such number reaches a mean or the
output.
"""

from __future__ import annotations

import math
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
    """A score as stored; None for anything that is not a number, or is 0 (no score)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value == 0:
        return None
    return float(value)


def _passed(row: dict[str, Any]) -> bool:
    failed = row.get("failed", 1.0)
    return not isinstance(failed, bool) and isinstance(failed, (int, float)) and failed == 0


def _unscalable(value: Any) -> bool:
    """A number that has no place on the 0..100 scale: NaN, an infinity, or one so large
    that mapping it overflows."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False  # not a number: not a score, passed over as the official scoring does
    try:
        return not math.isfinite(normalised(float(value)))
    except OverflowError:  # an integer too large for a float
        return True


def invalid(row: dict[str, Any]) -> bool:
    """A row the judge step passed whose scores cannot all be scaled: counted apart, not scored."""
    return _passed(row) and any(_unscalable(row.get(column)) for column in COLUMNS)


def valid(row: dict[str, Any]) -> bool:
    """The one definition of a row that is scored, per domain and overall."""
    return _passed(row) and not invalid(row)


def has_verdicts(rows: list[dict[str, Any]]) -> bool:
    """Whether any row went through a judge step (awl's or the official one): it says `failed`."""
    return any("failed" in row for row in rows)


def aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """{"domains": {name: {rows, valid, failed, invalid, scores: {column: 0..100 or None}}},
    "overall", "rows", "valid", "failed", "invalid"}: the overall counts are the domains' sums."""
    by_domain: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_domain[domain_of(row)].append(row)
    domains: dict[str, Any] = {}
    totals: list[float] = []
    for name in sorted(by_domain):
        group = by_domain[name]
        scored = [row for row in group if valid(row)]
        unscored = sum(1 for row in group if invalid(row))
        scores: dict[str, float | None] = {}
        for column in COLUMNS:
            values = [v for v in (_number(row.get(column, 0)) for row in scored) if v is not None]
            scores[column] = normalised(mean(values)) if values else None
            if column == TOTAL:
                totals.extend(values)
        domains[name] = {"rows": len(group), "valid": len(scored), "failed": len(group) - len(scored) - unscored,
                         "invalid": unscored, "scores": scores}
    return {
        "domains": domains,
        "overall": normalised(mean(totals)) if totals else None,
        **{count: sum(domain[count] for domain in domains.values()) for count in ("rows", "valid", "failed", "invalid")},
    }
