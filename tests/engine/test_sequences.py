"""Several sessions over one loaded model, on the real llama.cpp path (both GGUF fixtures).

Each session keeps its own place in the context (a llama.cpp sequence per slot), so switching
sessions re-evaluates nothing; turns of sessions in flight at once share each llama_decode.
The reference for every output is the same session run alone on a model with one slot (what
the CLI and the TUI load).
"""

from __future__ import annotations

import threading

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.world import World

SESSIONS = {
    "a": (11, ["ls -la", "cd src", "cat main.py"]),
    "b": (22, ["whoami", "uname -a", "df -h"]),
}


def make_world(backend, seed: int, temperature: float) -> World:
    settings = SessionSettings(sampling=SamplingConfig(temperature=temperature, max_tokens=12),
                               think=ThinkBudget.parse("4"), seed=seed)
    return World(backend, get_domain("terminal"), settings)


def outputs(records) -> list[tuple[str, int | None, int]]:
    """Each turn's answer, the prompt tokens it evaluated and the prompt's length. A first
    turn's count depends on what its slot held before (the system prompt another session
    left is reused): not compared."""
    return [(r.raw_output, r.tokens["prompt_evaluated"] if i else None, r.tokens["prompt_total"])
            for i, r in enumerate(records)]


@pytest.fixture(scope="module", params=["qwen35moe", "llama"])
def models(request, qwen_gguf, llama_gguf):
    """(a one-slot model, a two-slot model) of one fixture."""
    path = qwen_gguf if request.param == "qwen35moe" else llama_gguf
    alone = LlamaBackend(path, n_ctx=8192, gpu_layers=0)
    shared = LlamaBackend(path, n_ctx=8192, gpu_layers=0, parallel=2)
    yield alone, shared
    alone.close()
    shared.close()


@pytest.fixture(scope="module")
def alone_runs(models):
    """Each session's turns run alone, greedy and seeded."""
    alone, _ = models
    runs = {}
    for temperature in (0.0, 0.8):
        for name, (seed, actions) in SESSIONS.items():
            world = make_world(alone, seed, temperature)
            runs[name, temperature] = outputs([world.run_turn(action) for action in actions])
    return runs


@pytest.mark.parametrize("temperature", [0.0, 0.8], ids=["greedy", "seeded"])
def test_two_sessions_interleaved_turn_by_turn_give_what_each_gives_alone(models, alone_runs, temperature):
    _, shared = models
    assert shared.n_ctx == 8192, "each sequence has the context asked for"
    worlds = {name: make_world(shared, seed, temperature) for name, (seed, _) in SESSIONS.items()}
    records = {name: [] for name in SESSIONS}
    for turn in range(3):
        for name, (_, actions) in SESSIONS.items():
            records[name].append(worlds[name].run_turn(actions[turn]))
    for name in SESSIONS:
        got = outputs(records[name])
        assert got == alone_runs[name, temperature], name
        # Switching sessions re-evaluates nothing: a later turn evaluates only its new tokens.
        for raw, evaluated, total in got[1:]:
            assert evaluated is not None and evaluated < total // 2


def test_sessions_in_flight_at_once_share_each_decode_and_give_what_each_gives_alone(models, alone_runs):
    _, shared = models
    rounds_before = shared._batcher.stats.rounds
    served_before = shared._batcher.stats.sequences
    worlds = {name: make_world(shared, seed, 0.8) for name, (seed, _) in SESSIONS.items()}
    records: dict[str, list] = {name: [] for name in SESSIONS}
    failures: list[BaseException] = []
    start = threading.Barrier(len(SESSIONS))

    def play(name: str) -> None:
        try:
            start.wait()
            for action in SESSIONS[name][1]:
                records[name].append(worlds[name].run_turn(action))
        except BaseException as error:  # noqa: BLE001 - reported by the test's thread
            failures.append(error)

    threads = [threading.Thread(target=play, args=(name,)) for name in SESSIONS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()  # no deadline: pytest-timeout stops a hang
    assert not failures, failures
    for name in SESSIONS:
        assert outputs(records[name]) == alone_runs[name, 0.8], name
    rounds = shared._batcher.stats.rounds - rounds_before
    served = shared._batcher.stats.sequences - served_before
    assert served > rounds * 1.3, f"{served} requests in {rounds} decodes: the sessions did not decode together"


def test_more_sessions_than_slots_the_least_recently_used_gives_its_slot_up(models, alone_runs):
    """Three sessions, two slots: the one that waited longest loses its place; its state is
    parked (parking.py), so its next turn, in the other slot, still evaluates only its new tokens."""
    _, shared = models
    worlds = [make_world(shared, seed, 0.0) for seed in (11, 22, 33)]
    first = [worlds[0].run_turn("ls"), worlds[1].run_turn("id")]
    first += [worlds[0].run_turn("pwd"), worlds[1].run_turn("whoami")]
    assert all(record.tokens["prompt_evaluated"] > 0 for record in first)
    worlds[2].run_turn("env")  # takes the first session's slot (the least recently used)
    second_of_third = worlds[2].run_turn("date")
    third_of_first = worlds[0].run_turn("date")  # takes the second's slot (now the least recently used)
    assert second_of_third.tokens["prompt_evaluated"] < second_of_third.tokens["prompt_total"] // 2
    # Its parked state is set into the slot it gets: it restores where its second turn's action
    # began, past all of turn 1's prompt, as in its own slot (issue 43).
    assert third_of_first.tokens["prompt_evaluated"] < third_of_first.tokens["prompt_total"] - first[0].tokens["prompt_total"]
    assert shared.parked.restored >= 1
