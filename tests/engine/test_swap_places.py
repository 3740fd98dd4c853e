"""Sessions beyond the model's places keep their state (issue 43), on the real llama.cpp path.

2N sessions take turns on a model with N places (N = 2), so a session's place is taken by
another between each of its turns: the state it left is parked (engine/llama/parking.py) and
set back in whichever place it gets next. The reference is the same session run alone (its
own model, its place never taken): each later turn evaluates exactly the tokens it evaluates
alone (only its new ones), and its answers are byte-identical (greedy). Without parking a
later turn evaluated its whole history again.
"""

from __future__ import annotations

import ctypes
import gc
from pathlib import Path

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine import events as ev
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.llama.checkpoints import Checkpoint
from agentworld_local.engine.llama.parking import ParkedSequence, ParkedStates
from agentworld_local.engine.llama.speculation import DraftPacing
from agentworld_local.engine.llama.state_cache import StateCache
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.world import World

N = 2  # places
SESSIONS = [  # 2N sessions: (seed, actions)
    (11, ["ls -la", "cd src", "cat main.py"]),
    (22, ["whoami", "uname -a", "df -h"]),
    (33, ["git status", "git log --oneline", "git diff"]),
    (44, ["python3 --version", "pip list", "python3 main.py"]),
]


def make_world(backend, seed: int) -> World:
    settings = SessionSettings(sampling=SamplingConfig(temperature=0.0, max_tokens=10),
                               think=ThinkBudget.parse("4"), seed=seed)
    return World(backend.for_session(), get_domain("terminal"), settings)


def outputs(records) -> list[tuple[str, int | None, int]]:
    """Each turn's answer, the prompt tokens it evaluated and the prompt's length. A first
    turn's count depends on what its place held (another session's system prompt is reused):
    not compared."""
    return [(r.raw_output, r.tokens["prompt_evaluated"] if i else None, r.tokens["prompt_total"])
            for i, r in enumerate(records)]


def load(path: Path, **options) -> LlamaBackend:
    return LlamaBackend(path, n_ctx=4096, gpu_layers=0, parallel=N, **options)


@pytest.fixture(scope="module", params=[pytest.param("llama", marks=pytest.mark.slow), "qwen35moe"])  # the hybrid in the default tier
def model_path(request, llama_gguf, qwen_gguf) -> Path:
    return llama_gguf if request.param == "llama" else qwen_gguf


@pytest.fixture(scope="module")
def alone(model_path):
    """Each session run alone: a model of its own, its place never taken."""
    runs = {}
    for seed, actions in SESSIONS:
        backend = load(model_path)
        try:
            world = make_world(backend, seed)
            runs[seed] = outputs([world.run_turn(action) for action in actions])
        finally:
            backend.close()
    return runs


def play_in_turn(backend: LlamaBackend) -> dict[int, list]:
    """Every session's turn 1, then every session's turn 2, ...: each turn of session k finds
    its place taken by session k - N (the least recently used place goes)."""
    worlds = {seed: make_world(backend, seed) for seed, _ in SESSIONS}
    records: dict[int, list] = {seed: [] for seed in worlds}
    for turn in range(len(SESSIONS[0][1])):
        for seed, actions in SESSIONS:
            records[seed].append(worlds[seed].run_turn(actions[turn]))
    return {seed: outputs(got) for seed, got in records.items()}


def test_2n_sessions_on_n_places_evaluate_only_their_new_tokens_with_the_answers_they_get_alone(model_path, alone):
    backend = load(model_path)
    try:
        got = play_in_turn(backend)
        turns = len(SESSIONS[0][1])
        # Every turn after the first N found its place taken and parked the state that was there;
        # every later turn set its own back, or kept the place's when that reached as far into its
        # prompt (a turn 2 whose turn-1 start another session evaluated alike).
        assert backend.parked.parked == len(SESSIONS) * turns - N
        assert backend.parked.restored + backend.parked.kept == len(SESSIONS) * (turns - 1)
        assert backend.parked.restored >= len(SESSIONS)
    finally:
        backend.close()
    assert got == alone
    later = [evaluated for runs in got.values() for _, evaluated, _ in runs[1:]]
    totals = [total for runs in got.values() for _, _, total in runs[1:]]
    assert all(e < t // 2 for e, t in zip(later, totals)), (later, totals)  # the history was not read again


def test_when_memory_is_short_the_states_go_to_disk_and_come_back_the_same(model_path, alone, tmp_path):
    """A memory budget of nothing: every parked state goes to a file under the state cache's
    folder and is read back when its session comes back; the folder goes at close."""
    backend = load(model_path, state_cache=StateCache(tmp_path / "states"))
    seen_on_disk: list[int] = []
    run_turn = World.run_turn

    def counting(world, action, *args, **options):
        seen_on_disk.append(sum(1 for _ in (tmp_path / "states").glob("parked-*/*.seqstate")))
        return run_turn(world, action, *args, **options)

    try:
        backend.parked.budget = 0
        World.run_turn = counting
        got = play_in_turn(backend)
        assert backend.parked.spilled == backend.parked.parked > 0
        assert backend.parked.bytes == 0
    finally:
        World.run_turn = run_turn
        backend.close()
    assert got == alone
    assert max(seen_on_disk) == N  # the sessions waiting for a place, each in its file
    assert not list((tmp_path / "states").glob("parked-*")), "the folder goes with the model"


def test_a_closed_session_drops_its_parked_state(qwen_gguf):
    backend = load(qwen_gguf)
    try:
        worlds = [make_world(backend, seed) for seed, _ in SESSIONS[:3]]
        for world in worlds:
            world.run_turn("ls")
        first, second = worlds[0].backend, worlds[1].backend
        assert backend.parked.holds(first)  # the third session took its place
        first.close()
        assert not backend.parked.holds(first)
        worlds[0].run_turn("pwd")  # it starts afresh, in the place the second session held
        assert backend.parked.holds(second) and len(backend.parked) == 1
        del worlds[1], second
        gc.collect()
        assert len(backend.parked) == 0, "a session collected without closing drops its state too"
    finally:
        backend.close()


def test_a_probe_of_the_same_history_leaves_its_place_further_on_and_the_session_keeps_it(model_path):
    """One place (the CLI, the TUI): a probe (a throwaway fork) takes the session's place and
    parks its state; the place then holds the session's history and the probe's start, further
    into the session's next prompt than its parked state: the session goes on from the place."""
    actions = SESSIONS[0][1]
    alone = LlamaBackend(model_path, n_ctx=4096, gpu_layers=0)
    probed = LlamaBackend(model_path, n_ctx=4096, gpu_layers=0)
    try:
        reference = make_world(alone, 11)
        expected = [reference.run_turn(action) for action in actions]
        world = make_world(probed, 11)
        got = [world.run_turn(action) for action in actions[:2]]
        assert world.probe("ls /") is not None
        assert probed.parked.parked == 1
        got.append(world.run_turn(actions[2]))
        assert (probed.parked.kept, probed.parked.restored) == (1, 0)
    finally:
        alone.close()
        probed.close()
    assert [r.raw_output for r in got] == [r.raw_output for r in expected]
    assert got[2].tokens["prompt_evaluated"] <= expected[2].tokens["prompt_evaluated"]


def parked(size: int, tokens: list[int]) -> ParkedSequence:
    """A parked state of `size` bytes (plus a 7-byte checkpoint)."""
    buffer = (ctypes.c_uint8 * size).from_buffer_copy(bytes(range(256)) * (size // 256) + bytes(size % 256))
    return ParkedSequence(tokens, [Checkpoint(0, None), Checkpoint(3, b"state-3")], {3}, [1], DraftPacing(misses=2), buffer)


class Owner:
    """A session's view stands in here."""


def test_parked_states_spill_the_least_recently_parked_first_and_read_back_the_same(tmp_path):
    one = 1000 + len(b"state-3")
    states = ParkedStates(2 * one, lambda: tmp_path, disk_budget=2 * one)
    a, b, c, d = Owner(), Owner(), Owner(), Owner()
    for owner, tokens in ((a, [1, 2, 3]), (b, [4, 5, 6]), (c, [7, 8, 9])):
        states.park(owner, parked(1000, tokens))
    assert states.on_disk(a) and not states.on_disk(b) and not states.on_disk(c)
    assert states.bytes == 2 * one and states.disk_bytes == one
    back = states.take(a)
    assert back is not None and back.tokens == [1, 2, 3] and bytes(back.buffer) == bytes(parked(1000, []).buffer)
    assert [(k.n_tokens, k.state) for k in back.checkpoints] == [(0, None), (3, b"state-3")]
    assert back.pinned == {3} and back.known_start == [1] and back.pacing.misses == 2
    assert not list(tmp_path.glob("parked-*/*")), "a state read back leaves no file"
    # Disk full too: the oldest spilled state is dropped for the next one.
    states.park(d, parked(1000, [10]))  # b goes to disk
    states.park(a, parked(1000, [1, 2, 3, 4]))  # c goes to disk
    states.park(Owner(), parked(1000, [11]))  # d goes to disk: b, the oldest there, is dropped
    assert not states.holds(b) and states.on_disk(c) and states.on_disk(d) and states.dropped == 1
    assert states.take(b) is None
    states.close()
    assert not list(tmp_path.glob("parked-*"))


def test_a_session_that_asks_while_its_state_is_being_copied_gets_it_once_copied(tmp_path):
    """The handover reserves the entry under the pool's lock; the new owner copies the state
    after. A session back meanwhile waits for the copy, and one that could not be made is a miss."""
    import threading

    states = ParkedStates(10_000, lambda: tmp_path)
    owner, other = Owner(), Owner()
    pending = ParkedSequence([1, 2], [Checkpoint(0, None)], set(), [], DraftPacing())
    assert states.reserve(owner, pending)
    assert not states.reserve(owner, ParkedSequence([9], [Checkpoint(0, None)], set(), [], DraftPacing())), \
        "a session that never used the place it loses keeps what it parked before"
    waiting = threading.Event()

    class Watched(threading.Event):
        def wait(self, timeout=None):
            waiting.set()
            return super().wait(timeout)

    pending.ready = Watched()
    got: list = []
    asking = threading.Thread(target=lambda: got.append(states.take(owner)))
    asking.start()
    assert waiting.wait(10) and not got  # it waits for the copy
    copy = parked(300, [])
    states.filled(pending, copy.buffer)
    asking.join(10)
    assert got[0] is pending and bytes(got[0].buffer) == bytes(copy.buffer)
    failed = ParkedSequence([3], [Checkpoint(0, None)], set(), [], DraftPacing())
    assert states.reserve(other, failed)
    states.filled(failed, None)
    assert not states.holds(other) and states.take(other) is None


def test_a_damaged_spilled_state_is_a_miss_not_an_error(tmp_path):
    states = ParkedStates(0, lambda: tmp_path)
    owner = Owner()
    states.park(owner, parked(600, [1]))
    (state,) = tmp_path.glob("parked-*/*.seqstate")
    state.write_bytes(b"damaged")
    assert states.take(owner) is None and states.dropped == 1
    assert not list(tmp_path.glob("parked-*/*"))


@pytest.mark.parametrize("fixture_name", [pytest.param("llama_gguf", marks=pytest.mark.slow), "qwen_gguf"])
def test_2n_sessions_through_the_runner_on_n_places_read_no_history_again(fixture_name, request, tmp_path):
    """The runner's way (as `awl serve` runs RL episodes): 2N sessions step at once on N places,
    places change hands between threads; answers and prompt tokens evaluated are those of a model
    with a place per session. (No idle prefetch between turns: what it evaluates is counted by no
    turn, and when it runs depends on the threads.)"""
    from agentworld_local.models.offload_options import OffloadOptions
    import threading

    from agentworld_local.session.runner import NewSession, SessionRunner
    from agentworld_local.session.spec import SessionSpec
    from agentworld_local.testing import LentBackend
    from agentworld_local.trajectory.reader import read_trajectory
    from tests.engine.test_runner_side_by_side import Mailboxes, opened_sid

    path = request.getfixturevalue(fixture_name)

    def play(places: int, folder: Path) -> dict[int, list]:
        folder.mkdir()
        backend = LlamaBackend(path, n_ctx=4096, gpu_layers=0, parallel=places, offload=OffloadOptions(prefetch=False))
        mail = Mailboxes()
        runner = SessionRunner(mail, backend=LentBackend(backend))
        failures: list[object] = []
        try:
            sids = {}
            for seed, _ in SESSIONS:
                file = folder / f"s{seed}.jsonl"
                spec = SessionSpec(domain="terminal", think="off", max_tokens=8, temperature=0.0, seed=seed)
                assert runner.open(NewSession.from_spec(spec.resolve(), file))
                sids[seed] = opened_sid(mail, file)

            def steps(seed: int, actions: list[str]) -> None:
                for action in actions:
                    assert runner.step(sids[seed], action)
                    got = mail.until_done(sids[seed], timeout=1800)  # beyond pytest-timeout: only so a thread ends
                    failures.extend(e for e in got if isinstance(e, (ev.Refused, ev.ErrorEvent)))

            threads = [threading.Thread(target=steps, args=session) for session in SESSIONS]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()  # no deadline: pytest-timeout stops a hang
            parked = backend.parked.restored
        finally:
            runner.close()
            backend.close()
        assert not failures, failures
        turns = {seed: read_trajectory(Path(sid)).turns for seed, sid in sids.items()}
        return {seed: [(t.raw_output, t.tokens["prompt_evaluated"] if i else None, t.tokens["prompt_total"])
                       for i, t in enumerate(got)] for seed, got in turns.items()}, parked

    swapped, restored = play(N, tmp_path / "swapped")
    placed, _ = play(len(SESSIONS), tmp_path / "placed")
    assert swapped == placed
    assert restored > 0


def test_the_memory_plan_counts_the_parked_states_and_parking_keeps_within_it(qwen_gguf):
    """The estimate counts one full context's state for parked sessions among what awl holds
    (up to PARKED_STATE_BUDGET), `awl models info --plan` shows it, and the parked states' RAM
    budget is no more than the plan's budget and the RAM the plan leaves plus what it counted."""
    from types import SimpleNamespace

    from agentworld_local.cli.models_info import collect
    from agentworld_local.engine.llama.parking import parked_budget
    from agentworld_local.models import memory
    from agentworld_local.models.inspect import inspect_gguf

    estimate = memory.estimate_memory(inspect_gguf(qwen_gguf), 8192)
    assert estimate.parked_state_bytes == estimate.kv_bytes + estimate.recurrent_bytes
    assert estimate.held_bytes == estimate.checkpoint_bytes + estimate.prompt_state_bytes + estimate.parked_state_bytes
    long = estimate.with_ctx(16 * 1024**2)  # 16M tokens: 8 GiB of KV cells
    assert long.parked_state_bytes == memory.PARKED_STATE_BUDGET
    facts = collect(str(qwen_gguf), plan=True, ctx=8192)
    assert facts["memory"]["parked_state_bytes"] == estimate.parked_state_bytes
    assert facts["plan"]["cpu_bytes"] >= estimate.parked_state_bytes
    gib = 1024**3
    assert parked_budget(SimpleNamespace(ram_budget=10 * gib, cpu_bytes=9 * gib)) == gib
    assert parked_budget(SimpleNamespace(ram_budget=10 * gib, cpu_bytes=9 * gib), counted=gib // 2) == gib + gib // 2
    assert parked_budget(SimpleNamespace(ram_budget=10 * gib, cpu_bytes=11 * gib)) == 0  # nothing left: to disk
    assert parked_budget(SimpleNamespace(ram_budget=100 * gib, cpu_bytes=gib)) == memory.PARKED_STATE_BUDGET
    assert 0 < parked_budget() <= memory.PARKED_STATE_BUDGET


def test_a_session_that_comes_back_pauses_the_others_once_for_both_copies(qwen_gguf):
    """Each hold of the context (a state copied out or in, a cache trim) waits for the decode
    round in flight and pauses the other sessions' decodes: the state of the session that loses
    a place and the state of the one that comes back are copied in the same hold, so a turn that
    changes places holds the context once more than the same turn in a place of its own."""
    import contextlib

    def holds_while_playing(places: int) -> tuple[int, LlamaBackend]:
        backend = LlamaBackend(qwen_gguf, n_ctx=4096, gpu_layers=0, parallel=places)
        count = [0]
        exclusive = backend._batcher.exclusive

        @contextlib.contextmanager
        def counted():
            count[0] += 1
            with exclusive():
                yield

        backend._batcher.exclusive = counted
        try:
            play_in_turn(backend)
        finally:
            backend._batcher.exclusive = exclusive
        return count[0], backend

    placed, alone = holds_while_playing(len(SESSIONS))
    swapped, backend = holds_while_playing(N)
    try:
        handovers = backend.parked.parked
        assert handovers == len(SESSIONS) * len(SESSIONS[0][1]) - N and alone.parked.parked == 0
        assert backend.parked.restored == len(SESSIONS) * (len(SESSIONS[0][1]) - 1)
        assert swapped <= placed + handovers, (swapped, placed, handovers)
    finally:
        backend.close()
        alone.close()
