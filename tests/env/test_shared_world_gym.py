"""Shared worlds through the Python faces: `make(..., shared_world=NAME)` (SimulatedEnv and
Gymnasium), a reset's `options={"shared_world": NAME}`, the vector env and the TRL adapter over
`awl serve`. Envs of one world that reset with the same seed meet byte-identical observations for
the same actions though their scripted models would answer otherwise; an env outside the world
gets its model's own. A bad name is the one InputError every face says, before any model loads
or session opens, and never opens a path."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import agentworld_local
from agentworld_local.errors import InputError
from agentworld_local.testing import ScriptedBackend
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.worlds.names import NAME_RULE
from tests.serve.helpers import served

NOT_A_NAME = f"is not a shared world name: a name is {NAME_RULE}."
HOSTILE = ["../x", "../../etc/passwd", "/etc", "C:x", "C:\\Windows", "a/b", ".hidden", "x" * 10_240, "", " ", "w\ud800",
           5, 1.5, True, ["w"], {"name": "w"}]


def said(text: str) -> str:
    return f"<think>\nThe agent looks at {text}.\n</think>\n<predicted_observation>\n{text}\n</predicted_observation>"


class Counting(ScriptedBackend):
    """A model that answers differently on every call (`prefix-0`, `prefix-1`...); `loaded`
    says whether anything ever asked it for a turn."""

    def __init__(self, prefix: str, name: str = "world-model") -> None:
        super().__init__([said(f"{prefix}-{index}") for index in range(12)], name=name)


@pytest.fixture
def worlds(monkeypatch, tmp_path) -> Path:
    folder = tmp_path / "worlds"
    monkeypatch.setenv("AWL_WORLDS_DIR", str(folder))
    return folder


def world_names(worlds: Path) -> list[str]:
    return sorted(path.name for path in worlds.iterdir()) if worlds.exists() else []


ACTIONS = ["ls -la", "cat README.md", "pwd"]


def test_make_envs_of_one_world_meet_the_same_observations(tmp_path, worlds):
    first_model, second_model, outside_model = Counting("A"), Counting("B"), Counting("C")
    runs = []
    for model, world, reveal in ((first_model, "env-world", False), (second_model, "env-world", True),
                                 (outside_model, None, False)):
        with agentworld_local.make("agentworld/Terminal-v0", backend=model, out_dir=tmp_path / "out",
                                   shared_world=world, reveal_simulator=reveal) as env:
            env.reset(seed=11)
            runs.append([env.step(action) for action in ACTIONS])
    observed = [[step[0] for step in run] for run in runs]
    assert observed[0] == observed[1] == ["A-0", "A-1", "A-2"] and observed[2] == ["C-0", "C-1", "C-2"]
    assert second_model.calls == 0  # every turn of the second env was the world's
    # The agent's view says nothing of the world; with reveal_simulator=True info says where it came from.
    assert all(set(step[4]) == {"turn", "cut_short"} for step in runs[0])
    assert [step[4]["world"] for step in runs[1]] == [{"name": "env-world", "from": "store"}] * 3
    assert world_names(worlds) == ["env-world"]


def test_gymnasium_make_and_a_resets_options_join_a_world(tmp_path, worlds):
    gymnasium = pytest.importorskip("gymnasium")
    import agentworld_local.env.gym  # noqa: F401 - registers the ids

    made = gymnasium.make("agentworld/Terminal-v0", backend=Counting("A"), out_dir=tmp_path / "a", shared_world="gym-1")
    other = gymnasium.make("agentworld/Terminal-v0", backend=Counting("B"), out_dir=tmp_path / "b")
    try:
        made.reset(seed=5)
        first = [made.step(action)[0] for action in ACTIONS]
        other.reset(seed=5, options={"shared_world": "gym-1"})  # joined for this episode only
        joined = [other.step(action)[0] for action in ACTIONS]
        other.reset(seed=5)  # the next episode is the env's own again
        own = [other.step(action)[0] for action in ACTIONS]
        made.reset(seed=5, options={"shared_world": None})  # None: the env's own world, not none
        again = [made.step(action)[0] for action in ACTIONS]
        path = other.unwrapped.world.trajectory
    finally:
        made.close()
        other.close()
    assert first == joined == again == ["A-0", "A-1", "A-2"]
    assert own == ["B-0", "B-1", "B-2"]
    assert "world" not in read_trajectory(path).current_branch()[0].extra  # its own episode: no world marks


@pytest.mark.parametrize("value", HOSTILE, ids=lambda value: repr(value)[:20])
def test_a_bad_name_is_one_line_before_anything_loads_or_opens(tmp_path, worlds, value):
    gymnasium = pytest.importorskip("gymnasium")
    import agentworld_local.env.gym  # noqa: F401 - registers the ids

    model = Counting("A")
    with pytest.raises(InputError, match=re.escape(NOT_A_NAME)):
        agentworld_local.make("terminal", backend=model, out_dir=tmp_path / "out", shared_world=value)
    with pytest.raises(InputError) as raised:
        gymnasium.make("agentworld/Terminal-v0", backend=model, out_dir=tmp_path / "out", shared_world=value)
    assert NOT_A_NAME in raised.value.message and "\n" not in raised.value.one_line()
    with agentworld_local.make("terminal", backend=model, out_dir=tmp_path / "out") as env:
        env.reset(seed=1)
        with pytest.raises(InputError) as raised:
            env.reset(seed=1, options={"shared_world": value})
        assert NOT_A_NAME in raised.value.message
        assert env.step("ls")[0] == "A-0"  # the episode it had goes on
    assert model.calls == 1 and world_names(worlds) == []
    assert not (tmp_path / "x").exists() and not (tmp_path.parent / "x").exists()


def test_a_served_turn_never_runs_anything_on_the_host(tmp_path, worlds, monkeypatch):
    """The sandbox never executes an agent action, a turn its world serves included."""
    import os
    import subprocess

    def forbidden(*args, **kwargs):
        raise AssertionError(f"the sandbox tried to execute something on the host: {args!r}")

    victim = tmp_path / "keep.txt"
    victim.write_text("kept", encoding="utf-8")
    created = tmp_path / "created-by-agent"
    actions = [f"touch {created}", f"rm -f {victim}", f"echo changed > {victim}",
               json.dumps([{"keystrokes": f"python3 -c \"open('{created}.py', 'w')\"\n", "duration": 1}])]
    for name in ("system", "popen", "execv", "execve", "execvp", "spawnv", "posix_spawn", "fork"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, forbidden)
    monkeypatch.setattr(subprocess, "Popen", forbidden)
    observed, models = [], [Counting("A"), Counting("B")]
    for model in models:
        with agentworld_local.make("terminal", backend=model, out_dir=tmp_path / "out", shared_world="safe",
                                   reveal_simulator=True) as env:
            env.reset(seed=2)
            observed.append([env.step(action) for action in actions])
    assert [step[0] for step in observed[1]] == [step[0] for step in observed[0]] == ["A-0", "A-1", "A-2", "A-3"]
    assert models[1].calls == 0 and all(step[4]["world"]["from"] == "store" for step in observed[1])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["keep.txt", "out", "worlds"]
    assert victim.read_text(encoding="utf-8") == "kept"


# -- over awl serve: the vector env and the TRL adapter ---------------------------------------


def test_the_vector_env_puts_every_sub_env_in_the_world(tmp_path, worlds):
    pytest.importorskip("gymnasium")
    from agentworld_local.env.gym_vector import AgentWorldVectorEnv

    model = Counting("M")
    with served(tmp_path / "sessions", model, reveal_simulator=True) as client:
        env = AgentWorldVectorEnv(2, base_url=str(client.base_url), shared_world="vec-1", reveal_simulator=True)
        outside = AgentWorldVectorEnv(1, base_url=str(client.base_url))
        try:
            env.reset(seed=[4, 4])  # one seed for the group: one world prefix
            outside.reset(seed=[4])
            steps = []
            for action in ACTIONS[:2]:
                steps.append(env.step([action, action]))
                steps.append(outside.step([action]))
            for value in HOSTILE[:3]:
                with pytest.raises(InputError, match="is not a shared world name"):
                    env.reset(seed=[4, 4], options={"shared_world": value})
        finally:
            env.close()
            outside.close()
        for value in (*HOSTILE[:8], 5):
            with pytest.raises(InputError, match="is not a shared world name"):
                AgentWorldVectorEnv(1, base_url=str(client.base_url), shared_world=value)
    grouped, alone = [step[0] for step in steps[0::2]], [step[0] for step in steps[1::2]]
    assert [tuple(item) for item in grouped] == [("M-0", "M-0"), ("M-2", "M-2")]
    assert [tuple(item) for item in alone] == [("M-1",), ("M-3",)] and model.calls == 4
    for step in steps[0::2]:  # one sub-env's turn was predicted, the other's the world's (Gymnasium batches a dict)
        marks = step[4]["world"]
        assert set(marks["name"]) == {"vec-1"} and sorted(marks["from"]) == ["model", "store"]
    assert world_names(worlds) == ["vec-1"]


def test_trl_environments_share_the_world_the_trainer_names_once(tmp_path, worlds):
    from agentworld_local.env.trl import close_environments, environment_factory

    model = Counting("M")
    with served(tmp_path / "sessions", model) as client:
        for value in HOSTILE[:8]:
            with pytest.raises(InputError, match="is not a shared world name"):
                environment_factory("terminal", base_url=str(client.base_url), shared_world=value)
        Env = environment_factory("terminal", base_url=str(client.base_url), shared_world="grpo-1", seed=3)
        Outside = environment_factory("terminal", base_url=str(client.base_url), seed=3)
        try:
            rollouts = []
            for cls in (Env, Env, Outside):
                rollout = cls()
                rollout.reset(prompt=[{"role": "user", "content": "look around"}])
                rollouts.append([rollout.run_shell_command(command=action) for action in ACTIONS[:2]])
        finally:
            close_environments(Env)
            close_environments(Outside)
    assert rollouts[0] == rollouts[1] == ["M-0", "M-1"] and rollouts[2] == ["M-2", "M-3"]
    assert world_names(worlds) == ["grpo-1"]
