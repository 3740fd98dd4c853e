"""Many episodes at once over three loopback servers, one killed halfway (issue 42's scale point,
small; bench/fleet_scale.py runs the same clients with 2,000 episodes and measures the time).

Through `awl serve`'s REST API and OpenEnv's WebSocket (`awl serve --openenv`): every episode
opens, plays its turns at once with the others, and closes; once half of all turns are done, one
server is killed (its port closed, its answers in flight cut). No request fails, nothing is
refused as busy (by awl serve or by a server: awl keeps each to its places), every turn a
client was told is done is in its session's file, in order, and a session that was on the
killed server says once that it moved. Counts only, never times.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from agentworld_local.engine.remote.fleet import Fleet
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.serve.limits import ServeLimits
from agentworld_local.trajectory.reader import read_trajectory
from bench.fleet_clients import Hooks, rest, websocket
from bench.fleet_scale import ANSWER, Served
from tests.remote.fake_openai import Reply
from tests.remote.fleet_servers import FleetServer

EPISODES, TURNS, PLACES = 24, 4, 3


class KillHalfway(Hooks):
    def __init__(self, server: FleetServer) -> None:
        self.server = server

    async def opened(self) -> None:
        pass

    def half(self) -> None:
        self.server.kill()

    def played(self) -> None:
        pass


@pytest.fixture
def three():
    servers = [FleetServer(places=PLACES, delay=0.2) for _ in range(3)]
    for server in servers:
        server.replies[:] = [Reply(ANSWER, chunks=(len(ANSWER),))]
        server.server_info = {"max_running_requests": PLACES, "context_length": 32768}
    yield servers
    for server in servers:
        server.close()


@pytest.mark.parametrize("face", ["rest", "openenv"])
def test_episodes_at_once_lose_no_turn_when_a_server_is_killed_halfway(three, tmp_path, face):
    fleet = Fleet(RemoteOptions([server.base_url for server in three], "world", retries=0))
    assert fleet.parallel == 3 * PLACES
    limits = ServeLimits(max_sessions=2 * EPISODES, max_turns=TURNS + 1, idle_s=3600)
    if face == "rest":
        from agentworld_local.serve.app import make_app

        app = make_app(folder=tmp_path, backend=fleet, limits=limits)
    else:
        from agentworld_local.serve.openenv import make_openenv_app

        app = make_openenv_app(folder=tmp_path, backend=fleet, limits=limits)
    with Served(app) as url:
        play = rest if face == "rest" else websocket
        run = asyncio.run(play(url, EPISODES, TURNS, KillHalfway(three[1])))
    assert not three[1].alive
    assert (run.errors, run.busy, run.first_error) == (0, 0, ""), run.first_error
    assert [server.refused for server in three] == [0, 0, 0]
    assert run.opened == EPISODES and run.done_turns == EPISODES * TURNS
    assert sorted(run.turns_by_session.values()) == [TURNS] * EPISODES
    killed = " ".join(three[1].actions())
    moved = 0
    for sid in run.turns_by_session:
        turns = read_trajectory(tmp_path / f"{sid}.jsonl").turns
        tag = sid[-8:] if face == "rest" else sid
        assert [turn.action for turn in turns] == [f"echo {tag}-{n}" for n in range(1, TURNS + 1)]
        said = [notice for turn in turns for notice in turn.extra.get("notices", [])]
        assert len(said) <= 1
        if said:  # only a session that was on the killed server moves, once
            assert re.search(rf"echo {re.escape(tag)}-\d", killed) and "stopped answering" in said[0], said
            moved += 1
    assert moved >= 1
