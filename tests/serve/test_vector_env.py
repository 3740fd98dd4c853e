"""The Gymnasium vector env over `awl serve` (env/gym_vector.py): each sub-env a session on a
real server on 127.0.0.1, the steps of all of them in flight at once."""

from __future__ import annotations

import threading

import pytest

gymnasium = pytest.importorskip("gymnasium")
from agentworld_local.env.gym import AnyText  # noqa: E402 - importing it registers the ids
from agentworld_local.env.gym_vector import AgentWorldVectorEnv  # noqa: E402
from agentworld_local.errors import InputError  # noqa: E402
from agentworld_local.testing import ScriptedBackend  # noqa: E402
from agentworld_local.testing.answers import ANSWERS, answer  # noqa: E402
from agentworld_local.trajectory.reader import read_trajectory  # noqa: E402
from tests.serve.helpers import served  # noqa: E402

SHOWN = [item for item in ANSWERS if not item.several_blocks]
#: Answers that end as the model ends a turn (none cut short: no sub-env ends by itself).
WHOLE = [answer(name) for name in ("thinking_then_tags", "marker_form", "tags_split_across_chunks")]


class InFlight:
    """ASGI middleware: the most step requests the server held at once."""

    def __init__(self, app):
        self.app, self.now, self.most, self._lock = app, 0, 0, threading.Lock()

    async def __call__(self, scope, receive, send):
        counted = scope["type"] == "http" and scope["path"].endswith("/step")
        if counted:
            with self._lock:
                self.now += 1
                self.most = max(self.most, self.now)
        try:
            await self.app(scope, receive, send)
        finally:
            if counted:
                with self._lock:
                    self.now -= 1


def vector(client, num_envs: int = 4, env_id: str = "agentworld/Terminal-v0", **options):
    return gymnasium.make_vec(env_id, num_envs=num_envs, base_url=str(client.base_url), think="full",
                              **{"reveal_simulator": True, **options})


def test_make_vec_steps_every_sub_env_at_once_each_in_its_own_session(tmp_path):
    probe: list[InFlight] = []

    def wrap(app):
        probe.append(InFlight(app))
        return probe[0]

    backend = ScriptedBackend([item.scripted(2) for item in WHOLE], delay_s=0.002)
    with served(tmp_path, backend, wrap=wrap) as client:
        env = vector(client)
        assert isinstance(env.unwrapped, AgentWorldVectorEnv) and isinstance(env.single_observation_space, AnyText)
        observations, infos = env.reset(seed=7)
        assert observations == ("user@sandbox:~$ ",) * 4 and list(infos["seed"]) == [7, 8, 9, 10]
        assert env.observation_space.contains(observations)
        sessions = list(infos["session"])
        assert len(set(sessions)) == 4 and sessions == env.unwrapped.sessions
        for step in range(3):
            actions = tuple(f"echo e{index}-t{step}" for index in range(4))
            assert env.action_space.contains(actions)
            observations, rewards, terminated, truncated, infos = env.step(actions)
            assert env.observation_space.contains(observations)
            assert list(rewards) == [0.0] * 4 and not terminated.any() and list(infos["turn"]) == [step + 1] * 4
            for index, sid in enumerate(sessions):
                saved = read_trajectory(tmp_path / f"{sid}.jsonl").current_branch()
                assert saved[-1].action == f"echo e{index}-t{step}" and saved[-1].observation == observations[index]
        env.step(env.action_space.sample())  # what a random agent types is a valid batch
        env.close()
    assert probe[0].most == 4  # the server had every sub-env's step at once
    for index, sid in enumerate(sessions):
        actions = [turn.action for turn in read_trajectory(tmp_path / f"{sid}.jsonl").current_branch()]
        assert actions[:3] == [f"echo e{index}-t{step}" for step in range(3)]


def test_an_ended_sub_env_is_reset_on_the_next_step_and_episode_statistics_count_it(tmp_path):
    """Gymnasium's own vector wrapper reads the autoreset the env declares (next step)."""
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    with served(tmp_path, ScriptedBackend([item.scripted(5) for item in WHOLE])) as client:
        env = RecordEpisodeStatistics(vector(client, num_envs=2))
        _, infos = env.reset(seed=1)
        first = list(infos["session"])
        _, _, terminated, _, infos = env.step(("ls", "[]"))  # `[]` ends the task in the terminal
        assert list(terminated) == [False, True] and list(infos["_episode"]) == [False, True]
        assert infos["episode"]["l"][1] == 1
        observations, _, terminated, _, infos = env.step(("pwd", "ignored: this sub-env resets"))
        assert observations[1] == "user@sandbox:~$ " and not terminated.any()
        assert infos["session"][0] == first[0] and infos["session"][1] != first[1] and infos["turn"][1] == 0
        env.close()
    assert [turn.action for turn in read_trajectory(tmp_path / f"{first[1]}.jsonl").turns] == ["[]"]


def test_an_invalid_action_is_an_observation_and_a_missing_server_is_one_line(tmp_path):
    with served(tmp_path, ScriptedBackend([item.scripted(5) for item in SHOWN])) as client:
        env = vector(client, num_envs=2, env_id="agentworld/Web-v0")
        env.reset(seed=2)
        observations, _, _, _, infos = env.step(("fly(to the moon)", "fly(again)"))
        assert all(text.startswith("Invalid action:") for text in observations)
        assert list(infos["_invalid_action"]) == [True, True]
        env.close()
    with pytest.raises(InputError, match="base_url"):
        gymnasium.make_vec("agentworld/Terminal-v0", num_envs=2)
    with pytest.raises(InputError, match="colour"):
        gymnasium.make_vec("agentworld/Terminal-v0", num_envs=2, base_url="http://127.0.0.1:9", colour="red")


@pytest.mark.slow  # a capacity test on the real llama.cpp path (the slow tier)
def test_make_vec_with_twice_as_many_sub_envs_as_the_models_slots_steps_them_all(tmp_path, qwen_gguf):
    """On the real llama.cpp path: 4 sub-envs over a GGUF with 2 session slots. Beyond the
    capacity a step waits its turn: no sub-env's step fails, every session holds its own turns."""
    from agentworld_local.engine.llama import LlamaBackend

    backend = LlamaBackend(qwen_gguf, n_ctx=4096, gpu_layers=0, parallel=2)
    with served(tmp_path, backend) as client:
        assert client.get("/health").json()["parallel"] == 2
        env = gymnasium.make_vec("agentworld/Terminal-v0", num_envs=4, base_url=str(client.base_url), think="off", reveal_simulator=True,
                                 max_tokens=6, temperature=0.8, max_episode_steps=1)
        _, infos = env.reset(seed=3)
        played: dict[str, str] = {}
        for step in range(4):
            sessions = list(infos["session"])
            actions = tuple(f"echo e{index}-t{step}" for index in range(4))
            _, _, terminated, truncated, infos = env.step(actions)
            if step % 2 == 0:  # a turn: each sub-env's, at its step limit, every answer cut short (max_tokens)
                assert list(infos["turn"]) == [1] * 4 and truncated.all() and infos["cut_short"].all()
                played.update(zip(sessions, actions))
            else:  # Gymnasium's next-step autoreset: new sessions
                assert list(infos["turn"]) == [0] * 4 and not set(infos["session"]) & set(played)
        env.close()
    assert len(played) == 8
    for sid, action in played.items():
        assert [turn.action for turn in read_trajectory(tmp_path / f"{sid}.jsonl").current_branch()] == [action]
