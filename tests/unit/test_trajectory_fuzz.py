"""Fuzzing the trajectory reader and the benchmark row reader: the result is a value or an
AwlError, never another exception (a traceback for the user)."""

from __future__ import annotations

import io
import json

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from agentworld_local.errors import AwlError
from agentworld_local.trajectory import Header, TrajectoryWriter, TurnRecord, read_trajectory
from agentworld_local.agentworldbench.rows import read_bench_row, read_bench_rows
from agentworld_local.agentworldbench.export import ExportPlan
from agentworld_local.cli.replay_plain import replay
from tests.unit.test_agentworldbench import bench_job


def valid_file() -> bytes:
    buffer = io.BytesIO()
    header = Header(domain="terminal", task="look", system_prompt="sys")
    lines = [header.to_dict()]
    for n in range(1, 4):
        lines.append(TurnRecord(id=n, parent=n - 1 or None, turn=n, action=f"cmd {n}", observation=f"out {n}",
                                prompt=f"### Turn {n}").to_dict())
    lines.append({"type": "undo", "kept": 2, "created": "2025-01-01T00:00:00Z"})
    for line in lines:
        buffer.write(json.dumps(line).encode() + b"\n")
    return buffer.getvalue()


VALID = valid_file()


@st.composite
def mutated(draw) -> bytes:
    """A valid file with a few bytes replaced, inserted or cut: what a damaged disk or editor leaves."""
    data = bytearray(VALID)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["replace", "insert", "cut"]))
        chunk = draw(st.binary(min_size=1, max_size=8) | st.sampled_from([b"\n", b"{", b"\\ud800", b'"', b"\xff", b"9" * 50]))
        if kind == "replace":
            data[at:at + len(chunk)] = chunk
        elif kind == "insert":
            data[at:at] = chunk
        else:
            del data[at:at + len(chunk)]
    return bytes(data)


def exercise(path) -> None:
    """Read, then do what the CLI does with the result: replay, export, append."""
    try:
        traj = read_trajectory(path)
        replay(traj, Console(file=io.StringIO(), width=80), plain=True, show_thinking=True)
        replay(traj, Console(file=io.StringIO(), width=80, force_terminal=True), show_thinking=True)
        try:
            for _ in ExportPlan(traj).chunks():
                pass
        except AwlError:
            pass
        if traj.damaged_line is None:
            with TrajectoryWriter.append_to(path) as writer:
                writer.append(TurnRecord(action="x", parent=traj.current_branch()[-1].id if traj.current_branch() else None))
            assert read_trajectory(path).damaged_line is None
    except AwlError:
        pass


@given(mutated())
def test_damaged_trajectories_never_raise_anything_else(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fuzz") / "t.jsonl"
    path.write_bytes(data)
    exercise(path)


@given(st.binary(max_size=300))
def test_random_bytes_never_raise_anything_else(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fuzz") / "t.jsonl"
    path.write_bytes(VALID.split(b"\n")[0] + b"\n" + data)
    exercise(path)
    path.write_bytes(data)
    exercise(path)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)
FIELDS = ["task", "id", "prompt", "response", "current_prompt", "system_str", "turn_idx", "total_turns"]


@st.composite
def bench_lines(draw) -> bytes:
    """Rows with fields removed or replaced by any JSON value, or raw bytes."""
    if draw(st.booleans()):
        return draw(st.binary(max_size=200)).replace(b"\n", b" ")
    row = bench_job(draw(st.sampled_from(["terminal", "mcp", "web"])), draw(st.integers(1, 3)))
    for field in draw(st.lists(st.sampled_from(FIELDS), max_size=3)):
        if draw(st.booleans()):
            row.pop(field, None)
        else:
            row[field] = draw(JSON_VALUES)
    return json.dumps(row).encode()


@given(st.lists(bench_lines(), min_size=1, max_size=3), st.integers(0, 4))
def test_bench_rows_are_a_value_or_an_awl_error(tmp_path_factory, lines, row):
    folder = tmp_path_factory.mktemp("bench")
    path = folder / "rows.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    for read in (lambda: read_bench_rows(path), lambda: read_bench_row(path, row)):
        try:
            read()
        except AwlError as error:
            assert "\n" not in error.one_line()
