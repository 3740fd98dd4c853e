"""More sessions than the model has slots, on the real llama.cpp path (the qwen35moe fixture).

The runner schedules turns against the model's capacity (its session slots): a turn beyond
it waits its turn, it is never refused because other sessions are busy, and the idle
prefetch of a session between turns yields its slot to a turn that needs it.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest

from agentworld_local.engine import events as ev
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.session.runner import NewSession, SessionRunner
from agentworld_local.session.spec import SessionSpec
from agentworld_local.testing import LentBackend
from agentworld_local.trajectory.reader import read_trajectory
from tests.engine.test_runner_side_by_side import Mailboxes, opened_sid

SLOTS = 2


@pytest.fixture(scope="module")
def two_slots(qwen_gguf):
    backend = LlamaBackend(qwen_gguf, n_ctx=4096, gpu_layers=0, parallel=SLOTS)
    yield backend
    backend.close()


def spec(seed: int) -> SessionSpec:
    return SessionSpec(domain="terminal", think="off", max_tokens=6, temperature=0.8, seed=seed)


def open_sessions(runner: SessionRunner, mail: Mailboxes, folder: Path, count: int) -> list[str]:
    sids = []
    for number in range(count):
        path = folder / f"s{number}.jsonl"
        assert runner.open(NewSession.from_spec(spec(number).resolve(), path))
        sids.append(opened_sid(mail, path))
    return sids


def refusals(mail: Mailboxes) -> list[ev.Refused]:
    found = []
    for box in mail.boxes.values():
        items = []
        while not box.empty():
            items.append(box.get())
        found += [item for item in items if isinstance(item, ev.Refused)]
        for item in items:  # put back: nothing else reads them after the play
            box.put(item)
    return found


@pytest.mark.parametrize("rounds", [pytest.param(1, id="once"), pytest.param(3, id="thrice", marks=pytest.mark.slow)])
def test_three_times_more_sessions_than_slots_step_undo_regenerate_and_cancel_with_no_refusal(tmp_path, two_slots, rounds):
    rng = random.Random(23)
    for round_number in range(rounds):
        folder = tmp_path / f"round{round_number}"
        folder.mkdir()
        mail = Mailboxes()
        runner = SessionRunner(mail, backend=LentBackend(two_slots))
        told: dict[str, list[ev.SessionEvent]] = {}
        try:
            sids = open_sessions(runner, mail, folder, 3 * SLOTS)

            def play(sid: str, seed: float) -> None:
                local = random.Random(seed)
                got = told.setdefault(sid, [])
                for number in range(4):
                    kind = local.choice(["step", "step", "undo", "regenerate"]) if number else "step"
                    accepted = (runner.step(sid, f"echo {Path(sid).stem}-{number}") if kind == "step"
                                else runner.undo(sid) if kind == "undo" else runner.regenerate(sid))
                    assert accepted, f"{kind} of {sid} refused"
                    got += mail.until_done(sid, timeout=1800)  # beyond pytest-timeout: only so a thread ends

            def cancels(stop: threading.Event, seed: float) -> None:
                local = random.Random(seed)
                while not stop.wait(local.uniform(0.005, 0.05)):
                    runner.cancel(local.choice(sids))

            stop = threading.Event()
            players = [threading.Thread(target=play, args=(sid, rng.random())) for sid in sids]
            chaos = threading.Thread(target=cancels, args=(stop, rng.random()))
            for thread in [*players, chaos]:
                thread.start()
            for thread in players:
                thread.join()  # no deadline: pytest-timeout stops a hang
            stop.set()
            chaos.join()
            assert not any(thread.is_alive() for thread in players)
        finally:
            runner.close()
        everything = [event for got in told.values() for event in got]
        wrong = [e for e in everything if isinstance(e, (ev.Refused, ev.ErrorEvent))]
        # An undo or regenerate of a session with no turn yet is that session's own mistake.
        wrong = [e for e in wrong if not (isinstance(e, ev.ErrorEvent) and "no turn" in e.message.lower())]
        assert not [e for e in wrong if not isinstance(e, ev.ErrorEvent) or "slot" in e.message], wrong
        assert not [e for e in wrong if isinstance(e, ev.ErrorEvent) and "busy" in e.message.lower()], wrong
        for sid in sids:
            saved = mail.saved.get(sid, [])
            path = Path(sid)
            on_file = [t.action for t in read_trajectory(path).turns] if path.exists() else []
            assert on_file == saved, f"round {round_number}: {sid}"
            assert all(action.startswith(f"echo {path.stem}-") for action in saved)
        # Every command the players sent ended with exactly one Ready.
        for sid, got in told.items():
            assert sum(isinstance(e, ev.Ready) for e in got) == 4, (sid, got)


def test_two_turns_on_two_slots_beside_a_third_sessions_prefetch_both_run(tmp_path, two_slots):
    for round_number in range(6):
        folder = tmp_path / f"round{round_number}"
        folder.mkdir()
        mail = Mailboxes()
        runner = SessionRunner(mail, backend=LentBackend(two_slots))
        try:
            a, b, c = open_sessions(runner, mail, folder, 3)
            assert runner.step(c, "ls")  # its Ready starts c's prefetch of the next turn in a slot
            assert isinstance(mail.until_done(c)[-1], ev.Ready)
            assert runner.step(a, "pwd") and runner.step(b, "whoami")
            for sid in (a, b):
                got = mail.until_done(sid)
                assert not [e for e in got if isinstance(e, (ev.Refused, ev.ErrorEvent))], got
                assert any(isinstance(e, ev.TurnFinished) for e in got), got
        finally:
            runner.close()


def test_a_turn_cancelled_while_it_waits_for_a_slot_ends_cancelled_with_one_ready(tmp_path, two_slots):
    from tests.tui.helpers import GatedBackend

    mail = Mailboxes()
    gated = GatedBackend(LentBackend(two_slots), after=0)
    runner = SessionRunner(mail, backend=gated)
    try:
        a, b, c = open_sessions(runner, mail, tmp_path, 3)
        assert runner.step(a, "ls") and runner.step(b, "pwd")
        assert gated.holding.wait()
        assert runner.step(c, "whoami"), "a third turn waits for a place, it is not refused"
        runner.cancel(c)
        got = mail.until_done(c)
        assert [type(e) for e in got][-2:] == [ev.TurnCancelled, ev.Ready], got
        gated.gate.set()
        for sid in (a, b):
            assert any(isinstance(e, ev.TurnFinished) for e in mail.until_done(sid))
        assert runner.load_now.waiting == 0
    finally:
        gated.gate.set()
        runner.close()
    assert not Path(c).exists(), "the cancelled session never got a turn"


@pytest.mark.slow  # a capacity test: 20 turns on two slots (the slow tier)
def test_the_checkpoint_budget_is_one_for_the_whole_model_not_one_per_slot(qwen_gguf):
    """--parallel must not multiply the memory turn checkpoints take (the plan never counts it)."""
    from agentworld_local.domains import get_domain
    from agentworld_local.engine.settings import SessionSettings
    from agentworld_local.engine.types import SamplingConfig, ThinkBudget
    from agentworld_local.engine.world import World

    backend = LlamaBackend(qwen_gguf, n_ctx=4096, gpu_layers=0, parallel=SLOTS)
    try:
        settings = SessionSettings(sampling=SamplingConfig(temperature=0.8, max_tokens=6), think=ThinkBudget.parse("off"))
        worlds = [World(backend.for_session(), get_domain("terminal"), settings) for _ in range(SLOTS)]
        worlds[0].run_turn("ls")
        state = max(len(c.state or b"") for s in backend.slots.all for c in s.checkpoints)
        assert state > 0, "the hybrid fixture checkpoints its recurrent state"
        backend.checkpoint_budget = 12 * state  # six per slot: the recent ones, the empty context, the pinned
        for action in ["pwd", "cd src", "ls -la", "cat a", "git status", "echo x", "whoami", "date", "uname"]:
            for world in worlds:
                world.run_turn(action)
        held = sum(len(c.state or b"") for s in backend.slots.all for c in s.checkpoints)
        assert held <= backend.checkpoint_budget, (held, backend.checkpoint_budget)
    finally:
        backend.close()
