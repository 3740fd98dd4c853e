"""A reset may name another world of the same domain: a bundled scenario, with its task,
initial state and controls (what OpenEnv, MCP and TRL resets pass on)."""

from __future__ import annotations

import pytest

from agentworld_local.env import make
from agentworld_local.errors import InputError
from agentworld_local.testing.answers import ANSWERS
from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import scripted_model


def test_a_reset_names_another_scenario_of_the_domain_and_its_file_says_so(tmp_path):
    with make("terminal", model=scripted_model(tmp_path, *(a.raw for a in ANSWERS)), out_dir=tmp_path) as env:
        plain, _ = env.reset(seed=1)
        observation, info = env.reset(seed=2, options={"scenario": "disk-full-server"})
        header = read_trajectory(info["trajectory"]).header
        assert header.scenario["name"] == "disk-full-server" and header.task.startswith("The API returns 500 errors")
        assert info["task"] == header.task and observation == header.initial_state != plain
        with pytest.raises(InputError) as error:
            env.reset(options={"scenario": "alarm-clock"})
        assert "android world" in error.value.message and "same domain" in error.value.hint
