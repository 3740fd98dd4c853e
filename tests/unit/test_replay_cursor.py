"""What a replay means, without any face: branches, the cursor a TUI replay moves, the pace."""

from __future__ import annotations

import pytest

from agentworld_local.errors import TrajectoryError
from agentworld_local.examples import pick_example
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.trajectory.replay import (
    MAX_TURN_S,
    MIN_TURN_S,
    SPEEDS,
    ReplayCursor,
    branches,
    replay_turns,
    turn_pause,
)
from agentworld_local.trajectory.schema import TurnRecord


@pytest.fixture(scope="module")
def web():
    return read_trajectory(pick_example("web").path)  # click 67, undo, click 72, click 107, click 111


def test_branches_current_first_then_the_undone_one(web):
    found = branches(web)
    assert [b.current for b in found] == [True, False]
    assert [t.action for t in found[0].turns] == ["click 72", "click 107", "click 111"]
    assert [t.action for t in found[1].turns] == ["click 67"]
    assert found[1].leaves_at == 1 and "undone branch from turn 1" in found[1].describe()


def test_cursor_steps_jumps_and_shows_the_state(web):
    cursor = ReplayCursor(web)
    assert cursor.position == 0 and cursor.state() == web.header.initial_state
    assert cursor.step() and cursor.record.action == "click 72"
    assert cursor.state() == cursor.record.observation
    assert cursor.step(-5) and cursor.position == 0  # clamped at the initial state
    cursor.jump(99)
    assert cursor.position == 3 and cursor.at_end


def test_playing_runs_to_the_end_and_stops(web):
    cursor = ReplayCursor(web)
    assert cursor.toggle_play()
    beats = 0
    while cursor.tick():
        beats += 1
    assert cursor.at_end and not cursor.playing and beats == 2  # the third beat reaches the end
    assert cursor.toggle_play() and cursor.position == 0  # play again from the start


def test_switching_branch_keeps_the_position_within_the_branch(web):
    cursor = ReplayCursor(web)
    cursor.jump(3)
    assert not cursor.switch_branch().current
    assert cursor.position == 1 and cursor.record.action == "click 67"
    assert cursor.switch_branch().current and cursor.position == 1


def test_speed_steps_through_the_list(web):
    cursor = ReplayCursor(web)
    assert cursor.change_speed(1) == 2.0
    assert cursor.change_speed(100) == SPEEDS[-1]
    assert cursor.change_speed(-100) == SPEEDS[0]


def test_turn_pause_follows_recorded_time_within_readable_bounds():
    assert turn_pause(TurnRecord("ls", timings={"total_s": 2.0}), 2.0) == pytest.approx(1.0)
    assert turn_pause(TurnRecord("ls", timings={"total_s": 120.0})) == MAX_TURN_S
    assert turn_pause(TurnRecord("ls", timings={"total_s": 0.01})) == MIN_TURN_S
    assert turn_pause(TurnRecord("ls", timings={"total_s": True})) > 0  # a damaged value is ignored


def test_replay_turns_range_error_names_the_range(web):
    with pytest.raises(TrajectoryError) as caught:
        replay_turns(web, 4)
    assert "from 1 to 3" in caught.value.one_line()
    assert replay_turns(web, 2)[0].action == "click 107"
