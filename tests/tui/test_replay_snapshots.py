"""Snapshots of the replay screen (pytest-textual-snapshot), from the bundled examples: the
same files give the same screens. Update after an intended change with `--snapshot-update`
and look at the new SVGs before committing them."""

from __future__ import annotations

from agentworld_local.examples import pick_example
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.tui.replay import ReplayApp

SIZE = (120, 36)


def app_for(domain: str, **options) -> ReplayApp:
    return ReplayApp(read_trajectory(pick_example(domain).path), **options)


def test_terminal_replay_at_the_start(snap_compare):
    assert snap_compare(app_for("terminal"), terminal_size=SIZE)


def test_terminal_replay_after_three_steps_with_thinking_open(snap_compare):
    assert snap_compare(app_for("terminal", show_thinking=True), press=["right", "right", "right"], terminal_size=SIZE)


def test_web_replay_on_the_undone_branch(snap_compare):
    assert snap_compare(app_for("web"), press=["right", "b"], terminal_size=SIZE)


def test_android_replay_last_turn(snap_compare):
    assert snap_compare(app_for("android", turn=4), terminal_size=SIZE)
