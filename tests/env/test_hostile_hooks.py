"""Reward hooks we do not control: they block, hang, raise anything, exit, and lie about their
value. A turn gives the model's place back once it is saved and its reward runs after, off the
model (session/rewards/timed.py), so no hook can delay another session, hang or kill a session
or a server; each failure is one line that names the hook and the turn, the turn stays saved,
and every face stays in step with its file. Through the runner, the Python env, Gymnasium,
MCP (the SDK's client), REST and OpenEnv (real servers on 127.0.0.1)."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import gymnasium
import pytest
from mcp import Client

import agentworld_local.env.gym  # noqa: F401 - registers the ids
from agentworld_local.engine import events as ev
from agentworld_local.engine.scripted import ScriptedBackend
from agentworld_local.env import make
from agentworld_local.errors import AwlError
from agentworld_local.serve.mcp import build_server
from agentworld_local.session.rewards import Reward
from agentworld_local.session.runner import NewSession, SessionRunner
from agentworld_local.session.spec import SessionSpec
from agentworld_local.testing.answers import ANSWERS, answer
from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import scripted_model
from tests.serve.helpers import served
from tests.serve.test_openenv import episode, openenv_served


class Blocking:
    """A hook that says it started, then waits until released (never, unless a test says so)."""

    name = "python:tests.Blocking"

    def __init__(self) -> None:
        self.started, self.release = threading.Event(), threading.Event()

    def __call__(self, episode) -> float:
        self.started.set()
        self.release.wait(600)
        return 1.0


def exits(episode):
    raise SystemExit(3)


def interrupts(episode):
    raise KeyboardInterrupt


def huge(episode):
    return 10**400


def set_in_verdict(episode):
    return Reward(1.0, "python:tests.set_in_verdict", {"seen": {1, 2}})


HOSTILE = [(exits, "SystemExit"), (interrupts, "KeyboardInterrupt"), (huge, "not a finite number"),
           (set_in_verdict, "verdict")]


def new(tmp_path: Path, name: str, reward=None) -> NewSession:
    return NewSession.from_spec(SessionSpec(domain="terminal", think="off").resolve(), tmp_path / name, reward=reward)


def opened(runner: SessionRunner, new_session: NewSession) -> str:
    return runner.open(new_session).wait().view.id


def test_a_slow_hook_holds_no_place_in_the_model_another_sessions_step_runs_meanwhile(tmp_path):
    hook = Blocking()
    runner = SessionRunner(backend=ScriptedBackend([answer("marker_form").scripted()], parallel=1))
    try:
        rewarded = opened(runner, new(tmp_path, "a.jsonl", hook))
        other = opened(runner, new(tmp_path, "b.jsonl"))
        slow = runner.step(rewarded, "ls")
        assert hook.started.wait(), "the hook runs after its turn"
        # With one place, another session's step finishes while the first turn's hook still runs.
        done = runner.step(other, "pwd").wait()
        assert done.first(ev.TurnFinished) is not None and not slow.done
        hook.release.set()
        assert slow.wait().first(ev.Rewarded).value == 1.0
    finally:
        hook.release.set()
        runner.close()


def test_a_cancel_stops_a_hook_at_once_and_the_turn_stays_saved(tmp_path):
    hook = Blocking()
    runner = SessionRunner(backend=ScriptedBackend([answer("marker_form").scripted()]))
    try:
        sid = opened(runner, new(tmp_path, "a.jsonl", hook))
        step = runner.step(sid, "ls")
        assert hook.started.wait()
        assert runner.cancel(sid) == 1
        outcome = step.wait()  # without the hook's release: the cancel ended it
        assert outcome.first(ev.TurnFinished) is not None and outcome.cancelled_by == "client"
        assert "python:tests.Blocking" in outcome.error.message and "turn 1" in outcome.error.message
        assert outcome.view.turns == 1
        assert runner.close(timeout=60).done, "close does not wait for the hook left behind"
    finally:
        hook.release.set()
    assert [t.action for t in read_trajectory(tmp_path / "a.jsonl").turns] == ["ls"]


def test_a_hook_that_never_answers_fails_its_step_at_the_time_limit(tmp_path):
    hook = Blocking()
    runner = SessionRunner(backend=ScriptedBackend([answer("marker_form").scripted()]), reward_timeout=0.2)
    try:
        sid = opened(runner, new(tmp_path, "a.jsonl", hook))
        outcome = runner.step(sid, "ls").wait()
        assert "did not answer within 0.2 s on turn 1" in outcome.error.message
        assert "--reward-timeout" in outcome.error.hint and outcome.view.turns == 1
        assert runner.step(sid, "pwd").wait().first(ev.TurnFinished).turn == 2, "the session goes on"
    finally:
        hook.release.set()
        runner.close()


@pytest.mark.parametrize(("hook", "said"), HOSTILE)
def test_the_python_env_and_gymnasium_stay_in_step_with_the_file_whatever_a_hook_does(tmp_path, hook, said):
    model = scripted_model(tmp_path, *(a.raw for a in ANSWERS))
    env = make("terminal", model=model, out_dir=tmp_path / "env", reward=hook)
    try:
        env.reset(seed=1)
        with pytest.raises(AwlError) as raised:
            env.step("ls")
        assert said in raised.value.message and "turn 1" in raised.value.message and "\n" not in raised.value.message
        assert env.turns == 1 == len(read_trajectory(env.trajectory).current_branch())
        assert env.observation == read_trajectory(env.trajectory).current_branch()[-1].observation
        env.undo()
        assert env.turns == 0 == len(read_trajectory(env.trajectory).current_branch())
    finally:
        env.close()
    gym = gymnasium.make("agentworld/Terminal-v0", model=model, out_dir=str(tmp_path / "gym"), reward=hook,
                         max_episode_steps=5)
    try:
        gym.reset(seed=1)
        with pytest.raises(AwlError, match="turn 1"):
            gym.step("ls")
        with pytest.raises(AwlError, match="turn 2"):
            gym.step("pwd")  # the env counted the saved turn: the next one is turn 2, as in the file
        (path,) = (tmp_path / "gym").glob("*.jsonl")
        assert len(read_trajectory(path).current_branch()) == 2
    finally:
        gym.close()


@pytest.mark.parametrize(("hook", "said"), HOSTILE)
def test_mcp_answers_one_tool_error_and_its_state_is_the_files(tmp_path, hook, said):
    env = make("terminal", model=scripted_model(tmp_path, *(a.raw for a in ANSWERS)), out_dir=tmp_path, reward=hook)
    env.reset(seed=1)
    server = build_server(env)

    async def session() -> tuple:
        async with Client(server) as client:
            acted = await client.call_tool("act", {"action": "ls"})
            state = await client.call_tool("state", {})
            return acted, state

    try:
        acted, state = anyio.run(session)
        (turn,) = read_trajectory(env.trajectory).current_branch()
    finally:
        env.close()
    message = acted.content[0].text
    assert acted.is_error and said in message and "turn 1" in message
    assert state.content[0].text == turn.observation, "the state is the saved turn's"


@pytest.mark.parametrize(("hook", "said"), HOSTILE)
def test_rest_and_openenv_answer_the_same_status_with_the_hook_and_the_turn_and_keep_the_turn(tmp_path, hook, said):
    backend = ScriptedBackend([answer("marker_form").scripted()])
    with served(tmp_path / "rest", backend, reward=hook) as client:
        sid = client.post("/sessions", json={"domain": "terminal"}).json()["id"]
        answered = client.post(f"/sessions/{sid}/step", json={"action": "ls"})
        state = client.get(f"/sessions/{sid}").json()
    assert answered.status_code == 409, answered.text
    assert said in answered.json()["error"] and "turn 1" in answered.json()["error"]
    assert state["turns"] == 1 and state["observation"] == answer("marker_form").observation
    with openenv_served(tmp_path / "openenv", ScriptedBackend([answer("marker_form").scripted()]),
                        reward=hook) as url:
        with pytest.raises(RuntimeError) as raised:
            episode(url, ["ls"])
        files = list((tmp_path / "openenv").glob("*.jsonl"))
    assert said in str(raised.value) and "turn 1" in str(raised.value)
    assert [len(read_trajectory(path).current_branch()) for path in files] == [1]


def test_an_mcp_client_that_cancels_act_stops_its_turn_and_nothing_is_saved_for_it(tmp_path):
    from tests.tui.helpers import GatedBackend

    gated = GatedBackend(ScriptedBackend([answer("marker_form").scripted()]), after=2)
    env = make("terminal", backend=gated, out_dir=tmp_path)
    env.reset(seed=1)
    server = build_server(env)

    async def session() -> str:
        async with Client(server) as client:
            async with anyio.create_task_group() as group:
                async def act() -> None:
                    await client.call_tool("act", {"action": "ls"})

                group.start_soon(act)
                await anyio.to_thread.run_sync(gated.holding.wait, 60)
                group.cancel_scope.cancel()  # the client gives up: it sends notifications/cancelled
            while env._runner.load_now.running:  # the server stops the turn held at the gate
                await anyio.sleep(0.01)
            gated.gate.set()
            again = await client.call_tool("act", {"action": "pwd"})
            return again.structured_content["turn"]

    try:
        turn = anyio.run(session)
        actions = [t.action for t in read_trajectory(env.trajectory).current_branch()]
    finally:
        gated.gate.set()
        env.close()
    assert actions == ["pwd"] and turn == 1, "the cancelled act left no turn; the next one is turn 1"
