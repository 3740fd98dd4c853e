"""A fleet of engines (engine/remote/fleet.py): one model on three loopback servers. Sessions are
placed on the least-loaded server and each one's turns all land there; a server killed while
turns run hands its sessions to the others (the turn runs again there, whole: no finished
turn is lost, and each moved session says so once, in its events and its file); a server that
comes back is used again after its retry time; all down is one line. Then through `awl serve`
with three --base-url, `make(base_url=[...])`, and hostile URLs on the command line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

import agentworld_local
from agentworld_local.engine import events as ev
from agentworld_local.engine.loading import load_backend
from agentworld_local.engine.remote.backend import OpenAIBackend
from agentworld_local.engine.remote.fleet import ROUND_ROBIN, STICKY, Fleet
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.errors import GenerationError
from agentworld_local.session.runner import NewSession, SessionRunner
from agentworld_local.session.spec import SessionSpec
from agentworld_local.testing.answers import answer
from agentworld_local.trajectory.reader import read_trajectory
from bench.serve_load import free_port, wait_ready
from tests.cli.helpers import assert_one_line_error, awl
from tests.remote.fake_openai import Reply
from tests.remote.fleet_servers import FleetServer

ITEM = answer("thinking_then_tags")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def three():
    servers = [FleetServer() for _ in range(3)]
    for server in servers:
        server.replies[:] = [Reply(ITEM.raw, separate=True)]
    yield servers
    for server in servers:
        server.close()


class Clock:
    """A clock a test moves by hand: a server's retry time passes without waiting for it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fleet_of(servers: list[FleetServer], **options) -> Fleet:
    return Fleet(RemoteOptions([server.base_url for server in servers], "world", retries=0), **options)


def open_sessions(runner: SessionRunner, folder: Path, count: int, first: int = 0) -> list[str]:
    sids = []
    for number in range(first, first + count):
        path = folder / f"s{number}.jsonl"
        spec = SessionSpec(domain="terminal", think="full").resolve()
        runner.open(NewSession.from_spec(spec, path)).wait().raise_failure()
        sids.append(str(path))
    return sids


def step_all(runner: SessionRunner, sids: list[str], turn: int) -> dict[str, list]:
    """Turn `turn` of every session at once; each session's events."""
    sent = {sid: runner.step(sid, f"echo {Path(sid).stem}-t{turn}") for sid in sids}
    return {sid: sending.wait().said for sid, sending in sent.items()}


def landed(servers: list[FleetServer], sid: str, turn: int | None = None) -> list[int]:
    """The servers (by index) that got a request for the session's turn (any turn: None)."""
    marker = f"echo {Path(sid).stem}-t{'' if turn is None else turn}"
    return [index for index, server in enumerate(servers) if any(marker in action for action in server.actions())]


def notices(said: list) -> list[str]:
    return [event.text for event in said if isinstance(event, ev.Notice)]


def test_sessions_spread_least_loaded_and_every_turn_of_a_session_lands_on_its_server(three, tmp_path):
    for server, places in zip(three, (2, 2, 4)):
        server.server_info = {"max_running_requests": places, "context_length": 32768}  # SGLang says its places
    fleet = fleet_of(three)
    assert fleet.parallel == 8 and fleet.info.endpoint == f"{three[0].base_url} +2"
    runner = SessionRunner(backend=fleet)
    try:
        sids = open_sessions(runner, tmp_path, 8)
        for turn in (1, 2, 3):
            for said in step_all(runner, sids, turn).values():
                assert not notices(said) and any(isinstance(event, ev.TurnFinished) for event in said)
        homes = {sid: landed(three, sid) for sid in sids}
        assert all(len(home) == 1 for home in homes.values()), homes  # sticky: every turn on one server
        per_server = [sum(home == [index] for home in homes.values()) for index in range(3)]
        assert per_server == [2, 2, 4]  # sessions for places
        assert [len(server.requests) for server in three] == [6, 6, 12]
        assert [(status.sessions, status.parallel, status.up) for status in runner.servers()] == [
            (2, 2, True), (2, 2, True), (4, 4, True)]
        for sid in sids:  # the file records the server the session was placed on
            home = three[homes[sid][0]]
            assert read_trajectory(Path(sid)).header.model.extra == {"backend": "openai", "endpoint": home.base_url}
    finally:
        runner.close()
    assert all(server.refused == 0 for server in three)


@pytest.mark.parametrize("placement", [STICKY, ROUND_ROBIN])
def test_round_robin_sends_each_turn_to_the_next_server_where_sticky_keeps_it(three, tmp_path, placement):
    """The bench's knob (bench/fleet_affinity.py measures what sticky saves against it)."""
    runner = SessionRunner(backend=fleet_of(three, placement=placement))
    try:
        sids = open_sessions(runner, tmp_path, 3)
        for turn in range(1, 5):
            for said in step_all(runner, sids, turn).values():
                assert not notices(said) and any(isinstance(event, ev.TurnFinished) for event in said)
        paths = {sid: [landed(three, sid, turn) for turn in range(1, 5)] for sid in sids}
        assert sorted(path[0] for path in paths.values()) == [[0], [1], [2]]  # placed least-loaded either way
        step = 1 if placement == ROUND_ROBIN else 0
        for path in paths.values():
            home = path[0][0]
            assert path == [[(home + step * turn) % 3] for turn in range(4)], paths
        assert [status.sessions for status in runner.servers()] == [1, 1, 1]
    finally:
        runner.close()


def test_a_server_killed_while_turns_run_hands_its_sessions_to_the_others_and_no_turn_is_lost(three, tmp_path):
    runner = SessionRunner(backend=fleet_of(three))
    try:
        sids = open_sessions(runner, tmp_path, 6)
        step_all(runner, sids, 1)
        home = {sid: landed(three, sid)[0] for sid in sids}
        on_dead = [sid for sid in sids if home[sid] == 1]
        assert len(on_dead) == 2
        dead = three[1]
        dead.hold_after, dead.held_wanted = 4, 2  # its answers stop after a few pieces, as it dies
        sent = {sid: runner.step(sid, f"echo {Path(sid).stem}-t2") for sid in sids}
        assert dead.all_held.wait(60)
        dead.kill()  # the port closes, and both answers in flight are cut
        said = {sid: sending.wait().said for sid, sending in sent.items()}
        moved_to = {}
        for sid in sids:
            assert not any(isinstance(event, ev.ErrorEvent) for event in said[sid]), said[sid]
            texts = notices(said[sid])
            if sid in on_dead:
                assert len(texts) == 1 and texts[0].startswith(f"The server at {dead.base_url} stopped answering")
                moved_to[sid] = next(index for index, server in enumerate(three) if texts[0].endswith(f"moved to {server.base_url}."))
                assert moved_to[sid] != 1 and landed(three, sid, 2) == sorted([1, moved_to[sid]])
            else:
                assert texts == [] and landed(three, sid, 2) == [home[sid]]
        assert sorted(moved_to.values()) == [0, 2]  # each to the least-loaded up server
        step_all(runner, sids, 3)  # a moved session stays where it went
        for sid in sids:
            assert landed(three, sid, 3) == [moved_to.get(sid, home[sid])]
        status = runner.servers()[1]
        assert (status.up, status.sessions, status.failures) == (False, 0, 1) and "mid-answer" in status.error
    finally:
        runner.close()
    for sid in sids:  # every finished turn is in the file; the moved turn's notice too, once
        turns = read_trajectory(Path(sid)).turns
        assert [turn.action for turn in turns] == [f"echo {Path(sid).stem}-t{n}" for n in (1, 2, 3)]
        assert all(turn.observation == ITEM.observation for turn in turns)
        kept = [turn.extra.get("notices", []) for turn in turns]
        assert kept == ([[], notices(said[sid]), []] if sid in on_dead else [[], [], []])


def test_a_server_that_comes_back_is_used_again_after_its_retry_time(three, tmp_path):
    clock = Clock()
    fleet = fleet_of(three, retry_s=30, clock=clock)
    runner = SessionRunner(backend=fleet)
    try:
        first = open_sessions(runner, tmp_path, 3)
        step_all(runner, first, 1)
        assert [landed(three, sid) for sid in first] == [[0], [1], [2]]
        three[1].kill()
        said = step_all(runner, first[1:2], 2)[first[1]]  # refused at connect: moved at once, the turn goes on
        assert len(notices(said)) == 1 and "cannot be reached" in notices(said)[0]
        three[1].start()  # back, but its retry time has not come: not asked, nothing placed there
        assert runner.servers()[1].retry_in_s == 30
        before = len(three[1].requests)
        later = open_sessions(runner, tmp_path, 1, first=3)
        step_all(runner, later, 1)
        assert landed(three, later[0]) != [1] and len(three[1].requests) == before
        clock.now += 30  # its time came: the next placement asks it, and it is the least loaded
        again = open_sessions(runner, tmp_path, 1, first=4)
        step_all(runner, again, 1)
        assert landed(three, again[0]) == [1] and runner.servers()[1].up
        three[1].kill()  # down again: its wait doubles with each failure in a row
        step_all(runner, again, 2)
        clock.now += 30
        open_sessions(runner, tmp_path, 1, first=5)  # asks it again: still down
        status = runner.servers()[1]
        assert not status.up and status.failures == 3 and status.retry_in_s == 60
    finally:
        runner.close()


def test_every_server_down_fails_the_turn_with_one_line(three, tmp_path):
    runner = SessionRunner(backend=fleet_of(three))
    try:
        sids = open_sessions(runner, tmp_path, 2)
        step_all(runner, sids, 1)
        for server in three:
            server.kill()
        outcome = runner.step(sids[0], "pwd").wait()
        error = outcome.error.error
        assert isinstance(error, GenerationError) and "Every server of the fleet stopped answering" in error.message
        assert "\n" not in error.one_line() and all(server.base_url in error.message for server in three)
        assert [status.up for status in runner.servers()] == [False, False, False]
    finally:
        runner.close()
    assert [len(read_trajectory(Path(sid)).turns) for sid in sids] == [1, 1]


def test_a_server_down_at_load_is_said_and_the_others_serve(three):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    said: list[str] = []
    fleet = load_backend(None, remote=RemoteOptions([three[0].base_url, dead, three[2].base_url], "world", retries=0),
                         notice=said.append)
    try:
        assert isinstance(fleet, Fleet) and any(text.startswith(f"The server at {dead} does not answer") for text in said)
        assert [status.up for status in fleet.servers()] == [True, False, True]
        views = [fleet.for_session() for _ in range(4)]
        assert sorted(view.endpoint for view in views) == sorted([three[0].base_url, three[2].base_url] * 2)
    finally:
        fleet.close()
    with pytest.raises(GenerationError, match="No server of the fleet answers"):
        Fleet(RemoteOptions([dead, f"http://127.0.0.1:{free_port()}/v1"], "world", retries=0))


def test_a_request_the_server_refuses_moves_nothing(three, tmp_path):
    runner = SessionRunner(backend=fleet_of(three))
    try:
        (sid,) = open_sessions(runner, tmp_path, 1)
        three[0].context_chars = 10  # too long for its context: the request's fault, not the server's
        outcome = runner.step(sid, "echo s0-t1").wait()
        assert "longer than the context" in outcome.error.message and not notices(outcome.said)
        assert all(status.up for status in runner.servers()) and landed(three, sid) == [0]
    finally:
        runner.close()


def test_awl_serve_with_three_servers(three, tmp_path):
    port = free_port()
    args = [sys.executable, "-m", "agentworld_local.cli.main", "serve", "--backend", "openai", "--api-model", "world",
            "--dir", str(tmp_path), "--port", str(port), "--retries", "0"]
    for server in three:
        args += ["--base-url", server.base_url]
    process = subprocess.Popen(args, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, process)
        sids = [httpx2.post(f"{base}/sessions", json={"domain": "terminal", "think": "full"}).json()["id"] for _ in range(6)]
        for sid in sids:
            done = httpx2.post(f"{base}/sessions/{sid}/step", json={"action": f"echo {sid}"}, timeout=None).json()
            assert done["observation"] == ITEM.observation
        health = httpx2.get(f"{base}/health").json()
        assert [entry["endpoint"] for entry in health["servers"]] == [server.base_url for server in three]
        assert [(entry["sessions"], entry["up"], entry["running"]) for entry in health["servers"]] == [(2, True, 0)] * 3
        assert health["parallel"] == 3 * health["servers"][0]["parallel"]
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate()
    for server in three:
        assert f"awl serve: server {server.base_url}: up" in stderr
        assert len(server.requests) == 2
    for sid in sids:
        assert read_trajectory(tmp_path / f"{sid}.jsonl").turns[0].action == f"echo {sid}"


def test_make_takes_a_list_of_servers(three, tmp_path):
    urls = [server.base_url for server in three]
    with agentworld_local.make("terminal", base_url=urls, api_model="world", out_dir=tmp_path / "list",
                               think="full") as env:
        env.reset(seed=1)
        assert env.step("ls")[0] == ITEM.observation
    with agentworld_local.make("terminal", f"openai:world@{','.join(urls)}", out_dir=tmp_path / "spec") as env:
        env.reset(seed=1)
        assert env.step("pwd")[0] == ITEM.observation
    assert sum(len(server.requests) for server in three) == 2
    with pytest.raises(Exception, match="api_model="):
        agentworld_local.make("terminal", base_url=urls, out_dir=tmp_path)


def test_a_duplicate_or_malformed_url_among_good_ones_is_one_line(three, tmp_path):
    good = three[0].base_url
    for urls, fragment in (([good, three[1].base_url, good + "/"], f"--base-url {good} is given twice"),
                           ([good, "http://127.0.0.1:notaport/v1", three[1].base_url], "`http://127.0.0.1:notaport/v1`"),
                           ([good, "127.0.0.1:8000/v1"], "`127.0.0.1:8000/v1` is not an http(s) URL")):
        args = ["run", "--backend", "openai", "--api-model", "world", "--out", str(tmp_path / "s.jsonl")]
        for url in urls:
            args += ["--base-url", url]
        assert_one_line_error(awl(*args, home=tmp_path, stdin="ls\n"), fragment)
    assert sum(len(server.requests) for server in three) == 0


def test_one_server_is_no_fleet_and_reports_one_entry(three):
    backend = load_backend(None, remote=RemoteOptions(three[0].base_url, "world", retries=0))
    try:
        assert isinstance(backend, OpenAIBackend)
        views = [backend.for_session() for _ in range(2)]
        views[0].close()
        (status,) = backend.servers()
        assert (status.endpoint, status.up, status.sessions, status.failures) == (three[0].base_url, True, 1, 0)
        three[0].kill()
        with pytest.raises(GenerationError, match="Cannot reach the server"):
            list(views[1].generate([{"role": "user", "content": "ls"}], sampling=SamplingConfig(),
                                   think=ThinkBudget("off"), seed=0))
        (status,) = backend.servers()
        assert (status.up, status.failures, status.running) == (False, 1, 0) and "cannot be reached" in status.error
    finally:
        backend.close()
