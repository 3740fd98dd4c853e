"""session/resimulate.py: one benchmark row re-simulated as a session file (ground-truth turns,
then the prediction beside the benchmark's answer), on scripted answers."""

from __future__ import annotations

import json
import threading

import pytest

from agentworld_local.agentworldbench.rows import parse_row
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine import events as ev
from agentworld_local.session.resimulate import GROUND_TRUTH, RowResimulation
from agentworld_local.testing.answers import answer
from agentworld_local.engine.scripted import ScriptedBackend
from agentworld_local.trajectory.reader import read_trajectory
from tests.unit.test_agentworldbench import bench_job

LS = answer("thinking_then_tags")


def a_row():
    return parse_row(json.loads(json.dumps(bench_job("mcp", 3))), line=4, source="bench.jsonl")


def test_the_prediction_is_saved_after_the_ground_truth_with_the_benchmark_answer(tmp_path):
    row, out = a_row(), tmp_path / "r.jsonl"
    run = RowResimulation.start(row, tmp_path / "bench.jsonl", ScriptedBackend([LS.scripted()]), SessionSettings(), out=out)
    assert run.ground_truth_turns == 2
    streamed = list(run.predict())
    assert isinstance(streamed[-1], ev.TurnFinished) and streamed[-1].turn == 3
    assert "".join(e.text for e in streamed if isinstance(e, ev.ObservationDelta)) == LS.observation
    saved = read_trajectory(out)
    assert len(saved.turns) == 3 and saved.turns[-1].extra[GROUND_TRUTH] == row.ground_truth
    assert saved.turns[-1].observation == LS.observation == run.record.observation


def test_a_cancelled_prediction_keeps_the_ground_truth_turns(tmp_path):
    out = tmp_path / "r.jsonl"
    run = RowResimulation.start(a_row(), tmp_path / "b.jsonl", ScriptedBackend([LS.scripted()]), SessionSettings(), out=out)
    cancel = threading.Event()
    cancel.set()
    assert isinstance(list(run.predict(cancel))[-1], ev.TurnCancelled)
    assert run.record is None and len(read_trajectory(out).turns) == 2


def test_a_failing_prediction_leaves_no_file_behind(tmp_path):
    class Broken(ScriptedBackend):
        def generate(self, *args, **kwargs):
            raise RuntimeError("the backend broke")
            yield  # pragma: no cover

    out = tmp_path / "r.jsonl"
    run = RowResimulation.start(a_row(), tmp_path / "b.jsonl", Broken([LS.scripted()]), SessionSettings(), out=out)
    with pytest.raises(RuntimeError):
        list(run.predict())
    assert not out.exists()
