"""The reward hook every face shares (session/rewards/): what the hook sees, what the step
gives, what the trajectory keeps, and how a broken reward fails (never as a silent 0.0)."""

from __future__ import annotations

import json
import math

import pytest

from agentworld_local.env import make
from agentworld_local.errors import AwlError, InputError
from agentworld_local.session.rewards import EpisodeSoFar, Reward, reward_hook
from agentworld_local.testing.answers import ANSWERS
from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import REPO, assert_one_line_error, awl, awl_env, scripted_model
from tests.serve.helpers import served
from tests.serve.test_serve_http import scripted


def env_with(tmp_path, reward, **options):
    return make("terminal", model=scripted_model(tmp_path, *(a.raw for a in ANSWERS)), out_dir=tmp_path,
                reward=reward, **{"reveal_simulator": True, **options})


def test_a_python_reward_sees_the_episode_so_far_and_its_value_is_the_steps_and_saved_beside_the_turn(tmp_path):
    seen: list[EpisodeSoFar] = []

    def progress(episode: EpisodeSoFar) -> float:
        seen.append(episode)
        return 1.0 if episode.terminated else 0.25 * len(episode.turns)

    with env_with(tmp_path, progress, task="List the files") as env:
        _, info = env.reset(seed=3)
        first = env.step("ls")
        last = env.step("[]", final=True)
    assert (first[1], last[1]) == (0.25, 1.0)
    assert [(len(e.turns), e.terminated, e.final, e.task) for e in seen] == [
        (1, False, False, "List the files"), (2, True, True, "List the files")]
    assert seen[1].last.action == "[]" and seen[0].initial_state == seen[1].initial_state
    assert first[4]["reward_source"] == last[4]["reward_source"] == f"python:{__name__}.{progress.__qualname__}"
    trajectory = read_trajectory(info["trajectory"])
    assert [(line["id"], line["value"]) for line in trajectory.rewards] == [(1, 0.25), (2, 1.0)]
    assert trajectory.warnings == []


def test_without_a_reward_the_step_gives_zero_and_the_file_holds_no_reward_line(tmp_path):
    with env_with(tmp_path, None) as env:
        _, info = env.reset()
        observation, reward, *_ , step_info = env.step("ls")
    assert reward == 0.0 and "reward_source" not in step_info
    assert read_trajectory(info["trajectory"]).rewards == []


def test_a_reward_with_a_verdict_keeps_it_in_the_file_and_the_info(tmp_path):
    def judged(episode):
        return Reward(0.5, "my-grader", {"reason": "half done"})

    with env_with(tmp_path, judged) as env:
        _, info = env.reset()
        step_info = env.step("ls")[4]
    assert step_info["verdict"] == {"reason": "half done"} and step_info["reward_source"] == "my-grader"
    assert read_trajectory(info["trajectory"]).rewards[0]["verdict"] == {"reason": "half done"}


@pytest.mark.parametrize("broken, fragment", [
    (lambda episode: 1 / 0, "ZeroDivisionError"),
    (lambda episode: math.nan, "nan"),
    (lambda episode: "1.0", "not a finite number"),
])
def test_a_broken_reward_fails_the_step_loudly_and_the_turn_stays_saved(tmp_path, broken, fragment):
    with env_with(tmp_path, broken) as env:
        _, info = env.reset()
        with pytest.raises(AwlError) as failure:
            env.step("ls")
    assert fragment in failure.value.message and "turn 1" in failure.value.message
    trajectory = read_trajectory(info["trajectory"])
    assert [turn.action for turn in trajectory.turns] == ["ls"] and trajectory.rewards == []


def test_a_reward_named_by_text_is_imported_and_mistakes_are_one_line_errors():
    hook = reward_hook("json:dumps")
    assert hook is not None and hook.name == "python:json.dumps"
    assert reward_hook(None) is None and reward_hook("none") is None
    for spec, fragment in (("nope_module:x", "Cannot import"), ("json:nothing_here", "has no `nothing_here`"),
                           ("garbage", "Unknown reward"), (3, "not int")):
        with pytest.raises(InputError) as error:
            reward_hook(spec)
        assert fragment in error.value.message


def test_awl_serve_gives_its_reward_to_sessions_unless_one_turns_it_off(tmp_path):
    def two(episode):
        return 2.0

    with served(tmp_path, scripted(), reward=two) as client:
        rewarded = client.post("/sessions", json={"domain": "terminal"}).json()["id"]
        plain = client.post("/sessions", json={"domain": "terminal", "reward": False}).json()["id"]
        step = client.post(f"/sessions/{rewarded}/step", json={"action": "ls"}).json()
        assert (step["reward"], step["reward_source"]) == (2.0, f"python:{__name__}.{two.__qualname__}")
        assert client.post(f"/sessions/{plain}/step", json={"action": "ls"}).json()["reward"] == 0.0
    with served(tmp_path / "none", scripted()) as client:
        asked = client.post("/sessions", json={"domain": "terminal", "reward": True})
        assert asked.status_code == 400 and "gives no reward" in asked.json()["error"]
        sid = client.post("/sessions", json={"domain": "terminal"}).json()["id"]
        assert client.post(f"/sessions/{sid}/step", json={"action": "ls"}).json()["reward"] == 0.0


def test_awl_run_reward_shows_each_turns_reward_and_json_carries_it(tmp_path):
    (tmp_path / "my_rewards.py").write_text("def done(episode):\n    return 1.0 if episode.terminated else 0.0\n")
    model = scripted_model(tmp_path, *(a.raw for a in ANSWERS))
    env = {"AWL_HOME": str(tmp_path / "home"), "PYTHONPATH": f"{REPO}:{tmp_path}"}
    import os

    env = {**os.environ, **env}
    shown = awl("run", "-m", model, "--reward", "my_rewards:done", "--out", str(tmp_path / "a.jsonl"),
                home=tmp_path, stdin="ls\n[]\n", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "── reward 0 (python:my_rewards.done)" in shown.stderr and "── reward 1 (python:my_rewards.done)" in shown.stderr
    as_json = awl("run", "-m", model, "--reward", "my_rewards:done", "--json", "--out", str(tmp_path / "b.jsonl"),
                  home=tmp_path, stdin="ls\n[]\n", env=env)
    rewards = [event for event in map(json.loads, as_json.stdout.splitlines()) if event["event"] == "reward"]
    assert [(event["turn"], event["value"]) for event in rewards] == [(1, 0.0), (2, 1.0)]
    bad = awl("run", "-m", model, "--reward", "my_rewards:missing", home=tmp_path, stdin="ls\n", env=env)
    assert bad.returncode == 2 and "has no `missing`" in bad.stderr and "Traceback" not in bad.stderr


def test_a_step_marked_final_over_http_is_the_one_an_episode_reward_judges(tmp_path):
    seen = []

    def judged(episode):
        seen.append((len(episode.turns), episode.final))
        return 1.0 if episode.ended else 0.0

    with served(tmp_path, scripted(), reward=judged) as client:
        sid = client.post("/sessions", json={"domain": "terminal"}).json()["id"]
        assert client.post(f"/sessions/{sid}/step", json={"action": "ls"}).json()["reward"] == 0.0
        assert client.post(f"/sessions/{sid}/step", json={"action": "pwd", "final": True}).json()["reward"] == 1.0
    assert seen == [(1, False), (2, True)]


def test_the_vector_env_gives_each_sub_envs_reward_and_its_last_step_is_final(tmp_path):
    import gymnasium

    import agentworld_local.env.gym  # noqa: F401 - registers the ids

    finals = []

    def reward(episode):
        finals.append(episode.final)
        return 0.5 if not episode.final else 2.0

    with served(tmp_path, scripted(), reward=reward) as client:
        env = gymnasium.make_vec("agentworld/Terminal-v0", num_envs=2, base_url=str(client.base_url),
                                 max_episode_steps=2)
        env.reset(seed=1)
        first = env.step(("ls", "pwd"))
        second = env.step(("ls", "pwd"))
        env.close()
    assert list(first[1]) == [0.5, 0.5] and list(second[1]) == [2.0, 2.0] and second[3].all()
    assert sorted(finals) == [False, False, True, True]


def test_awl_run_with_a_reward_module_that_exits_on_import_is_one_error_line_not_its_exit_code(tmp_path):
    (tmp_path / "exiting_rewards.py").write_text("import sys\nsys.exit(7)\n\ndef done(episode):\n    return 1.0\n")
    model = scripted_model(tmp_path, *(a.raw for a in ANSWERS))
    env = {**awl_env(tmp_path / "home"), "PYTHONPATH": f"{REPO}:{tmp_path}"}
    shown = awl("run", "-m", model, "--reward", "exiting_rewards:done", "--out", str(tmp_path / "a.jsonl"),
                home=tmp_path, stdin="ls\n", env=env)
    assert_one_line_error(shown, "exiting_rewards:done", "SystemExit: 7")
    assert not (tmp_path / "a.jsonl").exists()
