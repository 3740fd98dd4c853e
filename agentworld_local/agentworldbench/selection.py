"""Which benchmark rows a batch run predicts, and in which order.

Rows are named by their line in the file (as `awl run --from-bench --row N` names them).
The work order puts the rows of one trajectory next to each other, earliest turn first:
row k's messages are row k-1's plus the ground-truth turn and a new action, so with the
append-only context (engine/llama) each row after the first evaluates only its new tokens.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agentworld_local.agentworldbench.rows import BenchFile, BenchRow
from agentworld_local.domains import domain_names
from agentworld_local.errors import InputError, did_you_mean

_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")
ROWS_HINT = "Write rows as line numbers of the file: `--rows 7`, `--rows 1-50` or `--rows 1-10,15,20-25`."


def parse_row_spec(spec: str, last_line: int) -> set[int]:
    """The line numbers `spec` names (`1-50`, `7`, `1-10,15`); each must be within 1..last_line."""
    lines: set[int] = set()
    for part in spec.split(","):
        match = _RANGE.match(part)
        if match is None:
            raise InputError(f"--rows {spec!r}: `{part.strip()}` is not a line number or a range.", ROWS_HINT)
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        if first < 1 or last < first:
            raise InputError(f"--rows {spec!r}: `{part.strip()}` is not a range from a lower to a higher line.", ROWS_HINT)
        if last > last_line:
            raise InputError(
                f"--rows {spec!r} goes past the file's last row, on line {last_line}.",
                f"Pick lines from 1 to {last_line}.",
            )
        lines.update(range(first, last + 1))
    return lines


def _domains_in(rows: Iterable[BenchRow]) -> list[str]:
    return sorted({row.domain for row in rows})


def _check_domain(domain: str, present: list[str], chosen: list[str], spec: str | None) -> None:
    """Refuse a domain no row has: `present` in the file, `chosen` among the selected lines."""
    if domain not in present and domain not in domain_names():
        known = sorted({*domain_names(), *present})
        raise InputError(
            f"Unknown domain `{domain}`.",
            f"{did_you_mean(domain, known)} This file holds: {', '.join(present)}.".lstrip(),
        )
    if domain not in chosen:
        where = f" among --rows {spec}" if spec is not None else ""
        raise InputError(f"The file has no {domain} rows{where}.", f"Those rows are of: {', '.join(chosen)}.")


def select_rows(rows: list[BenchRow], *, spec: str | None = None, domain: str | None = None) -> list[BenchRow]:
    """The rows `--rows` and `--domain` pick, in file order; refuses a selection that picks none."""
    chosen = rows
    if spec is not None:
        wanted = parse_row_spec(spec, rows[-1].line)
        chosen = [row for row in chosen if row.line in wanted]
        if not chosen:
            raise InputError(f"--rows {spec!r} names only blank lines.", "Pick lines that hold rows.")
    if domain is not None:
        _check_domain(domain, _domains_in(rows), _domains_in(chosen), spec)
        chosen = [row for row in chosen if row.domain == domain]
    return chosen


@dataclass(frozen=True)
class Malformed:
    """A selected line that is not a valid row: skipped, and said with its reason."""

    line: int
    reason: str


@dataclass(frozen=True)
class Selection:
    rows: list[BenchRow]
    malformed: list[Malformed]


def _task_domain(data: Any) -> str | None:
    """The domain a decoded line names, if it names one (before the row is checked)."""
    task = data.get("task") if isinstance(data, dict) else None
    return task.strip().split("/")[-1] if isinstance(task, str) and task.strip() else None


def select_lines(bench: BenchFile, *, spec: str | None = None, domain: str | None = None) -> Selection:
    """The rows `--rows` and `--domain` pick, chosen before any row is checked: a malformed row
    that is not picked changes nothing; one that is picked is skipped with its reason (with
    `--domain`, a line whose domain cannot be read counts as picked)."""
    lines = bench.lines()
    if spec is not None:
        wanted = parse_row_spec(spec, bench.last_line)
        lines = [line for line in lines if line in wanted]
        if not lines:
            raise InputError(f"--rows {spec!r} names only blank lines.", "Pick lines that hold rows.")
    rows: list[BenchRow] = []
    malformed: list[Malformed] = []
    domains: dict[int, str | None] = {}
    for line in lines if domain is None else bench.lines():
        try:
            domains[line] = _task_domain(bench.data(line))
        except InputError:
            domains[line] = None
    if domain is not None:
        present = sorted({name for name in domains.values() if name})
        chosen = sorted({domains[line] for line in lines if domains[line]})
        _check_domain(domain, present, chosen, spec)
        lines = [line for line in lines if domains[line] in (domain, None)]
    for line in lines:
        try:
            rows.append(bench.row(line))
        except InputError as error:
            malformed.append(Malformed(line, error.message))
    return Selection(rows, malformed)


def trajectory_key(row: BenchRow) -> tuple[str, str]:
    """Rows with this key come from one trajectory (the benchmark gives them one id)."""
    return (row.task, str(row.id))


def work_order(rows: list[BenchRow]) -> list[BenchRow]:
    """Trajectories in the order they first appear; within one, rows by turn (then by line)."""
    groups: dict[tuple[str, str], list[BenchRow]] = {}
    for row in rows:
        groups.setdefault(trajectory_key(row), []).append(row)
    return [row for group in groups.values() for row in sorted(group, key=lambda r: (r.turn_idx, r.line))]


def lines_of(rows: Iterable[BenchRow]) -> dict[int, dict]:
    """Line -> the row's fields as read (what a predictions file is checked against)."""
    return {row.line: row.fields for row in rows}
