"""The environment faces on a model served elsewhere: `agentworld_local.make` and `awl mcp`
against an OpenAI-compatible server on 127.0.0.1 streaming realistic answers."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import agentworld_local
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.testing.answers import answer
from agentworld_local.trajectory.reader import read_trajectory
from tests.remote.fake_openai import Reply

ITEM = answer("thinking_then_tags")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("separate", [True, False])
def test_make_runs_an_episode_on_a_server(fake, tmp_path, separate):
    fake.replies[:] = [Reply(ITEM.raw, separate=separate)]
    with agentworld_local.make("agentworld/Terminal-v0", f"openai:world@{fake.base_url}", out_dir=tmp_path,
                               think="full", reveal_simulator=True) as env:
        env.reset(seed=2)
        observation, _, _, truncated, info = env.step("ls -la")
        assert observation == ITEM.observation and not truncated and info["thinking"].startswith("The agent lists")
        path = env.trajectory
    assert read_trajectory(path).header.model.extra == {"backend": "openai", "endpoint": fake.base_url}
    with agentworld_local.make("terminal", load_options={"remote": RemoteOptions(fake.base_url, "world")},
                               out_dir=tmp_path / "options") as env:
        env.reset()
        assert env.step("pwd")[0] == ITEM.observation


def test_awl_mcp_serves_a_world_a_server_predicts(fake, tmp_path):
    anyio = pytest.importorskip("anyio")
    pytest.importorskip("mcp")
    from mcp import Client, StdioServerParameters

    fake.replies[:] = [Reply(ITEM.raw, separate=True)]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentworld_local.cli.main", "mcp", "--backend", "openai", "--base-url", fake.base_url,
              "--api-model", "world", "--out-dir", str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=str(ROOT))

    async def session() -> str:
        async with Client(params) as client:
            result = await client.call_tool("act", {"action": "ls -la"})
            return "".join(block.text for block in result.content)

    assert anyio.run(session) == ITEM.observation
    (path,) = tmp_path.glob("*.jsonl")
    assert read_trajectory(path).turns[0].observation == ITEM.observation
