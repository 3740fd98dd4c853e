"""What the session writes so the file alone restores it: control instructions given after
the last turn, the web state format, fork points (scripted answers, the real answer path)."""

from __future__ import annotations

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.errors import InputError
from agentworld_local.engine import events as ev
from agentworld_local.session.core import Session
from agentworld_local.session.forking import fork_file
from agentworld_local.testing.answers import answer
from agentworld_local.engine.scripted import ScriptedBackend
from agentworld_local.trajectory.reader import read_trajectory

LS = answer("thinking_then_tags")


def backend() -> ScriptedBackend:
    return ScriptedBackend([LS.scripted()])


def new_session(path, domain: str = "terminal", **domain_options) -> Session:
    world = World(backend(), get_domain(domain, **domain_options), SessionSettings(seed=3, task="tidy /app"))
    return Session.create(world, path)


def run(session: Session, action: str) -> list[ev.SessionEvent]:
    return list(session.step(action))


def test_a_control_given_after_the_last_turn_survives_a_resume(tmp_path):
    path = tmp_path / "s.jsonl"
    session = new_session(path)
    run(session, "ls")
    session.add_control("the disk is full")
    session.close()
    assert read_trajectory(path).pending_controls == ["the disk is full"]
    resumed = Session.resume(path, backend())
    assert resumed.world.pending_controls == ["the disk is full"]
    finished = run(resumed, "touch x")[-1]
    resumed.close()
    assert finished.record.controls_added == ["the disk is full"]
    assert "the disk is full" in finished.record.prompt
    # Sent once: a second resume holds nothing pending.
    assert Session.resume(path, backend()).world.pending_controls == []


def test_pending_controls_after_an_undo_are_the_ones_the_session_held(tmp_path):
    path = tmp_path / "s.jsonl"
    session = new_session(path)
    run(session, "ls")
    session.add_control("first")
    run(session, "pwd")  # receives "first"
    session.add_control("second")
    session.undo()  # hands "first" back, before "second"
    held = session.world.pending_controls
    session.close()
    assert held == ["first", "second"]
    assert Session.resume(path, backend()).world.pending_controls == held


def test_an_empty_control_is_refused_and_not_written(tmp_path):
    path = tmp_path / "s.jsonl"
    session = new_session(path)
    size = path.stat().st_size
    with pytest.raises(InputError, match="empty"):
        session.add_control("   ")
    session.close()
    assert path.stat().st_size == size


def test_the_web_state_format_is_recorded_and_restored(tmp_path):
    path = tmp_path / "s.jsonl"
    session = new_session(path, "web", state_format="html")
    session.close()
    assert read_trajectory(path).header.state_format == "html"
    resumed = Session.resume(path, backend())
    assert resumed.world.domain.state_format == "html"
    assert "<html" in resumed.world.initial_state.lower()


def test_a_file_without_a_state_format_resumes_with_the_default(tmp_path):
    path = tmp_path / "s.jsonl"
    new_session(path, "web").close()
    text = path.read_text(encoding="utf-8").replace('"state_format": "axtree", ', "")
    path.write_text(text, encoding="utf-8")
    assert read_trajectory(path).header.state_format is None
    assert Session.resume(path, backend()).world.domain.state_format == "axtree"


def test_fork_writes_a_new_session_that_says_where_it_came_from(tmp_path):
    path, out = tmp_path / "s.jsonl", tmp_path / "f.jsonl"
    session = new_session(path)
    run(session, "ls")
    run(session, "pwd")
    session.add_control("the network is down")
    run(session, "curl example.com")  # receives the control
    forked = session.fork(2, out)
    session.close()
    assert forked.forked == ev.Forked(source=str(path), turn=2, path=str(out), source_id=2)
    assert [t.action for t in forked.history] == ["ls", "pwd"]
    # The fork is at the moment before turn 3: its control is pending there.
    assert forked.world.pending_controls == ["the network is down"]
    finished = run(forked, "ping 1.1.1.1")[-1]
    forked.close()
    assert finished.record.controls_added == ["the network is down"]
    copy = read_trajectory(out)
    assert copy.header.forked_from == {"file": str(path.resolve()), "turn": 2, "id": 2}
    assert [t.action for t in copy.current_branch()] == ["ls", "pwd", "ping 1.1.1.1"]
    source = read_trajectory(path)
    assert [(fork["turn"], fork["file"]) for fork in source.forks] == [(2, str(out))]
    assert source.warnings == []  # a fork line is a known line type
    assert [t.action for t in source.current_branch()] == ["ls", "pwd", "curl example.com"]


def test_fork_at_a_turn_the_session_does_not_have_is_refused(tmp_path):
    session = new_session(tmp_path / "s.jsonl")
    run(session, "ls")
    with pytest.raises(InputError, match="Cannot fork at turn 2"):
        session.fork(2, tmp_path / "f.jsonl")
    session.close()
    assert not (tmp_path / "f.jsonl").exists()


def test_fork_file_works_on_a_file_whose_last_line_was_cut_off(tmp_path):
    path, out = tmp_path / "s.jsonl", tmp_path / "f.jsonl"
    session = new_session(path)
    run(session, "ls")
    run(session, "pwd")
    session.add_control("the disk is full")
    session.close()
    with path.open("ab") as file:
        file.write(b'{"type": "turn", "id": 3, "parent": 2, "turn": 3, "act')  # killed mid-write
    forked, warnings = fork_file(path, out)
    assert forked == ev.Forked(source=str(path), turn=2, path=str(out), source_id=2)
    assert any("incomplete" in warning for warning in warnings)
    copy = read_trajectory(out)
    assert [t.action for t in copy.turns] == ["ls", "pwd"] and copy.warnings == []
    assert copy.pending_controls == ["the disk is full"]


def test_fork_file_refuses_an_existing_destination(tmp_path):
    path, out = tmp_path / "s.jsonl", tmp_path / "f.jsonl"
    new_session(path).close()
    out.write_text("mine", encoding="utf-8")
    with pytest.raises(InputError, match="already exists"):
        fork_file(path, out)
    assert out.read_text(encoding="utf-8") == "mine"
