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
    with make("terminal", model=scripted_model(tmp_path, *(a.raw for a in ANSWERS)), out_dir=tmp_path, reveal_simulator=True) as env:
        plain, _ = env.reset(seed=1)
        observation, info = env.reset(seed=2, options={"scenario": "disk-full-server"})
        header = read_trajectory(info["trajectory"]).header
        assert header.scenario["name"] == "disk-full-server" and header.task.startswith("The API returns 500 errors")
        assert info["task"] == header.task and observation == header.initial_state != plain
        with pytest.raises(InputError) as error:
            env.reset(options={"scenario": "alarm-clock"})
        assert "android world" in error.value.message and "same domain" in error.value.hint


def test_a_reset_names_a_scenario_by_name_only_never_a_file(tmp_path, monkeypatch):
    """SimulatedEnv's reset takes the one rule of every face (scenarios/by_name.py): a path, a
    name with a separator or a file of the working directory is refused with the same line, and
    a scenario-shaped file there is never loaded."""
    from agentworld_local.scenarios import scenario_by_name

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    planted = ('version = 1\nname = "notes"\ndomain = "terminal"\ntitle = "x"\ntask = "sk-SECRET-TASK"\n'
               'initial_state = "sk-SECRET-STATE"\n')
    for name in ("notes", "notes.toml", "zz-no-such-scenario"):
        (cwd / name).write_text(planted)
    (tmp_path / "notes.toml").write_text(planted)
    names = ["notes", "notes.toml", "./notes.toml", str(cwd / "notes.toml"), "../notes.toml", "zz-no-such-scenario", ".."]
    with make("terminal", model=scripted_model(tmp_path, *(a.raw for a in ANSWERS)), out_dir=tmp_path / "out") as env:
        for name in names:
            with pytest.raises(InputError) as refused:
                env.reset(options={"scenario": name})
            with pytest.raises(InputError) as expected:
                scenario_by_name(name)
            line = refused.value.one_line()
            assert line == expected.value.one_line() and "SECRET" not in line, (name, line)
        observation, info = env.reset(options={"scenario": "disk-full-server"})  # a name still opens
        assert info["task"] == scenario_by_name("disk-full-server").task
    assert not any("SECRET" in path.read_text() for path in (tmp_path / "out").glob("*.jsonl"))
