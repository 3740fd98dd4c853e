"""Gymnasium episodes: the id's step limit (TimeLimit's `truncated`), an answer cut at its
token limit (`info["cut_short"]`, not `truncated`), and the run folder the episodes go to."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

gymnasium = pytest.importorskip("gymnasium")

from agentworld_local.agent.episode import DEFAULT_STEPS  # noqa: E402
from agentworld_local.env import env_ids  # noqa: E402
from agentworld_local.env.gym import MAX_EPISODE_STEPS, AgentWorldEnv  # noqa: E402  (registers the ids)
from agentworld_local.paths import sessions_dir  # noqa: E402
from agentworld_local.testing.answers import answer, write_answer_file  # noqa: E402
from agentworld_local.trajectory.reader import read_trajectory  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WHOLE = ["thinking_then_tags", "marker_form", "tags_split_across_chunks"]


def scripted(tmp_path: Path, names: list[str]) -> str:
    return f"scripted:{write_answer_file(tmp_path / 'answers.json', [answer(name) for name in names])}"


def random_episode(env, seed: int = 0, most: int = 100) -> tuple[int, bool, bool, dict]:
    """A random agent (the action space's samples) until the episode ends, or `most` steps:
    (steps, terminated, truncated, info)."""
    env.reset(seed=seed)
    env.action_space.seed(seed)
    for steps in range(1, most + 1):
        _, _, terminated, truncated, info = env.step(env.action_space.sample())
        if terminated or truncated:
            break
    return steps, terminated, truncated, info


def test_every_id_has_the_agent_s_default_step_limit():
    assert MAX_EPISODE_STEPS == DEFAULT_STEPS  # the same limit as `awl agent`'s
    assert {gymnasium.spec(entry.id).max_episode_steps for entry in env_ids()} == {DEFAULT_STEPS}


@pytest.mark.parametrize("limit", [None, 3])
def test_a_random_agent_s_episode_ends_truncated_at_the_step_limit(tmp_path, limit):
    options = {} if limit is None else {"max_episode_steps": limit}
    env = gymnasium.make("agentworld/Terminal-v0", model=scripted(tmp_path, WHOLE), out_dir=tmp_path / "out", reveal_simulator=True, **options)
    try:
        steps, terminated, truncated, info = random_episode(env)
        assert (steps, terminated, truncated) == (limit or DEFAULT_STEPS, False, True)
        assert info["turn"] == steps and info["cut_short"] is False
    finally:
        env.close()
    assert len(read_trajectory(Path(info["trajectory"])).turns) == steps


def test_an_answer_cut_at_its_token_limit_is_cut_short_not_truncated(tmp_path):
    """In Gymnasium `truncated` is a time or step limit; the model's token limit is info's."""
    cut = answer("unclosed_tag_at_length")
    env = gymnasium.make("agentworld/Terminal-v0", model=scripted(tmp_path, ["thinking_then_tags", cut.name]), reveal_simulator=True,
                         out_dir=tmp_path / "out", think="full")
    try:
        env.reset(seed=1)
        _, _, terminated, truncated, info = env.step("ls -la")
        assert (terminated, truncated, info["cut_short"], info["finish"]) == (False, False, False, "stop")
        observation, _, terminated, truncated, info = env.step("make")
        assert (terminated, truncated, info["cut_short"], info["finish"]) == (False, False, True, "length")
        assert observation == cut.observation
        assert env.step("ls")[3] is False  # the episode goes on after a cut answer
    finally:
        env.close()


def test_episodes_go_to_a_run_folder_of_their_own_unless_out_dir_says(tmp_path, monkeypatch):
    monkeypatch.setenv("AWL_HOME", str(tmp_path / "home"))
    model = scripted(tmp_path, WHOLE)
    first = gymnasium.make("agentworld/Terminal-v0", model=model, reveal_simulator=True)
    second = gymnasium.make("agentworld/DiskFullServer-v0", model=model, out_dir=None, reveal_simulator=True)
    try:
        _, info = first.reset(seed=1)
        run_dir = Path(info["run_dir"])
        assert run_dir.parent == sessions_dir() / "gym" and run_dir.name.endswith(f"-{os.getpid()}")
        assert first.unwrapped.run_dir == run_dir
        first.step("ls")
        _, other = second.reset(seed=2)
        second.step("df -h")
        assert Path(other["run_dir"]) == run_dir  # one folder for the program's episodes
    finally:
        first.close()
        second.close()
    assert sorted(path.parent for path in run_dir.glob("*.jsonl")) == [run_dir, run_dir]
    assert not list(sessions_dir().glob("*.jsonl"))  # nothing among the user's own sessions
    chosen = gymnasium.make("agentworld/Terminal-v0", model=model, out_dir=tmp_path / "mine", reveal_simulator=True)
    try:
        _, info = chosen.reset()
        chosen.step("ls")
    finally:
        chosen.close()
    assert info["run_dir"] == str(tmp_path / "mine") and Path(info["trajectory"]).parent == tmp_path / "mine"


def test_a_program_that_saved_no_episode_leaves_no_run_folder(tmp_path):
    home = tmp_path / "home"
    code = ("import gymnasium, agentworld_local.env.gym\n"
            f"env = gymnasium.make('agentworld/Terminal-v0', model={scripted(tmp_path, WHOLE)!r})\n"
            "env.reset(seed=1); print(env.unwrapped.run_dir); env.close()\n")  # no turn: no file
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "AWL_HOME": str(home)},
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    run_dir = Path(result.stdout.strip())
    assert run_dir.parent.parent == home / "data" / "sessions" and not run_dir.exists()


def test_the_step_the_time_limit_cuts_is_final_for_the_reward_and_a_reset_starts_counting_again(tmp_path):
    """An episode-end reward (a judge) is asked on the step TimeLimit truncates, as in the vector env."""
    finals: list[bool] = []

    def judge(episode):
        finals.append(episode.final)
        return 1.0 if episode.ended else 0.0

    env = gymnasium.make("agentworld/Terminal-v0", model=scripted(tmp_path, WHOLE), out_dir=tmp_path / "out",
                         reward=judge, max_episode_steps=3)
    try:
        for seed in (1, 2):
            env.reset(seed=seed)
            steps = [env.step("ls") for _ in range(3)]
            assert [(reward, truncated) for _, reward, _, truncated, _ in steps] == [
                (0.0, False), (0.0, False), (1.0, True)]
    finally:
        env.close()
    assert finals == [False, False, True] * 2


def test_without_a_step_limit_no_step_is_final(tmp_path):
    finals: list[bool] = []

    def judge(episode):
        finals.append(episode.final)
        return 0.0

    env = gymnasium.make("agentworld/Terminal-v0", model=scripted(tmp_path, WHOLE), out_dir=tmp_path / "out",
                         reward=judge, max_episode_steps=-1)
    try:
        env.reset(seed=1)
        for _ in range(DEFAULT_STEPS + 1):
            assert env.step("ls")[3] is False
    finally:
        env.close()
    assert finals == [False] * (DEFAULT_STEPS + 1)


def test_a_time_limit_the_user_wraps_around_the_env_also_marks_its_last_step_final(tmp_path):
    finals: list[bool] = []

    def judge(episode):
        finals.append(episode.final)
        return 0.0

    env = gymnasium.wrappers.TimeLimit(AgentWorldEnv(model=scripted(tmp_path, WHOLE), out_dir=tmp_path / "out",
                                                     reward=judge), max_episode_steps=2)
    try:
        env.reset(seed=1)
        assert [env.step("ls")[3] for _ in range(2)] == [False, True]
        env.unwrapped.step("pwd")  # stepped past the wrapper: no limit applies
    finally:
        env.close()
    assert finals == [False, True, False]
