"""The Gymnasium adapter: ids registered, Gymnasium's own check_env, honest text spaces."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

gymnasium = pytest.importorskip("gymnasium")
from gymnasium.utils.env_checker import check_env  # noqa: E402

from agentworld_local.env import SimulatedEnv, env_ids  # noqa: E402
from agentworld_local.env.gym import AgentWorldEnv, AnyText  # noqa: E402  (registers the ids)
from agentworld_local.errors import InputError  # noqa: E402
from agentworld_local.testing.answers import ANSWERS, answer, write_answer_file  # noqa: E402
from agentworld_local.trajectory.reader import read_trajectory  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def answer_file(tmp_path: Path, names: list[str]) -> Path:
    return write_answer_file(tmp_path / "answers.json", [answer(name) for name in names])


@pytest.mark.parametrize("env_id", [entry.id for entry in env_ids()])
def test_gymnasium_s_own_checker_passes_on_every_id(tmp_path, env_id):
    answers = answer_file(tmp_path, ["thinking_then_tags", "ansi_colour_screen", "tags_split_across_chunks"])
    env = gymnasium.make(env_id, model=f"scripted:{answers}", out_dir=tmp_path / "out")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a checker warning is a failure here
            check_env(env.unwrapped)
    finally:
        env.close()


def test_every_id_is_registered_and_makes_the_same_environment_as_agentworld_local_make(tmp_path):
    answers = answer_file(tmp_path, ["thinking_then_tags"])
    for entry in env_ids():
        spec = gymnasium.spec(entry.id)
        assert spec.nondeterministic is True and spec.kwargs == {"env_id": entry.id}
    env = gymnasium.make("agentworld/DiskFullServer-v0", model=f"scripted:{answers}", out_dir=tmp_path / "out",
                         reveal_simulator=True, task="Find what fills the disk")
    try:
        assert isinstance(env.unwrapped, AgentWorldEnv) and isinstance(env.unwrapped.world, SimulatedEnv)
        observation, info = env.reset(seed=3)
        assert info["task"] == "Find what fills the disk" and info["domain"] == "terminal"
        observation, reward, terminated, truncated, info = env.step("du -sh /var/log")
        assert observation == answer("thinking_then_tags").observation
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert set(info) >= {"thinking", "tokens", "timings", "trajectory", "turn", "finish"}
        assert env.step("[]")[2] is True  # the terminal's own way to end the task
    finally:
        env.close()
    saved = read_trajectory(Path(info["trajectory"]))
    assert [turn.action for turn in saved.turns] == ["du -sh /var/log", "[]"]


def test_the_spaces_hold_every_observation_a_world_gives(tmp_path):
    """Screens hold any character (ANSI colours, control bytes, non-ASCII): the observation
    space says so, and the action space's samples are what a random agent would type."""
    answers = [item for item in ANSWERS if not item.several_blocks]
    path = write_answer_file(tmp_path / "answers.json", answers)
    env = gymnasium.make("agentworld/Terminal-v0", model=f"scripted:{path}", out_dir=tmp_path / "out", think="full")
    try:
        observation, _ = env.reset(seed=0)
        assert observation in env.observation_space
        for item in answers:
            observation = env.step("ls")[0]
            assert observation == item.observation and observation in env.observation_space
    finally:
        env.close()
    space = AnyText(100, min_length=1)
    assert "\x1b[31merror\x1b[0m é 日本" in space and "" not in space and "x" * 101 not in space and 3 not in space
    space.seed(1)
    samples = [space.sample() for _ in range(50)]
    assert all(sample in space and len(sample) <= space.sample_length for sample in samples)


def test_ansi_render_shows_the_current_observation(tmp_path):
    answers = answer_file(tmp_path, ["thinking_then_tags"])
    env = gymnasium.make("agentworld/Terminal-v0", model=f"scripted:{answers}", out_dir=tmp_path, render_mode="ansi")
    try:
        start, _ = env.reset()
        assert env.render() == start
        observation = env.step("ls -la")[0]
        assert env.render() == observation
    finally:
        env.close()



@pytest.mark.parametrize("mode", ["human", "rgb_array"])
def test_an_unsupported_render_mode_is_gymnasium_s_own_warning_and_error(tmp_path, mode):
    """gymnasium.make warns of a mode outside metadata["render_modes"]; the env then raises
    gymnasium.error.UnsupportedMode (not awl's InputError), before any model loads."""
    with pytest.raises(gymnasium.error.UnsupportedMode, match=f"render_mode='{mode}'") as raised, \
            pytest.warns(UserWarning, match="not in the possible render_modes"):
        gymnasium.make("agentworld/Terminal-v0", model="scripted:no-such-file.json", out_dir=tmp_path, render_mode=mode)
    assert not isinstance(raised.value, InputError) and "ansi" in str(raised.value)


def test_gymnasium_s_module_form_needs_no_import_of_ours_and_the_core_needs_no_gymnasium(tmp_path):
    """`gymnasium.make("agentworld_local.env.gym:agentworld/Terminal-v0")` in a fresh
    interpreter; and without gymnasium, `agentworld_local.make` gives the same environment."""
    answers = answer_file(tmp_path, ["thinking_then_tags"])
    with_gym = (
        "import gymnasium\n"
        f"env = gymnasium.make('agentworld_local.env.gym:agentworld/Terminal-v0', model='scripted:{answers}', out_dir=r'{tmp_path}')\n"
        "env.reset(seed=1); print(env.step('ls -la')[0].splitlines()[0]); env.close()\n"
    )
    without_gym = (
        "import sys; sys.modules['gymnasium'] = None\n"  # as if the `gym` extra were not installed
        "import agentworld_local\n"
        f"env = agentworld_local.make('agentworld/Terminal-v0', model='scripted:{answers}', out_dir=r'{tmp_path}')\n"
        "env.reset(seed=1); print(env.step('ls -la')[0].splitlines()[0]); env.close()\n"
    )
    for code in (with_gym, without_gym):
        result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "total 12"


def test_check_env_on_the_real_llama_path(tmp_path, qwen_gguf):
    env = gymnasium.make("agentworld/Terminal-v0", model=str(qwen_gguf), out_dir=tmp_path, think="off", max_tokens=8,
                         load_options={"ctx": 4096})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped)
    finally:
        env.close()


def test_the_example_runs_offline_and_saves_its_episode(tmp_path):
    result = subprocess.run([sys.executable, "examples/gym_disk_full.py", "--out-dir", str(tmp_path)], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "terminated=True truncated=False" in result.stdout
    (path,) = tmp_path.glob("*.jsonl")
    saved = read_trajectory(path)
    assert saved.header.scenario["name"] == "disk-full-server" and len(saved.turns) == 4
    assert saved.turns[-1].action == "[]"
