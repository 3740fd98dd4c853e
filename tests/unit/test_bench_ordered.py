"""Putting a bench results file in its input's order (agentworldbench/ordered.py): written
whole or not at all, untouched when already in order, rows taken out on request."""

from __future__ import annotations

import errno
import json

import pytest

from agentworld_local.agentworldbench import ordered
from agentworld_local.errors import TrajectoryError


def line_of(raw: bytes) -> int:
    return json.loads(raw)["side"]["line"]


def write(path, lines: list[int | None]) -> None:
    path.write_bytes(b"".join(b"\n" if n is None else json.dumps({"row": n, "side": {"line": n}}).encode() + b"\n" for n in lines))


def read(path) -> list[int]:
    return [line_of(raw) for raw in path.read_bytes().splitlines()]


def test_lines_are_put_in_the_inputs_order(tmp_path):
    path = tmp_path / "out.jsonl"
    write(path, [3, 1, None, 2])
    assert ordered.rewrite_in_order(path, line_of) == 0
    assert read(path) == [1, 2, 3] and path.read_bytes().endswith(b"\n")


def test_a_file_in_order_is_not_written_again(tmp_path):
    path = tmp_path / "out.jsonl"
    write(path, [1, 2, 3])
    inode = path.stat().st_ino
    ordered.rewrite_in_order(path, line_of)
    assert path.stat().st_ino == inode


def test_rows_can_be_taken_out(tmp_path):
    path = tmp_path / "out.jsonl"
    write(path, [2, 1, 3])
    assert ordered.rewrite_in_order(path, line_of, keep=lambda raw: line_of(raw) != 2) == 1
    assert read(path) == [1, 3]


def test_a_failed_write_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "out.jsonl"
    write(path, [2, 1])
    before = path.read_bytes()

    def full(handle, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ordered, "write_all", full)
    with pytest.raises(TrajectoryError) as raised:
        ordered.rewrite_in_order(path, line_of)
    assert "the disk is full" in raised.value.one_line() and "every row in it" in raised.value.one_line()
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]
