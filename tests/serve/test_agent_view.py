"""Issue 41's agent's view: every face an agent is trained through carries by default only what
the environment would show (no thinking, no file path, no session id); `--reveal-simulator` /
`reveal_simulator=True` brings them back; the trajectory keeps them either way."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentworld_local.testing import ScriptedBackend
from agentworld_local.testing.answers import answer
from agentworld_local.trajectory.reader import read_trajectory
from tests.serve.helpers import served, sse_events

ITEM = answer("thinking_then_tags")
THINKING = "The agent lists /app"  # in ITEM's <think> block


def backend() -> ScriptedBackend:
    return ScriptedBackend([ITEM.scripted(2)])


def leaks(shown: object, session: str, folder) -> list[str]:
    text = json.dumps(shown, default=str)
    return [name for name, part in (("thinking", THINKING), ("session id", session), ("path", str(folder)))
            if part in text]


@pytest.mark.parametrize("reveal", [False, True])
def test_rest_step_and_stream_answers(tmp_path, reveal):
    with served(tmp_path, backend(), reveal_simulator=reveal) as client:
        sid = client.post("/sessions", json={"domain": "terminal", "think": "full"}).json()["id"]
        step = client.post(f"/sessions/{sid}/step", json={"action": "ls -la"}).json()
        with client.stream("POST", f"/sessions/{sid}/step/stream", json={"action": "ls"}) as response:
            stream = list(sse_events(response.iter_lines()))
    assert step["observation"] == ITEM.observation and step["turn"] == 1 and step["terminated"] is False
    done = next(data for name, data in stream if name == "turn_done")
    assert (done["record"] if reveal else done)["observation"] == ITEM.observation
    # Revealed: the turn's record and the session's id (its file's path is the session routes', the operator's).
    assert leaks([step, stream], sid, tmp_path) == (["thinking", "session id"] if reveal else [])
    if not reveal:
        assert not {"record", "session", "head"} & set(step) and "thinking" not in {name for name, _ in stream}
    (path,) = tmp_path.glob("*.jsonl")
    assert all(THINKING in turn.thinking for turn in read_trajectory(path).turns)  # the file keeps it


@pytest.mark.parametrize("reveal", [False, True])
def test_gymnasium_observations_and_info(tmp_path, reveal):
    gymnasium = pytest.importorskip("gymnasium")
    import agentworld_local.env.gym  # noqa: F401 - registers the ids

    env = gymnasium.make("agentworld/Terminal-v0", backend=backend(), out_dir=tmp_path, think="full",
                         reveal_simulator=reveal)
    try:
        observation, reset_info = env.reset(seed=1)
        observation, reward, terminated, truncated, info = env.step("ls -la")
        path = env.unwrapped.world.trajectory
    finally:
        env.close()
    assert observation == ITEM.observation and info["turn"] == 1 and info["cut_short"] is False
    found = leaks([observation, reset_info, info], path.stem, tmp_path)
    assert found == (["thinking", "session id", "path"] if reveal else [])
    if not reveal:
        assert set(info) == {"turn", "cut_short"} and "trajectory" not in reset_info and "run_dir" not in reset_info
    assert THINKING in read_trajectory(path).turns[0].thinking


@pytest.mark.parametrize("reveal", [False, True])
def test_the_vector_env_infos(tmp_path, reveal):
    gymnasium = pytest.importorskip("gymnasium")
    import agentworld_local.env.gym  # noqa: F401 - registers the ids

    with served(tmp_path, backend(), reveal_simulator=reveal) as client:
        env = gymnasium.make_vec("agentworld/Terminal-v0", num_envs=1, base_url=str(client.base_url), think="full",
                                 reveal_simulator=reveal)
        try:
            _, reset_infos = env.reset(seed=1)
            sid = env.unwrapped.sessions[0] if hasattr(env, "unwrapped") else env.sessions[0]
            observations, _, _, _, infos = env.step(["ls -la"])
        finally:
            env.close()
    assert observations[0] == ITEM.observation
    found = leaks([reset_infos, infos], sid, tmp_path)
    assert found == (["thinking", "session id", "path"] if reveal else [])


@pytest.mark.parametrize("reveal", [False, True])
def test_openenv_observations_and_state(tmp_path, reveal):
    pytest.importorskip("openenv")
    from openenv import GenericEnvClient

    from tests.serve.test_openenv import openenv_served

    with openenv_served(tmp_path, backend(), reveal_simulator=reveal) as url:
        async def episode() -> tuple:
            async with GenericEnvClient(base_url=url, message_timeout_s=1800) as env:
                started = await env.reset(think="full")
                step = await env.step({"action": "ls -la"})
                return started, step, await env.state()

        started, step, state = asyncio.run(episode())
    (path,) = tmp_path.glob("*.jsonl")
    assert step.observation["observation"] == ITEM.observation and step.observation["turn"] == 1
    shown = [started.observation, step.observation, state]
    assert leaks(shown, path.stem, tmp_path) == (["thinking", "session id", "path"] if reveal else [])
    assert THINKING in read_trajectory(path).turns[0].thinking


@pytest.mark.parametrize("reveal", [False, True])
def test_mcp_act_results_and_the_trajectory_resource(tmp_path, reveal):
    anyio = pytest.importorskip("anyio")
    pytest.importorskip("mcp")
    from mcp import Client

    from tests.serve.test_mcp import answer_file, server

    answers = answer_file(tmp_path, ["thinking_then_tags"])
    flag = ["--reveal-simulator"] if reveal else []

    async def session() -> tuple:
        async with Client(server(tmp_path, *flag, "--think", "full", "--model", f"scripted:{answers}")) as client:
            resources = [str(item.uri) for item in (await client.list_resources()).resources]
            result = await client.call_tool("act", {"action": "ls -la"})
            return resources, result.structured_content, [block.text for block in result.content]

    resources, structured, texts = anyio.run(session)
    (path,) = (tmp_path / "out").glob("*.jsonl")
    assert structured["observation"] == ITEM.observation
    assert leaks([structured, texts], path.stem, tmp_path) == (["session id", "path"] if reveal else [])
    assert ("awl://trajectory" in resources) is reveal and ("trajectory" in structured) is reveal
    assert THINKING in read_trajectory(path).turns[0].thinking
