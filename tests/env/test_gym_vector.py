"""Vector envs: Gymnasium's AsyncVectorEnv and make_vec(..., "async") over our env with their
default settings (shared memory on), and the vector env over `awl serve` (env/gym_vector.py):
its step limit, and a failing sub-env's error raised after every sub-env's call ended."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

gymnasium = pytest.importorskip("gymnasium")
from gymnasium.vector import AsyncVectorEnv  # noqa: E402
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory  # noqa: E402

from agentworld_local.env.gym import MAX_OBSERVATION_CHARS, SHARED_TEXT_BYTES, AnyText, run_folder  # noqa: E402
from agentworld_local.errors import InputError  # noqa: E402
from agentworld_local.paths import sessions_dir  # noqa: E402
from agentworld_local.testing import ScriptedBackend  # noqa: E402
from agentworld_local.testing.answers import ANSWERS, answer, write_answer_file  # noqa: E402
from agentworld_local.trajectory.reader import read_trajectory  # noqa: E402
from tests.serve.helpers import served  # noqa: E402

SHOWN = [item for item in ANSWERS if not item.several_blocks]
WHOLE = [answer(name) for name in ("thinking_then_tags", "marker_form", "tags_split_across_chunks")]
#: Any character a screen holds, far past one sub-env's room in shared memory.
LONG = "\x1b[31m错误\x1b[0m user@host é 日本語の画面です。文字化けなし 🙂\x00\t\n" * 1100


def scripted(tmp_path: Path, answers=SHOWN) -> str:
    return f"scripted:{write_answer_file(tmp_path / 'answers.json', answers)}"


def test_async_vector_env_with_its_default_settings_steps_real_observations(tmp_path, monkeypatch):
    """Shared memory on (the default): every observation (ANSI, `@`, non-ASCII) comes back
    as the world gave it, step after step; each worker saves its episodes in a folder of its
    own inside the program's run folder."""
    monkeypatch.setenv("AWL_HOME", str(tmp_path / "home"))  # the workers (forked) inherit it
    model = scripted(tmp_path)
    make = lambda: gymnasium.make("agentworld/Terminal-v0", model=model, think="full", max_episode_steps=-1, reveal_simulator=True)  # noqa: E731
    env = AsyncVectorEnv([make, make])
    try:
        assert env.shared_memory and env.single_observation_space == AnyText(MAX_OBSERVATION_CHARS)
        observations, infos = env.reset(seed=[3, 4])
        assert observations == ("user@sandbox:~$ ",) * 2 and env.observation_space.contains(observations)
        run_dirs = [Path(path) for path in infos["run_dir"]]
        assert run_dirs[0] != run_dirs[1] and {path.parent for path in run_dirs} == {run_folder()}
        assert run_folder().parent == sessions_dir() / "gym"
        for item in SHOWN:
            observations, rewards, terminated, truncated, infos = env.step(("ls", "pwd"))
            assert observations == (item.observation,) * 2, item.name
            assert env.observation_space.contains(observations)
            assert not terminated.any() and not truncated.any() and list(rewards) == [0.0, 0.0]
            assert list(infos["cut_short"]) == [item.finish == "length"] * 2
        files = [Path(path) for path in infos["trajectory"]]
    finally:
        env.close()
    assert [path.parent for path in files] == run_dirs
    for path, action in zip(files, ("ls", "pwd")):
        saved = read_trajectory(path)
        assert [turn.observation for turn in saved.turns] == [item.observation for item in SHOWN]
        assert {turn.action for turn in saved.turns} == {action}


def test_make_vec_async_resets_on_the_step_after_the_limit_and_holds_long_text(tmp_path, monkeypatch):
    """make_vec(..., vectorization_mode="async") with the id's kwargs and a step limit: a
    random agent's episodes end truncated; a starting state longer than a sub-env's shared
    room comes back whole."""
    assert len(LONG.encode("utf-8")) > SHARED_TEXT_BYTES
    monkeypatch.setenv("AWL_HOME", str(tmp_path / "home"))
    env = gymnasium.make_vec("agentworld/Terminal-v0", num_envs=2, vectorization_mode="async", model=scripted(tmp_path, WHOLE),
                             initial_state=LONG, max_episode_steps=2)
    try:
        assert isinstance(env, AsyncVectorEnv)
        observations, infos = env.reset(seed=1)
        assert observations == (LONG, LONG) and env.observation_space.contains(observations)
        env.action_space.seed(1)
        ended = []
        for _ in range(3):
            observations, _, terminated, truncated, infos = env.step(env.action_space.sample())
            ended.append((list(terminated), list(truncated)))
        assert ended == [([False] * 2, [False] * 2), ([False] * 2, [True] * 2), ([False] * 2, [False] * 2)]
        assert observations == (LONG, LONG) and list(infos["turn"]) == [0, 0]  # reset on the step after
    finally:
        env.close()


def test_the_shared_form_is_small_and_reads_what_was_written_last():
    space = AnyText(MAX_OBSERVATION_CHARS)
    shared = create_shared_memory(space, n=3)
    assert len(shared.data) == 3 * SHARED_TEXT_BYTES  # not 3 x 4 Mi characters of int32
    view = read_from_shared_memory(space, shared, n=3)
    assert tuple(view) == ("", "", "")
    for text in ("first", "user@host:~$ é", LONG):
        write_to_shared_memory(space, 1, text, shared)
        assert view[1] == text and view[-2] == text  # the view follows each write
    write_to_shared_memory(space, 2, "\ud800 lone", shared)  # any str, even one no codec writes
    assert list(view) == ["", LONG, "\ud800 lone"] and view[1:] == (LONG, "\ud800 lone")
    spill = Path(shared.spill)
    assert spill.is_dir()
    del view, shared
    gc.collect()
    assert not spill.exists()  # the long text's file goes with the shared memory


# -- the vector env over `awl serve` -------------------------------------------------------------

def vector(client, num_envs: int, **options):
    return gymnasium.make_vec("agentworld/Terminal-v0", num_envs=num_envs, base_url=str(client.base_url), think="full", reveal_simulator=True,
                              **options)


def test_the_server_vector_env_truncates_at_the_id_s_step_limit_and_reports_cut_answers(tmp_path):
    cut = answer("unclosed_tag_at_length")
    backend = ScriptedBackend([WHOLE[0].scripted(), cut.scripted(), WHOLE[1].scripted()])
    with served(tmp_path, backend) as client:
        env = vector(client, 1)
        assert env.unwrapped.max_episode_steps == 10  # the id's, passed by make_vec
        env.close()
        env = vector(client, 1, max_episode_steps=3)
        env.reset(seed=1)
        seen = [env.step(("ls",)) for _ in range(4)]
        env.close()
    assert [list(step[3]) for step in seen] == [[False], [False], [True], [False]]
    assert [bool(step[4]["cut_short"][0]) for step in seen[:3]] == [False, True, False]
    assert seen[3][4]["turn"][0] == 0  # reset on the step after the limit


def test_a_failing_sub_env_is_raised_after_every_sub_env_s_call_ended_and_named(tmp_path):
    """Gymnasium's AsyncVectorEnv waits for every worker before it raises; so does this one,
    and its error names the sub-envs that failed."""
    backend = ScriptedBackend([item.scripted(1) for item in WHOLE], delay_s=0.002, parallel=4)
    with served(tmp_path, backend) as client:
        env = vector(client, 4)
        _, infos = env.reset(seed=5)
        sessions = list(infos["session"])
        for index in (1, 3):  # gone from the server (as after its idle limit)
            assert client.delete(f"/sessions/{sessions[index]}").status_code == 200
        with pytest.raises(InputError) as raised:
            env.step(("echo 0", "echo 1", "echo 2", "echo 3"))
        env.close()
    message = str(raised.value)
    assert message.startswith("Sub-envs 1, 3 of 4 failed: ") and raised.value.sub_envs == [1, 3]
    assert raised.value.message == message
    for index in (0, 2):  # their turns had ended (and were saved) when the error came
        assert [turn.action for turn in read_trajectory(tmp_path / f"{sessions[index]}.jsonl").turns] == [f"echo {index}"]
