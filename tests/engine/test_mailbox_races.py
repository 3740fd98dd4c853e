"""Each session's order, owned once by the runner (session/runner/mailbox.py), raced on the real
llama.cpp path (the qwen35moe fixture, two places) with more sessions than places.

Each test runs its race 200 times with randomised timing (the slow tier, `pytest -m slow`) and
20 times in the default tier; each one failed on the runner that refused a session's second
command, cancelled only what ran, and closed a replaced session under its running turn.
"""

from __future__ import annotations

import os
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

ROUNDS = int(os.environ.get("AWL_RACE_ROUNDS", "200"))
#: The default tier's short race (about a tenth of the time); the slow tier runs ROUNDS.
SHORT_ROUNDS = int(os.environ.get("AWL_RACE_ROUNDS_SHORT", "20"))
SESSIONS = 3  # more sessions than the model's two places


@pytest.fixture(params=[pytest.param(SHORT_ROUNDS, id="short"),
                        pytest.param(ROUNDS, id="long", marks=pytest.mark.slow)])
def rounds(request) -> int:
    """How many times a test runs its race: a short race in the default tier, ROUNDS in the slow one."""
    return request.param


@pytest.fixture(scope="module")
def two_places(qwen_gguf):
    backend = LlamaBackend(qwen_gguf, n_ctx=4096, gpu_layers=0, parallel=2)
    yield backend
    backend.close()


def new(folder: Path, name: str, seed: int) -> NewSession:
    """A terminal session with a one-line system prompt (a prompt pack): with more sessions than
    places a session that comes back to a place another used evaluates its history again, so a
    short one keeps 200 rounds quick."""
    pack = folder / "pack"
    (pack / "terminal").mkdir(parents=True, exist_ok=True)
    (pack / "terminal" / "system_prompt.txt").write_text("You predict what a terminal shows next.\n")
    spec = SessionSpec(domain="terminal", think="off", max_tokens=8, temperature=0.8, seed=seed, prompts=pack)
    return NewSession.from_spec(spec.resolve(), folder / name)


def opened(runner: SessionRunner, folder: Path, name: str, seed: int, **options) -> str:
    outcome = runner.open(new(folder, name, seed), **options).wait()
    assert outcome.view is not None, outcome.said
    return outcome.view.id


def shorten(runner: SessionRunner, sid: str, turns: int, keep: int = 2) -> int:
    """Undo down to `keep` turns (queued one behind the other), so a branch stays short and a
    round costs the same at round 200 as at round 1; the turns it has then."""
    undos = [runner.undo(sid) for _ in range(max(turns - keep, 0))]
    for undo in undos:
        outcome = undo.wait()
        assert outcome.error is None and outcome.refused is None, outcome.said
    return min(turns, keep)


def pause(rng: random.Random) -> None:
    """A random moment: at a turn's start, in its middle or near its end."""
    threading.Event().wait(rng.choice([0, 0, rng.uniform(0, 0.002), rng.uniform(0, 0.02)]))


def test_a_sessions_second_command_waits_in_its_mailbox_in_order_and_is_counted(tmp_path, two_places, rounds):
    rng = random.Random(39)
    runner = SessionRunner(backend=LentBackend(two_places))
    try:
        sids = [opened(runner, tmp_path, f"s{n}.jsonl", n) for n in range(SESSIONS)]
        expected = {sid: 0 for sid in sids}
        most_waiting = 0
        for round_number in range(rounds):
            sent = []
            for sid in sids:
                commands = [("step", lambda sid=sid, n=round_number: runner.step(sid, f"echo {n}"))]
                if rng.random() < 0.5:
                    commands.append(("step", lambda sid=sid, n=round_number: runner.step(sid, f"echo {n}b")))
                if rng.random() < 0.4:
                    commands.append(("undo", lambda sid=sid: runner.undo(sid)))
                for name, send in commands:
                    one = send()
                    assert one, f"round {round_number}: {name} of a busy session was refused: {one}"
                    sent.append((sid, name, one))
                    if name == "step":
                        expected[sid] += 1
                    elif name == "undo":
                        expected[sid] -= 1
                most_waiting = max(most_waiting, runner.load_now.waiting)
                pause(rng)
            last: dict[str, int] = {}
            for sid, name, one in sent:
                outcome = one.wait()
                assert outcome.refused is None and outcome.error is None, (round_number, name, outcome.said)
                # Each command ran after the one before it in its mailbox: the views come in order.
                assert outcome.view.serial > last.get(sid, 0), (round_number, sid, name)
                last[sid] = outcome.view.serial
            assert all(runner.pending(sid) == 0 for sid in sids)
            for sid in sids:
                expected[sid] = shorten(runner, sid, expected[sid])
        assert most_waiting > SESSIONS, "commands behind their session's running one are counted as waiting"
    finally:
        runner.close()
    for sid in sids:
        assert len(read_trajectory(Path(sid)).current_branch()) == expected[sid]


def test_cancel_drops_what_waits_and_stops_what_runs_and_each_ends_cancelled_by_a_client(tmp_path, two_places, rounds):
    rng = random.Random(7)
    runner = SessionRunner(backend=LentBackend(two_places))
    try:
        sids = [opened(runner, tmp_path, f"c{n}.jsonl", n) for n in range(SESSIONS)]
        for round_number in range(rounds):
            target = rng.choice(sids)
            others = [runner.step(sid, f"echo other {round_number}") for sid in sids if sid != target]
            mine = [runner.step(target, f"echo {round_number}"), runner.undo(target), runner.step(target, "pwd")]
            before = len(read_trajectory(Path(target)).current_branch()) if round_number % 20 == 0 else None
            pause(rng)
            touched = runner.cancel(target)
            outcomes = [one.wait() for one in mine]
            # One operation: every command it touched ends cancelled by a client, never "closing".
            cancelled = [outcome for outcome in outcomes if outcome.cancelled]
            assert len(cancelled) == touched or (touched > len(cancelled) and outcomes[0].first(ev.TurnFinished)), \
                (round_number, touched, [o.said for o in outcomes])
            assert all(outcome.cancelled_by == "client" for outcome in cancelled), [o.said for o in cancelled]
            assert not any(outcome.error or outcome.refused for outcome in outcomes), [o.said for o in outcomes]
            if touched >= 2:
                assert outcomes[2].cancelled, "the last command waited behind another: a cancel drops it"
            assert runner.pending(target) == 0, "nothing of the session waits after its cancel"
            for other in others:
                assert not other.wait().cancelled, "another session's turn goes on"
            if before is not None and all(outcome.cancelled for outcome in outcomes):
                assert len(read_trajectory(Path(target)).current_branch()) == before
            for sid in sids:
                shorten(runner, sid, len(read_trajectory(Path(sid)).current_branch()))
    finally:
        runner.close()


def test_opening_a_session_that_replaces_another_waits_for_its_running_turn(tmp_path, two_places, rounds):
    rng = random.Random(11)
    runner = SessionRunner(backend=LentBackend(two_places))
    try:
        bystanders = [opened(runner, tmp_path, f"b{n}.jsonl", 100 + n) for n in range(SESSIONS - 1)]
        current = opened(runner, tmp_path, "r0.jsonl", 0)
        for round_number in range(1, rounds + 1):
            side = [runner.step(sid, "ls") for sid in bystanders]  # the places are contended
            turn = runner.step(current, f"echo {round_number}")
            pause(rng)
            replacing = runner.open(new(tmp_path, f"r{round_number}.jsonl", round_number), replaces=current)
            outcome, opening = turn.wait(), replacing.wait()
            assert outcome.error is None and opening.error is None, (outcome.said, opening.said)
            assert outcome.first(ev.TurnFinished) is not None, f"round {round_number}: {outcome.said}"
            replaced = current
            current = opening.view.id
            # The replaced session's turn and file are whole; it was closed after its turn.
            assert [t.action for t in read_trajectory(Path(replaced)).turns] == [f"echo {round_number}"]
            for one in side:
                assert one.wait().error is None
            for sid in bystanders:
                shorten(runner, sid, len(read_trajectory(Path(sid)).current_branch()))
            late = runner.step(replaced, "ls").wait()  # refused, or failed behind the queued close
            assert late.refused is not None or (late.error is not None and "closed" in late.error.message), late.said
            assert len(read_trajectory(Path(replaced)).turns) == 1
    finally:
        runner.close()
