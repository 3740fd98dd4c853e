"""The bundled example sessions: one or more per domain, intact, replayable, and marked as
hand-written (never mistaken for model output)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from agentworld_local.domains import domain_names
from agentworld_local.errors import InputError
from agentworld_local.examples import DEFAULT_EXAMPLE, bundled_examples, pick_example
from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import awl

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = bundled_examples()


def test_every_domain_has_an_example():
    assert {e.domain for e in EXAMPLES} >= set(domain_names())


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_example_reads_whole_and_is_marked_hand_written(example):
    traj = read_trajectory(example.path)
    assert traj.warnings == [] and traj.damaged_line is None
    assert traj.header.hand_written is True
    assert traj.header.model is None  # no model produced it
    assert "not model output" in traj.header.note
    branch = traj.current_branch()
    assert 3 <= len(branch) <= 5
    assert all(turn.observation.strip() for turn in branch)
    assert traj.header.domain == example.domain and example.title


def test_only_session_files_are_examples():
    """The script that makes the examples sits next to them and is never offered as one."""
    assert (REPO / "assets" / "examples" / "make_examples.py").is_file()
    assert EXAMPLES and all(e.path.suffix == ".jsonl" for e in EXAMPLES)


def test_one_example_has_an_undo_branch():
    assert any(len(read_trajectory(e.path).turns) > len(read_trajectory(e.path).current_branch()) for e in EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_example_replays(example, tmp_path):
    result = awl("replay", str(example.path), "--plain", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "hand-written example, not model output" in result.stdout
    last = read_trajectory(example.path).current_branch()[-1]
    assert f"== Turn {last.turn}" in result.stdout
    assert last.observation.strip().splitlines()[-1].strip() in result.stdout


def test_pick_example_by_domain_and_default():
    assert pick_example(None).name == DEFAULT_EXAMPLE
    assert pick_example("web").domain == "web"
    assert pick_example(" Android ").domain == "android"


def test_pick_example_unknown_domain_is_a_clear_error():
    with pytest.raises(InputError) as caught:
        pick_example("spreadsheet")
    assert "spreadsheet" in str(caught.value) and "terminal" in caught.value.hint


def _content(path: Path) -> list:
    """What the example says (setup, actions, thinking, observations, branches), without the
    prompts: a change to a domain's prompt wording does not make an example stale."""
    traj = read_trajectory(path)
    h = traj.header
    return [(h.domain, h.task, h.initial_state, h.scenario, h.hand_written, h.note)] + [
        (t.id, t.parent, t.turn, t.action, t.action_payload, t.thinking, t.observation) for t in traj.turns
    ] + [traj.head]


def test_generated_examples_are_up_to_date(tmp_path):
    """The files hold what assets/examples/make_examples.py writes through the real session path
    (re-run it after changing an example or a domain's action forms)."""
    spec = importlib.util.spec_from_file_location("make_examples", REPO / "assets" / "examples" / "make_examples.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    for example in module.EXAMPLES:
        fresh = tmp_path / f"{example.name}.jsonl"
        module.build(example, fresh)
        assert _content(fresh) == _content(REPO / "assets" / "examples" / fresh.name), example.name
