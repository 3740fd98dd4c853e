"""A shared world is the same world whatever the backend and the batch: turns played on the GGUF
in-process are met byte-identically on a real server (`python -m llama_cpp.server` over the same
file, served under the same name), and sessions decoded side by side in one batch agree."""

from __future__ import annotations

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.llama.backend import LlamaBackend
from agentworld_local.engine.remote.backend import OpenAIBackend
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.world import WORLD_KEY, World
from agentworld_local.session.core import Session
from agentworld_local.session.runner import NewSession, SessionRunner
from agentworld_local.session.spec import SessionSpec
from agentworld_local.trajectory.reader import read_trajectory
from tests.remote.conftest import SERVED

#: top_k 0: llama-cpp-python's server samples the fixture's large vocabulary slowly with a top-k.
SAMPLING = SamplingConfig(temperature=1.0, top_k=0, max_tokens=8)
SYSTEM = "You simulate a Linux terminal."
ACTIONS = ["ls", "pwd", "cat notes.txt"]


@pytest.fixture
def world(monkeypatch, tmp_path) -> str:
    monkeypatch.setenv("AWL_WORLDS_DIR", str(tmp_path / "worlds"))
    return "backends"


def settings(world: str) -> SessionSettings:
    return SessionSettings(sampling=SAMPLING, think=ThinkBudget.parse("off"), seed=11, system_prompt=SYSTEM,
                           shared_world=world)


def play(backend, world: str, path, actions) -> list:
    session = Session.create(World(backend, get_domain("terminal"), settings(world)), path)
    try:
        return [session.world.run_turn(action) for action in actions]
    finally:
        session.close()


def test_turns_played_in_process_are_met_identically_on_a_server(llama_server, qwen_gguf, world, tmp_path):
    local = LlamaBackend(qwen_gguf, n_ctx=4096, gpu_layers=0, name=SERVED)
    try:
        here = play(local, world, tmp_path / "here.jsonl", ACTIONS)
    finally:
        local.close()
    remote = OpenAIBackend(RemoteOptions(llama_server.base_url, SERVED))
    try:
        there = play(remote, world, tmp_path / "there.jsonl", [*ACTIONS, "whoami"])
    finally:
        remote.close()
    assert [r.raw_output for r in there[:3]] == [r.raw_output for r in here]
    assert [r.observation for r in there[:3]] == [r.observation for r in here]
    assert [r.extra[WORLD_KEY]["from"] for r in there] == ["store", "store", "store", "model"]
    assert there[3].tokens["generated"] > 0  # a new action: the server predicted it


def test_sessions_decoded_side_by_side_in_one_batch_meet_one_world(qwen_gguf, world, tmp_path):
    backend = LlamaBackend(qwen_gguf, n_ctx=4096, gpu_layers=0, parallel=2)
    runner = SessionRunner(backend=backend)
    try:
        resolved = SessionSpec(domain="terminal", think="off", temperature=1.0, max_tokens=8, seed=11,
                               shared_world=world).resolve()
        opened = [runner.open(NewSession.from_spec(resolved, tmp_path / f"s{index}.jsonl")).wait().view.id
                  for index in range(4)]
        observations: dict[str, list[str]] = {session: [] for session in opened}
        for action in ACTIONS:
            sent = [(session, runner.step(session, action)) for session in opened]  # all at once
            for session, command in sent:
                observations[session].append(command.wait().view.observation)
        assert len({tuple(seen) for seen in observations.values()}) == 1
        # After turns the world served, a session's own action is predicted on the context it holds.
        own = [runner.step(session, f"echo {index}").wait() for index, session in enumerate(opened)]
        assert all(outcome.view.turns == len(ACTIONS) + 1 for outcome in own)
    finally:
        runner.close()  # closes the backend it was given
    sources = [record.extra[WORLD_KEY]["from"] for index in range(4)
               for record in read_trajectory(tmp_path / f"s{index}.jsonl").current_branch()]
    # One model turn per distinct turn, whatever the batch: the shared three once, then each own one.
    assert sources.count("model") == len(ACTIONS) + 4
