"""The Session core on the answers a real model writes (scripted backend): every change is in
the file, and the file alone restores the session (resume)."""

from __future__ import annotations

import json

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.errors import InputError, TrajectoryError
from agentworld_local.engine import events as ev
from agentworld_local.session.core import ATTEMPT, Session, turn_seed
from agentworld_local.testing.answers import answer
from agentworld_local.engine.scripted import ScriptedBackend
from agentworld_local.trajectory.reader import read_trajectory

LS = answer("thinking_then_tags")


class SeedRecordingBackend(ScriptedBackend):
    """Scripted answers; remembers the seed of every generation."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.seeds: list[int] = []

    def generate(self, messages, *, seed, **options):
        self.seeds.append(seed)
        return super().generate(messages, seed=seed, **options)


def new_session(path, seed: int = 7) -> tuple[Session, SeedRecordingBackend]:
    backend = SeedRecordingBackend([LS.scripted()])
    world = World(backend, get_domain("terminal"), SessionSettings(seed=seed, task="tidy /app"))
    return Session.create(world, path), backend


def run(session: Session, action: str) -> list[ev.SessionEvent]:
    return list(session.step(action))


def test_a_step_streams_session_events_and_saves_the_turn(tmp_path):
    session, _ = new_session(tmp_path / "s.jsonl")
    out = run(session, "ls -la")
    session.close()
    assert out[0] == ev.TurnStarted(1, "ls -la", out[0].payload)
    assert "".join(e.text for e in out if isinstance(e, ev.ObservationDelta)) == LS.observation
    assert isinstance(out[-1], ev.TurnFinished) and out[-1].record.observation == LS.observation
    saved = read_trajectory(tmp_path / "s.jsonl")
    assert [t.observation for t in saved.current_branch()] == [LS.observation]
    assert saved.header.task == "tidy /app"


def test_regenerate_draws_a_new_sample_and_records_the_attempt(tmp_path):
    session, backend = new_session(tmp_path / "s.jsonl", seed=7)
    run(session, "ls")
    run(session, "pwd")
    out = list(session.regenerate())
    again = list(session.regenerate())
    session.close()
    assert out[0] == ev.Regenerated(2, 1, 1, 1) and isinstance(out[-1], ev.TurnFinished)
    assert again[0] == ev.Regenerated(2, 2, 1, 1)
    assert backend.seeds == [8, 9, turn_seed(7, 2, 1), turn_seed(7, 2, 2)]
    assert len(set(backend.seeds[1:])) == 3  # each regenerate is a new sample of turn 2
    branch = read_trajectory(tmp_path / "s.jsonl").current_branch()
    assert [(t.turn, t.action, t.extra.get(ATTEMPT)) for t in branch] == [(1, "ls", None), (2, "pwd", 2)]


def test_the_same_seed_reproduces_the_whole_session_regenerates_included(tmp_path):
    seeds = []
    for name in ("a", "b"):
        session, backend = new_session(tmp_path / f"{name}.jsonl", seed=3)
        run(session, "ls")
        list(session.regenerate())
        run(session, "pwd")
        session.close()
        seeds.append(backend.seeds)
    assert seeds[0] == seeds[1]


def test_regenerate_keeps_the_control_instruction_of_the_turn(tmp_path):
    session, _ = new_session(tmp_path / "s.jsonl")
    assert session.add_control(" the disk is full ") == ev.ControlAdded("the disk is full")
    run(session, "df -h")
    list(session.regenerate())
    assert session.history[-1].controls_added == ["the disk is full"]


def test_regenerate_with_no_turn_is_a_clear_error(tmp_path):
    session, _ = new_session(tmp_path / "s.jsonl")
    with pytest.raises(InputError, match="no turn to regenerate"):
        list(session.regenerate())


def test_resume_continues_on_the_branch_it_was_on(tmp_path):
    path = tmp_path / "s.jsonl"
    session, _ = new_session(path, seed=5)
    run(session, "ls")
    run(session, "pwd")
    assert session.undo() == ev.Undone(1, 1)
    session.close()

    backend = SeedRecordingBackend([LS.scripted()])
    resumed = Session.resume(path, backend)
    assert [t.action for t in resumed.history] == ["ls"]
    assert resumed.world.settings.seed == 5 and resumed.world.settings.task == "tidy /app"
    out = run(resumed, "whoami")
    resumed.close()
    assert backend.seeds == [5 + 2]  # the seed the original session would have used for turn 2
    # The model reads the whole branch once: the system prompt, turn 1 and its observation.
    assert [m["role"] for m in backend.last_messages] == ["system", "user", "assistant", "user"]
    record = out[-1].record
    saved = read_trajectory(path)
    assert [t.action for t in saved.current_branch()] == ["ls", "whoami"]
    assert (record.id, record.parent, record.turn) == (3, 1, 2)
    assert len(saved.turns) == 3 and saved.damaged_line is None


def test_resume_cuts_an_unfinished_last_line(tmp_path):
    path = tmp_path / "s.jsonl"
    session, _ = new_session(path)
    run(session, "ls")
    session.close()
    with path.open("ab") as file:
        file.write(b'{"type": "turn", "id": 2, "parent": 1, "turn": 2, "action": "pw')  # killed mid-write
    resumed = Session.resume(path, ScriptedBackend([LS.scripted()]))
    run(resumed, "pwd")
    resumed.close()
    saved = read_trajectory(path)
    assert [t.action for t in saved.current_branch()] == ["ls", "pwd"] and saved.damaged_line is None


def test_resume_refuses_a_damaged_file_and_names_awl_fork(tmp_path):
    path = tmp_path / "s.jsonl"
    session, _ = new_session(path)
    run(session, "ls")
    run(session, "pwd")
    session.close()
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"{not json\n" + lines[2])
    with pytest.raises(TrajectoryError) as caught:
        Session.resume(path, ScriptedBackend([LS.scripted()]))
    assert "damaged" in caught.value.message and "awl fork" in caught.value.hint


def test_every_session_event_reads_back_from_json(tmp_path):
    session, _ = new_session(tmp_path / "s.jsonl")
    out = run(session, "ls") + [session.add_control("x")] + list(session.regenerate()) + [session.undo(), session.saved()]
    for event in out:
        assert ev.event_from_dict(json.loads(json.dumps(event.to_dict()))) == event


def test_resume_hands_the_controls_of_an_undone_turn_to_the_next_turn(tmp_path):
    path = tmp_path / "s.jsonl"
    session, _ = new_session(path)
    run(session, "ls")
    session.add_control("the disk is full")
    run(session, "df -h")
    session.undo()
    session.close()
    resumed = Session.resume(path, ScriptedBackend([LS.scripted()]))
    assert resumed.world.pending_controls == ["the disk is full"]  # as the session held it
    assert run(resumed, "du -sh")[-1].record.controls_added == ["the disk is full"]
    resumed.close()


def test_resume_after_a_turn_holds_no_stale_control(tmp_path):
    path = tmp_path / "s.jsonl"
    session, _ = new_session(path)
    session.add_control("the disk is full")
    run(session, "df -h")
    session.close()
    assert Session.resume(path, ScriptedBackend([LS.scripted()])).world.pending_controls == []


def test_regenerate_after_resume_continues_the_attempts(tmp_path):
    path = tmp_path / "s.jsonl"
    session, _ = new_session(path, seed=1)
    run(session, "ls")
    list(session.regenerate())
    session.close()
    backend = SeedRecordingBackend([LS.scripted()])
    resumed = Session.resume(path, backend)
    assert resumed.history[-1].extra[ATTEMPT] == 1  # read back from the file
    list(resumed.regenerate())
    resumed.close()
    assert backend.seeds == [turn_seed(1, 1, 2)]
    assert read_trajectory(path).current_branch()[-1].extra[ATTEMPT] == 2


def test_a_cancelled_regenerate_keeps_the_turn_it_replaced_in_the_session_and_the_file(tmp_path):
    import threading

    from agentworld_local.engine.scripted import ScriptedBackend
    from agentworld_local.testing.answers import ANSWERS

    backend = ScriptedBackend([ANSWERS[0].raw, ANSWERS[1].raw, ANSWERS[2].raw])
    world = World(backend, get_domain("terminal"))
    session = Session.create(world, tmp_path / "s.jsonl")
    list(session.step("ls"))
    list(session.step("pwd"))
    session.add_control("the disk is full")  # pending for turn 3: a cancelled regenerate leaves it pending
    before = list(session.history)
    cancel = threading.Event()
    said = []
    for event in session.regenerate(cancel):
        said.append(event)
        if isinstance(event, ev.TurnStarted):
            cancel.set()
    assert isinstance(said[0], ev.Regenerated) and said[-1] == ev.TurnCancelled(2, 2, 2)
    assert session.history == before and session.world.pending_controls == ["the disk is full"]
    again = Session.resume(tmp_path / "s.jsonl", backend)
    assert [turn.observation for turn in again.history] == [turn.observation for turn in before]
    again.close()
    # Done, it replaces the turn: the undo and the new turn are written together.
    said = list(session.regenerate())
    assert isinstance(said[-1], ev.TurnFinished) and len(session.history) == 2
    traj = read_trajectory(tmp_path / "s.jsonl")
    assert [turn.id for turn in traj.current_branch()] == [1, 3] and len(traj.turns) == 3
    session.close()
