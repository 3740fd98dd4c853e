"""A World is a simulator: it never runs an action, and a cancelled turn leaves no trace."""

from __future__ import annotations

import os
import subprocess
import threading

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.engine.events import ObservationDelta, ThinkingDelta, TurnCancelled


@pytest.fixture(scope="module")
def world_factory(qwen_gguf):
    backend = LlamaBackend(qwen_gguf, n_ctx=8192, gpu_layers=0)

    def make(**settings):
        backend.reset()
        return World(backend, get_domain("terminal"), SessionSettings(**settings))

    yield make
    backend.close()


def test_actions_are_never_executed_on_the_host(world_factory, tmp_path, monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError(f"the sandbox tried to execute something on the host: {args!r}")

    for name in ("system", "popen", "execv", "execve", "execvp", "spawnv", "posix_spawn", "fork"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, forbidden)
    monkeypatch.setattr(subprocess, "Popen", forbidden)
    target = tmp_path / "pwned"
    world = world_factory(sampling=SamplingConfig(max_tokens=12), think=ThinkBudget.parse("3"))
    world.run_turn(f"touch {target} && rm -rf {tmp_path}")
    world.run_turn(f'[{{"keystrokes": "echo hacked > {target}\\n", "duration": 1}}]')
    assert not target.exists() and tmp_path.exists()
    assert len(world.history) == 2


def test_cancel_between_tokens_keeps_the_history(world_factory):
    world = world_factory(sampling=SamplingConfig(max_tokens=200), think=ThinkBudget.parse("full"))
    world.run_turn("ls")
    cancel = threading.Event()
    seen = 0
    events = []
    for event in world.step("cat big.log", cancel):
        events.append(event)
        if isinstance(event, (ThinkingDelta, ObservationDelta)):
            seen += 1
            if seen == 3:
                cancel.set()
    assert isinstance(events[-1], TurnCancelled)
    assert len(world.history) == 1
    # The next turn still works and reuses the checkpoint of turn 1.
    record = world.run_turn("pwd")
    assert record.turn == 2 and record.tokens["prompt_evaluated"] < record.tokens["prompt_total"] // 5
