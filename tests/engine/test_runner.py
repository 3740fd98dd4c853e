"""The runner: one owner for the model under every face (session/runner/runner.py).

Driven directly, as a face drives it: commands in, events out. The answer path runs on the
scripted backend (realistic raw answers); loads, close and cancel run on the real llama.cpp
path with the generated fixtures. Each race runs many times.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from agentworld_local.engine import events as ev
from agentworld_local.engine.scripted import ScriptedBackend
from agentworld_local.errors import Cancelled
from agentworld_local.session.runner import NewSession, SessionRunner
from agentworld_local.testing import EventLog
from agentworld_local.session.spec import SessionSpec
from agentworld_local.testing.answers import ANSWERS
from agentworld_local.trajectory.reader import read_trajectory

RAW = ANSWERS[0].raw


def new_session(tmp_path: Path, name: str = "s.jsonl", **options) -> NewSession:
    return NewSession.from_spec(SessionSpec(domain="terminal", think="full", **options).resolve(), tmp_path / name)


def run(log: EventLog) -> list[tuple[str | None, ev.SessionEvent]]:
    """One command's events, up to its Ready (or Refused)."""
    return list(log.until_ready())


def kinds(items) -> list[type]:
    return [type(event) for _, event in items]


def started(events) -> list[tuple[str | None, ev.SessionEvent]]:
    """From `events` (a `log.until_ready()` being read), those up to the turn's TurnStarted (the
    `action` event): the turn is then surely running (a scripted answer with `delay_s` lasts a
    second), on a fast machine or a loaded one. The caller reads the rest from the same `events`."""
    items = []
    while not items or not isinstance(items[-1][1], ev.TurnStarted):
        items.append(next(events))
    return items


def until_command_done(log: EventLog) -> list[tuple[str | None, ev.SessionEvent]]:
    """Events up to the next Ready, refusals of other commands included."""
    items = []
    while not items or not isinstance(items[-1][1], ev.Ready):
        items += run(log)
    return items


def opened(log: EventLog, runner: SessionRunner, tmp_path: Path, **options) -> str:
    assert runner.open(new_session(tmp_path, **options))
    items = run(log)
    session = next(event for _, event in items if isinstance(event, ev.SessionOpened))
    return session.path


@pytest.fixture
def slow():
    """A scripted backend slow enough that commands can arrive while a turn runs."""
    return ScriptedBackend([RAW], delay_s=0.01)


def test_a_session_runs_through_the_runner_and_every_event_carries_where_it_is(tmp_path):
    log = EventLog()
    runner = SessionRunner(log, backend=ScriptedBackend([RAW]))
    try:
        sid = opened(log, runner, tmp_path)
        assert runner.step(sid, "ls -la")
        items = run(log)
        assert {session for session, _ in items} == {sid}
        finished = [event for _, event in items if isinstance(event, ev.TurnFinished)]
        assert [(e.turns, e.head) for e in finished] == [(1, 1)]
        assert items[-1][1] == ev.Ready("step", 1, 1)
        assert finished[0].record.observation == ANSWERS[0].observation
        runner.undo(sid)
        items = run(log)
        assert items[0][1] == ev.Undone(0, 0)
        runner.control(sid, "the disk is full")
        assert run(log)[0][1] == ev.ControlAdded("the disk is full", 1)
    finally:
        runner.close()
    assert read_trajectory(tmp_path / "s.jsonl").pending_controls == ["the disk is full"]


def test_a_sessions_commands_wait_in_its_mailbox_and_run_in_order_and_only_closed_or_unknown_is_refused(tmp_path, slow):
    log = EventLog()
    runner = SessionRunner(log, backend=slow)
    # No session yet: a session command is refused, not queued.
    assert not runner.step("nope", "ls")
    assert isinstance(run(log)[-1][1], ev.Refused)
    sid = opened(log, runner, tmp_path)
    first = runner.step(sid, "ls")
    # While the turn runs: every command of its session is accepted and waits behind it, in order.
    sent = [runner.control(sid, "the disk is full"), runner.step(sid, "pwd"), runner.undo(sid),
            runner.regenerate(sid), runner.list_files(sid), runner.fork(sid, 1, tmp_path / "f.jsonl", switch=False)]
    assert all(sent), "a second command of a session is never refused for being second"
    assert runner.load_now.waiting >= 1, "what waits is counted"
    outcomes = [first.wait(), *(one.wait() for one in sent)]
    assert not any(outcome.refused or outcome.error for outcome in outcomes), [o.said for o in outcomes]
    readies = [outcome.said[-1] for outcome in outcomes]
    assert [ready.command for ready in readies] == ["step", "control", "step", "undo", "regenerate", "files", "fork"]
    # Each ran after the one before it ended: the views follow one another.
    assert [ready.turns for ready in readies[:5]] == [1, 1, 2, 1, 1]
    assert outcomes[2].first(ev.TurnFinished).record.controls_added == ["the disk is full"]
    traj = read_trajectory(tmp_path / "s.jsonl")
    assert [t.action for t in traj.current_branch()] == ["ls"]
    assert (tmp_path / "f.jsonl").exists()
    # After close: everything is refused; a second close does nothing.
    runner.close()
    runner.close()
    assert not runner.undo(sid)
    assert not runner.load("scripted:x")
    messages = [event for _, event in log.drain() if isinstance(event, ev.Refused)]
    assert "closed" in messages[-1].message


def test_cancel_stops_the_turn_and_the_next_command_is_accepted_behind_it(tmp_path, slow):
    log = EventLog()
    runner = SessionRunner(log, backend=slow)
    try:
        sid = opened(log, runner, tmp_path)
        runner.step(sid, "ls")
        events = log.until_ready()
        before = started(events)  # not a fixed sleep: it failed where the turn had not begun yet
        runner.cancel()
        # Accepted: what runs was cancelled, so this one cannot race it.
        assert runner.step(sid, "pwd")
        first = before + list(events)
        cancelled = [event for _, event in first if isinstance(event, ev.TurnCancelled)]
        assert cancelled == [ev.TurnCancelled(1, 0, 0)]
        second = run(log)
        assert any(isinstance(event, ev.TurnFinished) for _, event in second)
    finally:
        runner.close()
    assert [t.action for t in read_trajectory(tmp_path / "s.jsonl").turns] == ["pwd"]


def test_regenerate_is_told_as_one_and_a_face_following_the_events_never_misses_a_turn(tmp_path):
    """The TUI's timeline used to read the live session when the undo notice arrived, and
    found a turn it did not hold yet. Events carry the branch, so a face that only follows
    them (here on a lagging thread, as a busy UI thread lags) is always consistent."""
    log = EventLog()
    runner = SessionRunner(log, backend=ScriptedBackend([RAW]))
    follower_turns: dict[int, object] = {}
    head = 0
    problems = []
    try:
        sid = opened(log, runner, tmp_path)
        runner.step(sid, "ls")
        for _, event in run(log):
            if isinstance(event, ev.TurnFinished):
                follower_turns[event.head] = event.record
                head = event.head
        for attempt in range(1, 30):
            runner.regenerate(sid)
            for _, event in run(log):
                time.sleep(random.random() / 2000)
                if isinstance(event, (ev.Regenerated, ev.Undone)):
                    if event.head and event.head not in follower_turns:
                        problems.append(event)
                    head = event.head
                    assert isinstance(event, ev.Regenerated) and event.attempt == attempt
                elif isinstance(event, ev.TurnFinished):
                    follower_turns[event.head] = event.record
                    head = event.head
        traj = read_trajectory(tmp_path / "s.jsonl")
    finally:
        runner.close()
    assert problems == []
    assert head == traj.head and len(follower_turns) == len(traj.turns) == 30


def test_regenerate_prints_as_a_regenerate_event_on_the_wire(tmp_path):
    log = EventLog()
    runner = SessionRunner(log, backend=ScriptedBackend([RAW]))
    try:
        sid = opened(log, runner, tmp_path)
        runner.step(sid, "ls")
        run(log)
        runner.regenerate(sid)
        first = run(log)[0][1]
    finally:
        runner.close()
    assert first.to_dict() == {"event": "regenerate", "turn": 1, "attempt": 1, "turns": 0, "head": 0}


def test_a_new_session_closed_before_its_first_turn_leaves_no_file(tmp_path):
    log = EventLog()
    runner = SessionRunner(log, backend=ScriptedBackend([RAW]))
    sid = opened(log, runner, tmp_path)
    assert (tmp_path / "s.jsonl").exists()
    runner.close_session(sid)
    assert any(isinstance(event, ev.Discarded) for _, event in run(log))
    assert not (tmp_path / "s.jsonl").exists()
    # One with a turn is kept, and so when the runner closes.
    sid = opened(log, runner, tmp_path, seed=1)
    runner.step(sid, "ls")
    run(log)
    runner.close()
    assert len(read_trajectory(tmp_path / "s.jsonl").turns) == 1


def test_a_fork_goes_on_in_the_new_file_and_the_old_one_records_it(tmp_path):
    log = EventLog()
    runner = SessionRunner(log, backend=ScriptedBackend([RAW]))
    try:
        sid = opened(log, runner, tmp_path)
        for action in ("ls", "pwd"):
            runner.step(sid, action)
            run(log)
        runner.fork(sid, 1, tmp_path / "fork.jsonl")
        items = run(log)
        forked = next(event for _, event in items if isinstance(event, ev.Forked))
        new = next(event for _, event in items if isinstance(event, ev.SessionOpened))
        assert (forked.turns, forked.head, new.turns, new.head) == (1, 1, 1, 1)
        assert new.view.branch[-1].action == "ls"
        assert runner.step(new.path, "whoami")
        run(log)
        assert not runner.step(sid, "x")  # the old session was closed by the switch
        assert "no session" in run(log)[-1][1].message
    finally:
        runner.close()


# -- the model's lifecycle on the real llama.cpp path ------------------------------------------


def recording_loader(made: list):
    from agentworld_local.engine.loading import load_backend

    def loader(model, **options):
        backend = load_backend(model, **options)
        made.append(backend)
        return backend

    return loader


def test_a_cancelled_progress_callback_stops_a_real_load(qwen_gguf):
    from agentworld_local.engine.loading import load_backend

    with pytest.raises(Cancelled):
        load_backend(str(qwen_gguf), gpu_layers="0", progress=lambda fraction: False)


def test_load_a_then_back_then_load_b_runs_on_b_and_closes_a(tmp_path, qwen_gguf, llama_gguf):
    for attempt in range(12):
        made: list = []
        log = EventLog()
        runner = SessionRunner(log, loader=recording_loader(made))
        options = {"gpu_layers": "0", "ctx": 2048}
        runner.open(new_session(tmp_path, f"a{attempt}.jsonl"), model=str(llama_gguf), load_options=options)
        time.sleep(random.random() / 50)
        runner.cancel()  # Escape on the loading screen
        assert runner.open(new_session(tmp_path, f"b{attempt}.jsonl"), model=str(qwen_gguf), load_options=options)
        items = until_command_done(log) + until_command_done(log)
        session = [event for _, event in items if isinstance(event, ev.SessionOpened)][-1]
        assert session.view.model.architecture == "qwen35moe"
        assert not (tmp_path / f"a{attempt}.jsonl").exists()
        runner.close()
        assert all(backend._freed for backend in made), "every model the runner loaded is closed"
        assert made[-1].info.architecture == "qwen35moe"


def test_quitting_during_a_load_creates_no_file_and_frees_the_model(tmp_path, qwen_gguf):
    for attempt in range(12):
        made: list = []
        log = EventLog()
        runner = SessionRunner(log, loader=recording_loader(made))
        runner.open(new_session(tmp_path, f"q{attempt}.jsonl"), model=str(qwen_gguf),
                    load_options={"gpu_layers": "0", "ctx": 2048})
        time.sleep(random.random() / 50)
        assert runner.close().done, "close() returns once the runner has disposed of everything"
        assert not (tmp_path / f"q{attempt}.jsonl").exists()
        assert all(backend._freed for backend in made)


def test_a_failed_load_is_one_error_and_the_runner_goes_on(tmp_path, qwen_gguf):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    log = EventLog()
    runner = SessionRunner(log)
    try:
        runner.open(new_session(tmp_path, "bad.jsonl"), model=str(bad), load_options={"gpu_layers": "0"})
        items = run(log)
        errors = [event for _, event in items if isinstance(event, ev.ErrorEvent)]
        assert len(errors) == 1 and errors[0].hint and "Unexpected" not in errors[0].message
        assert not (tmp_path / "bad.jsonl").exists()
        runner.open(new_session(tmp_path, "good.jsonl"), model=str(qwen_gguf), load_options={"gpu_layers": "0", "ctx": 2048})
        assert any(isinstance(event, ev.SessionOpened) for _, event in run(log))
    finally:
        runner.close()


CLOSE_DURING_TURN = r"""
import sys, threading, time, random
from agentworld_local.engine import events as ev
from agentworld_local.session.runner import NewSession, SessionRunner
from agentworld_local.testing import EventLog
from agentworld_local.session.spec import SessionSpec
from agentworld_local.engine.loading import load_backend
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World

gguf, folder, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
for n in range(rounds):
    # Through the runner: close while the turn decodes.
    log = EventLog()
    runner = SessionRunner(log, backend=load_backend(gguf, gpu_layers="0", ctx=4096))
    spec = SessionSpec(domain="terminal", think="off", max_tokens=2000).resolve()
    runner.open(NewSession.from_spec(spec, f"{folder}/c{n}.jsonl"))
    list(log.until_ready())
    runner.step(f"{folder}/c{n}.jsonl", "ls -la")
    time.sleep(random.random() / 20)
    runner.close()
    # The backend alone, closed from another thread while it decodes.
    backend = load_backend(gguf, gpu_layers="0", ctx=4096)
    world = World(backend, spec.domain, SessionSettings(sampling=SamplingConfig(max_tokens=2000), think=ThinkBudget("off")))
    started = threading.Event()
    def turn():
        for event in world.step("ls"):
            started.set()
    worker = threading.Thread(target=turn)
    worker.start()
    started.wait()
    backend.close()
    backend.close()
    worker.join()
print("ok")
"""


@pytest.mark.parametrize("rounds", [pytest.param(3, id="short"), pytest.param(10, id="long", marks=pytest.mark.slow)])
def test_closing_during_a_generation_never_crashes_the_process(tmp_path, qwen_gguf, rounds):
    """`LlamaBackend.close()` during a decode used to segfault (exit 139). Each round closes at a
    random moment: 3 rounds in the default tier, 10 in the slow one."""
    import subprocess
    import sys

    script = tmp_path / "close_during_turn.py"
    script.write_text(CLOSE_DURING_TURN)
    done = subprocess.run([sys.executable, str(script), str(qwen_gguf), str(tmp_path), str(rounds)],
                          capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_a_change_queued_behind_a_cancelled_turn_does_not_run_once_the_runner_closes(tmp_path):
    """Close is cancel, wait, dispose: an undo accepted behind a cancelled turn is not carried
    out during the shutdown (it would change the file after the user quit)."""
    log = EventLog()
    runner = SessionRunner(log, backend=ScriptedBackend([RAW], delay_s=0.01))
    sid = opened(log, runner, tmp_path)
    runner.step(sid, "ls")
    run(log)
    runner.step(sid, "pwd")
    before = started(log.until_ready())  # the turn runs (not a fixed sleep)
    runner.cancel()
    assert runner.undo(sid)  # accepted: it waits behind the turn that is stopping
    runner.close()
    said = [event for _, event in before + log.drain()]
    # The undo ends as every accepted command does: one terminal Ready, after a Notice of why
    # nothing changed (no Refused for a command once accepted).
    notice = next(i for i, e in enumerate(said) if isinstance(e, ev.Notice))
    assert "Cancelled before it ran" in said[notice].text and said[notice + 1] == ev.Ready("undo", 1, 1), said
    assert sorted(e.command for e in said if isinstance(e, ev.Ready)) == ["step", "undo"], said
    assert not any(isinstance(e, ev.Refused) for e in said)
    traj = read_trajectory(tmp_path / "s.jsonl")
    assert [t.action for t in traj.current_branch()] == ["ls"]


def test_a_model_load_leaves_the_process_streams_alone(qwen_gguf):
    """llama-cpp-python pointed file descriptors 1 and 2 (and sys.stdout/stderr) at /dev/null
    for the whole process while a model loaded: with the load on the runner's thread, the
    faces' own output (the CLI's notices, the TUI's screen) vanished meanwhile."""
    import os
    import sys

    from agentworld_local.engine.loading import load_backend

    def streams():
        return os.fstat(1).st_ino, os.fstat(2).st_ino, sys.stdout, sys.stderr

    before = streams()
    during = []
    backend = load_backend(str(qwen_gguf), gpu_layers="0", ctx=2048, progress=lambda fraction: during.append(streams()))
    backend.close()
    assert during and all(seen == before for seen in during)


def test_a_load_right_after_a_turns_ready_is_accepted_and_loads(tmp_path):
    """The turn's thread may still be ending when its Ready is out: a load sent then is taken
    and waits for it, never accepted and then failed (many rounds: it was a race)."""
    import json as _json

    answers = tmp_path / "answers.json"
    answers.write_text(_json.dumps({"answers": [RAW]}))
    log = EventLog()
    runner = SessionRunner(log, backend=ScriptedBackend([RAW]))
    try:
        for attempt in range(25):
            assert runner.open(new_session(tmp_path, f"s{attempt}.jsonl"))
            sid = next(e for _, e in run(log) if isinstance(e, ev.SessionOpened)).path
            assert runner.step(sid, "ls")
            assert isinstance(run(log)[-1][1], ev.Ready)
            assert runner.load(f"scripted:{answers}", ctx=4096 + 256 * attempt), attempt  # another model each time
            said = [event for _, event in run(log)]
            assert not any(isinstance(e, (ev.ErrorEvent, ev.Refused)) for e in said), (attempt, said)
            assert any(isinstance(e, ev.ModelLoaded) for e in said) and isinstance(said[-1], ev.Ready), said
    finally:
        runner.close()


def test_what_the_model_says_during_a_turn_reaches_that_turns_command(tmp_path):
    """A backend's notice (a remote answer it cut, a state it could not cache) belongs to the
    command it is working for: the turn's Sent carries it, the load's does not."""

    class Talking(ScriptedBackend):
        def generate(self, messages, **options):
            self.say("the answer was cut at 1,024 characters")
            yield from super().generate(messages, **options)

    def loader(model, *, notice, **options):
        backend = Talking([RAW])
        backend.say = notice
        notice("loaded the talking model")
        return backend

    runner = SessionRunner(loader=loader)
    try:
        loaded = runner.load("talking").wait()
        assert [e.text for e in loaded.said if isinstance(e, ev.Notice)] == ["loaded the talking model"]
        spec = SessionSpec(domain="terminal", think="full").resolve()
        opened = runner.open(NewSession.from_spec(spec, tmp_path / "s.jsonl")).wait()
        sid = opened.first(ev.SessionOpened).path
        step = runner.step(sid, "ls").wait()
        assert [e.text for e in step.said if isinstance(e, ev.Notice)] == ["the answer was cut at 1,024 characters"]
        assert step.first(ev.TurnFinished) is not None
    finally:
        runner.close()
