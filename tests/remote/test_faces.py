"""Every face that loads a model reaches a server: the start screen (a server model typed
as `openai:MODEL@URL`, or `awl play --backend openai ...` filled in), `awl demo` and
`awl run --from-bench`, against a server on 127.0.0.1 streaming realistic answers."""

from __future__ import annotations

import json

import pytest

from agentworld_local.testing.answers import answer
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.tui.app import make_app
from agentworld_local.tui.session_screen import SessionScreen
from agentworld_local.engine.remote.options import RemoteOptions
from tests.cli.helpers import awl
from tests.remote.fake_openai import Reply
from tests.tui.helpers import SIZE, type_action
from tests.tui.test_start_pilot import start_with

ITEM = answer("thinking_then_tags")


@pytest.fixture
def serving(fake):
    fake.replies[:] = [Reply(ITEM.raw, separate=True)]
    return fake


@pytest.mark.anyio
async def test_the_start_screen_opens_a_session_on_a_server(serving, tmp_path):
    app = make_app(sessions_dir=tmp_path, models=[], timings=False)
    async with app.run_test(size=SIZE) as pilot:
        await start_with(pilot, world="domain:terminal", model=f"openai:world@{serving.base_url}", think="off")
        assert isinstance(app.screen, SessionScreen)
        await type_action(pilot, "ls -la")
        path = app.screen.view.path
    traj = read_trajectory(path)
    assert traj.turns[0].observation == ITEM.observation
    assert traj.header.model.extra == {"backend": "openai", "endpoint": serving.base_url}


@pytest.mark.anyio
async def test_play_with_server_options_fills_in_the_model(serving, tmp_path):
    remote = RemoteOptions(serving.base_url, "world")
    app = make_app(model=remote.spec, remote=remote, sessions_dir=tmp_path, models=[], timings=False, start_screen=True)
    async with app.run_test(size=SIZE) as pilot:
        assert app.screen.query_one("#model").value == f"openai:world@{serving.base_url}"
        await start_with(pilot, world="domain:terminal", model=remote.spec, think="off")
        await type_action(pilot, "pwd")
        path = app.screen.view.path
    assert read_trajectory(path).turns[0].observation == ITEM.observation


def test_demo_runs_live_on_a_server(serving, tmp_path):
    out = tmp_path / "demo.jsonl"
    result = awl("demo", "--backend", "openai", "--base-url", serving.base_url, "--api-model", "world",
                 "--think", "off", "--out", str(out), home=tmp_path)
    assert result.returncode == 0, result.stderr
    traj = read_trajectory(out)
    assert traj.turns and all(turn.observation == ITEM.observation for turn in traj.turns)
    assert traj.header.model.extra["backend"] == "openai"


def test_run_from_bench_on_a_server(serving, tmp_path):
    bench = tmp_path / "terminal_test.jsonl"
    row = {"task": "terminal", "id": "t1", "turn_idx": 1, "total_turns": 1, "system_str": "You simulate a terminal.",
           "prompt": ["### Turn 1\n**Action:**\n```\nls -la\n```"], "response": [f"**Environment Observation:**\n{ITEM.observation}"],
           "current_prompt": ""}
    bench.write_text(json.dumps(row) + "\n", encoding="utf-8")
    # As llama-server says it (/props): the context the benchmark's 32,768 new tokens need.
    serving.props = {"default_generation_settings": {"n_ctx": 65536}, "total_slots": 2}
    out = tmp_path / "row.jsonl"
    result = awl("run", "--from-bench", str(bench), "--row", "1", "--backend", "openai", "--base-url", serving.base_url,
                 "--api-model", "world", "--think", "off", "--out", str(out), home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert serving.requests[0]["messages"] == [{"role": "system", "content": row["system_str"]},
                                               {"role": "user", "content": row["prompt"][0]}]
    assert read_trajectory(out).turns[0].observation == ITEM.observation
