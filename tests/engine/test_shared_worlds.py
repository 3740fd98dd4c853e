"""Shared worlds: within one, the same settings and actions meet byte-identical observations
whatever the session or backend; different actions meet their own; regenerate and undo."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine import events
from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import WORLD_KEY, World
from agentworld_local.session.core import Session
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.worlds import WorldSettings, create_world


def observed(text: str) -> str:
    return f"<think>\nt {text}\n</think>\n<predicted_observation>\n{text}\n</predicted_observation>"


def backend(*texts: str, name: str = "world-model", **options) -> ScriptedBackend:
    return ScriptedBackend([observed(text) for text in texts], name=name, **options)


@pytest.fixture
def world_name(request, monkeypatch, tmp_path) -> str:
    monkeypatch.setenv("AWL_WORLDS_DIR", str(tmp_path / "worlds"))
    return "w-" + request.node.name[:40].replace("[", "-").replace("]", "")


def session(tmp_path: Path, model: ScriptedBackend, world: str | None, name: str, *, seed: int = 0,
            domain: str = "terminal") -> Session:
    settings = SessionSettings(seed=seed, shared_world=world)
    return Session.create(World(model, get_domain(domain), settings), tmp_path / f"{name}.jsonl")


def play(target: Session, action: str) -> tuple[str, list[events.SessionEvent]]:
    seen = list(target.step(action))
    assert isinstance(seen[-1], events.TurnFinished), seen[-1]
    return seen[-1].record.observation, seen


def test_the_same_actions_meet_the_same_world_whatever_the_backend_says(tmp_path, world_name):
    first = session(tmp_path, backend("A1", "A2"), world_name, "first")
    # Another backend (the same model name) that would answer otherwise: the world answers.
    second_model = backend("B1", "B2", "B3")
    second = session(tmp_path, second_model, world_name, "second")
    assert play(first, "ls")[0] == "A1" and play(first, "pwd")[0] == "A2"
    observation, seen = play(second, "ls")
    assert observation == "A1"
    assert any(isinstance(event, events.FromWorld) and event.source == "store" for event in seen)
    assert play(second, "pwd")[0] == "A2"
    assert second_model.calls == 0  # not one model turn
    # Acting differently meets its own consequences (predicted, then kept for the next).
    assert play(second, "whoami")[0] == "B1"
    assert second_model.calls == 1
    assert play(first, "whoami")[0] == "B1"
    for target in (first, second):
        target.close()
    records = read_trajectory(tmp_path / "second.jsonl").current_branch()
    assert [r.extra[WORLD_KEY]["from"] for r in records] == ["store", "store", "model"]
    assert records[0].tokens["generated"] == 0


def test_without_a_world_each_session_imagines_its_own(tmp_path):
    first, second = session(tmp_path, backend("A1"), None, "a"), session(tmp_path, backend("B1"), None, "b")
    assert play(first, "ls")[0] == "A1" and play(second, "ls")[0] == "B1"
    assert WORLD_KEY not in read_trajectory(tmp_path / "a.jsonl").current_branch()[0].extra


def test_seed_model_and_history_are_part_of_the_world(tmp_path, world_name):
    play(session(tmp_path, backend("A1"), world_name, "a"), "ls")
    assert play(session(tmp_path, backend("S1"), world_name, "seed", seed=7), "ls")[0] == "S1"
    assert play(session(tmp_path, backend("M1", name="other-model"), world_name, "model"), "ls")[0] == "M1"
    other_history = session(tmp_path, backend("H1", "H2"), world_name, "history")
    play(other_history, "pwd")
    assert play(other_history, "ls")[0] == "H2"  # `ls` after `pwd` is another turn of the world


def test_regenerate_stores_another_sample_and_undo_returns_to_a_known_prefix(tmp_path, world_name):
    first = session(tmp_path, backend("A1", "A1-again", "A2"), world_name, "first")
    play(first, "ls")
    regenerated = [e for e in first.regenerate() if isinstance(e, events.TurnFinished)][0].record
    assert regenerated.observation == "A1-again"
    second_model = backend("X", "Y", "Z")
    second = session(tmp_path, second_model, world_name, "second")
    assert play(second, "ls")[0] == "A1"  # the first sample
    again = [e for e in second.regenerate() if isinstance(e, events.TurnFinished)][0].record
    assert again.observation == "A1-again" and second_model.calls == 0  # the second sample, from the store
    second.undo()
    assert play(second, "ls")[0] == "A1"


def test_sessions_that_reach_one_turn_together_cost_one_model_turn(tmp_path, world_name):
    model = backend("A1", "A2", "A3", "A4", parallel=8, delay_s=0.01)
    group = [session(tmp_path, model, world_name, f"rollout-{index}") for index in range(8)]
    results: list[str] = []
    barrier = threading.Barrier(len(group))

    def rollout(target: Session) -> None:
        barrier.wait()
        results.append(play(target, "ls")[0])

    threads = [threading.Thread(target=rollout, args=(target,)) for target in group]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == ["A1"] * 8
    assert model.calls == 1


def test_a_cancel_while_waiting_for_another_sessions_answer_cancels_only_the_waiting_turn(tmp_path, world_name):
    started, release = threading.Event(), threading.Event()

    class Held(ScriptedBackend):
        def _generate(self, *args, **kwargs):
            started.set()
            release.wait()
            yield from super()._generate(*args, **kwargs)

    held = Held([observed("A1")], name="world-model", parallel=2)
    first, second = session(tmp_path, held, world_name, "first"), session(tmp_path, held, world_name, "second")
    thread = threading.Thread(target=play, args=(first, "ls"))
    thread.start()
    started.wait()
    cancel = threading.Event()
    cancel.set()
    assert isinstance(list(second.step("ls", cancel))[-1], events.TurnCancelled)
    release.set()
    thread.join()
    assert play(second, "ls")[0] == "A1"


def test_shared_reads_answer_a_page_the_world_has_shown_after_any_history(tmp_path, world_name):
    create_world(world_name, WorldSettings(shared_reads=True))
    first = session(tmp_path, backend("page", "after"), world_name, "first", domain="web")
    play(first, "goto example.com")
    second_model = backend("other", "p2")
    second = session(tmp_path, second_model, world_name, "second", domain="web")
    play(second, "click 3")  # another history
    observation, seen = play(second, "goto example.com")
    assert observation == "page"
    assert any(isinstance(e, events.FromWorld) and e.source == "read" for e in seen)
    assert second_model.calls == 1


def test_reads_are_not_shared_unless_the_world_opts_in(tmp_path, world_name):
    play(session(tmp_path, backend("page"), world_name, "first", domain="web"), "goto example.com")
    second = session(tmp_path, backend("other", "p2"), world_name, "second", domain="web")
    play(second, "click 3")
    assert play(second, "goto example.com")[0] == "p2"


def test_a_resumed_session_rejoins_its_world(tmp_path, world_name):
    first = session(tmp_path, backend("A1", "A2"), world_name, "first")
    play(first, "ls")
    play(first, "pwd")
    other = session(tmp_path, backend("Z"), world_name, "other")
    play(other, "ls")
    other.close()
    resumed = Session.resume(tmp_path / "other.jsonl", backend("never"))
    assert resumed.world.settings.shared_world == world_name
    assert play(resumed, "pwd")[0] == "A2"
