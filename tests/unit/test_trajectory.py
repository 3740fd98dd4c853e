"""Trajectory files: schema round trip, append-only writing, tolerant reading, branches, fork, replay."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from agentworld_local.errors import TrajectoryError
from agentworld_local.trajectory import (
    SCHEMA_NAME,
    SCHEMA_VERSION,
    Header,
    ModelRef,
    TrajectoryWriter,
    TurnRecord,
    fork_trajectory,
    read_trajectory,
)
from agentworld_local.cli.replay_plain import HAND_WRITTEN_LINE, replay


def make_header(**overrides) -> Header:
    values = dict(
        model=ModelRef(name="tiny.gguf", path="/m/tiny.gguf", file_size=123, sha256="ab" * 32,
                       sha256_scope="first-8MiB", architecture="qwen3"),
        sampling={"temperature": 0.7, "top_p": 0.9, "top_k": 20, "min_p": 0.0, "max_tokens": 512},
        seed=42, think="512", domain="shell", scenario={"name": "demo", "title": "A demo box"},
        initial_state="$ ", task="list the files", system_prompt="You are a terminal.",
    )
    values.update(overrides)
    return Header(**values)


def make_turn(action: str, observation: str, parent: int | None = None, **extra) -> TurnRecord:
    return TurnRecord(
        action=action, observation=observation, parent=parent,
        action_payload=[{"keystrokes": action + "\n", "duration": 1.0}],
        prompt=f"<action>{action}</action>", raw_output=observation, thinking="let me think",
        parse_method="tag", tokens={"prompt_evaluated": 10, "prompt_total": 50, "thinking": 3, "generated": 7},
        timings={"prompt_s": 0.1, "generate_s": 0.2, "total_s": 0.3, "tokens_per_s": 35.0}, **extra,
    )


def write_linear(path: Path, steps: list[tuple[str, str]], **header) -> None:
    with TrajectoryWriter.create(path, make_header(**header)) as writer:
        parent = None
        for action, observation in steps:
            parent = writer.append(make_turn(action, observation, parent)).id


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def render(path: Path, **options) -> str:
    buffer = io.StringIO()
    replay(read_trajectory(path), Console(file=buffer, force_terminal=False, width=100), plain=True, **options)
    return buffer.getvalue()


# --- schema and writer ---------------------------------------------------------------------------


def test_round_trip_header_and_turns(tmp_path):
    path = tmp_path / "s.jsonl"
    header = make_header(note="ünïcode ✓")
    with TrajectoryWriter.create(path, header) as writer:
        first = writer.append(make_turn("ls -la", "total 0"))
        second = writer.append(make_turn("pwd", "/home/user", parent=first.id))
    traj = read_trajectory(path)
    assert traj.header == header
    assert traj.turns == [first, second]
    assert (first.id, first.turn, second.id, second.parent, second.turn) == (1, 1, 2, 1, 2)
    assert traj.warnings == []
    raw = lines_of(path)
    assert raw[0]["type"] == "header" and raw[0]["schema"] == SCHEMA_NAME and raw[0]["version"] == SCHEMA_VERSION
    assert [r["type"] for r in raw[1:]] == ["turn", "turn"]
    assert "ünïcode ✓" in path.read_text(encoding="utf-8")  # ensure_ascii=False


def test_unknown_keys_are_kept(tmp_path):
    path = tmp_path / "s.jsonl"
    record = make_header().to_dict() | {"future_field": {"x": 1}}
    turn = make_turn("ls", "a").to_dict() | {"id": 1, "turn": 1, "score": 0.5}
    path.write_text(json.dumps(record) + "\n" + json.dumps(turn) + "\n", encoding="utf-8")
    traj = read_trajectory(path)
    assert traj.header.extra == {"future_field": {"x": 1}}
    assert traj.turns[0].extra == {"score": 0.5}
    assert traj.header.to_dict()["future_field"] == {"x": 1}
    assert traj.turns[0].to_dict()["score"] == 0.5


def test_create_refuses_to_overwrite(tmp_path):
    path = tmp_path / "deep" / "dir" / "s.jsonl"  # parent directories are created
    TrajectoryWriter.create(path, make_header()).close()
    with pytest.raises(TrajectoryError, match="already exists"):
        TrajectoryWriter.create(path, make_header())
    TrajectoryWriter.create(path, make_header(task="again"), overwrite=True).close()
    assert read_trajectory(path).header.task == "again"


def test_each_append_is_on_disk_before_close(tmp_path):
    path = tmp_path / "s.jsonl"
    writer = TrajectoryWriter.create(path, make_header())
    assert len(lines_of(path)) == 1
    parent = None
    for n in range(1, 4):
        parent = writer.append(make_turn(f"echo {n}", str(n), parent)).id
        with open(path, encoding="utf-8") as other:  # a second handle, writer still open
            lines = other.read().splitlines()
        assert len(lines) == n + 1 and json.loads(lines[-1])["action"] == f"echo {n}"
    writer.close()
    assert writer.closed


def test_reopen_and_append_continues_ids(tmp_path):
    path = tmp_path / "s.jsonl"
    write_linear(path, [("a", "1"), ("b", "2")])
    with TrajectoryWriter.append_to(path) as writer:
        assert writer.last_id == 2
        added = writer.append(make_turn("c", "3", parent=2))
    assert (added.id, added.turn, added.parent) == (3, 3, 2)
    assert [t.id for t in read_trajectory(path).turns] == [1, 2, 3]


def test_append_rejects_unknown_parent(tmp_path):
    path = tmp_path / "s.jsonl"
    with TrajectoryWriter.create(path, make_header()) as writer:
        with pytest.raises(ValueError, match="parent 5"):
            writer.append(make_turn("a", "1", parent=5))


# --- reader errors and tolerance -----------------------------------------------------------------


def test_truncated_last_line_is_skipped_with_warning(tmp_path):
    path = tmp_path / "s.jsonl"
    write_linear(path, [("a", "1"), ("b", "2")])
    with open(path, "ab") as handle:
        handle.write(b'{"type": "turn", "id": 3, "parent": 2, "action": "c", "observ')  # killed mid-write
    traj = read_trajectory(path)
    assert [t.action for t in traj.turns] == ["a", "b"]
    assert traj.warnings == ["line 4 is incomplete (the session was interrupted while writing); it was skipped"]

    # Reopening cuts the broken tail off and continues cleanly.
    with TrajectoryWriter.append_to(path) as writer:
        writer.append(make_turn("c", "3", parent=2))
    traj = read_trajectory(path)
    assert [t.action for t in traj.turns] == ["a", "b", "c"] and traj.warnings == []


def test_last_line_without_newline_but_complete_is_kept(tmp_path):
    path = tmp_path / "s.jsonl"
    write_linear(path, [("a", "1")])
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    assert [t.action for t in read_trajectory(path).turns] == ["a"]
    with TrajectoryWriter.append_to(path) as writer:
        writer.append(make_turn("b", "2", parent=1))
    assert [t.action for t in read_trajectory(path).turns] == ["a", "b"]


def test_newer_schema_version_errors(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(make_header().to_dict() | {"version": SCHEMA_VERSION + 1}) + "\n")
    with pytest.raises(TrajectoryError) as caught:
        read_trajectory(path)
    message = caught.value.one_line()
    assert f"newer awl (schema v{SCHEMA_VERSION + 1}" in message and "pip install -U agentworld-local" in message


@pytest.mark.parametrize(
    "content",
    ['[1, 2, 3]\n', "hello, this is a plain text file\n", '{"type": "header", "schema": "other/thing", "version": 1}\n',
     '{"type": "turn", "id": 1}\n'],
)
def test_non_trajectory_file_errors(tmp_path, content):
    path = tmp_path / "x.jsonl"
    path.write_text(content)
    with pytest.raises(TrajectoryError, match=r"is not an awl trajectory \(no header line\)") as caught:
        read_trajectory(path)
    assert "awl replay" in caught.value.one_line()


def test_missing_and_empty_files_error(tmp_path):
    with pytest.raises(TrajectoryError, match="does not exist"):
        read_trajectory(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(TrajectoryError, match="is empty"):
        read_trajectory(tmp_path / "empty.jsonl")


def test_a_damaged_middle_line_keeps_the_turns_before_it(tmp_path):
    path = tmp_path / "s.jsonl"
    write_linear(path, [("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")])
    lines = path.read_text().splitlines(keepends=True)
    lines[3] = "{not json\n"  # turn c
    path.write_text("".join(lines))
    traj = read_trajectory(path)
    assert [t.action for t in traj.current_branch()] == ["a", "b"] and traj.damaged_line == 4
    [warning] = traj.warnings
    assert warning.startswith("line 4 is damaged (not valid JSON") and "kept the 2 intact turns before it" in warning
    assert "skipped lines 4-5." in warning and f"awl fork {path} --turn 2 --out NEW.jsonl" in warning


def test_turn_with_bad_field_names_the_line_and_field(tmp_path):
    path = tmp_path / "s.jsonl"
    write_linear(path, [("a", "1"), ("b", "2")])
    lines = lines_of(path)
    lines[2]["id"] = "one"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    traj = read_trajectory(path)
    assert [t.action for t in traj.turns] == ["a"]
    assert re.match(r"line 3 is damaged \(field 'id' should be int, not str\)", traj.warnings[0])


# --- branches and fork ---------------------------------------------------------------------------


def write_with_undo(path: Path) -> None:
    """Turns 1, 2; undo turn 2; turn 3 continues from turn 1; turn 4 from 3."""
    with TrajectoryWriter.create(path, make_header()) as writer:
        writer.append(make_turn("a", "1"))
        writer.append(make_turn("b", "2", parent=1))
        writer.append(make_turn("c", "3", parent=1))
        writer.append(make_turn("d", "4", parent=3))


def test_current_branch_follows_parents_after_undo(tmp_path):
    path = tmp_path / "s.jsonl"
    write_with_undo(path)
    traj = read_trajectory(path)
    assert [(t.id, t.parent, t.turn) for t in traj.turns] == [(1, None, 1), (2, 1, 2), (3, 1, 2), (4, 3, 3)]
    assert [t.action for t in traj.current_branch()] == ["a", "c", "d"]
    assert [t.action for t in traj.branch(2)] == ["a", "b"]
    with pytest.raises(TrajectoryError, match="no turn with id 9"):
        traj.branch(9)


def test_fork_writes_current_branch_renumbered(tmp_path):
    src, dst = tmp_path / "s.jsonl", tmp_path / "forks" / "f.jsonl"
    write_with_undo(src)
    assert fork_trajectory(src, dst, at_turn=2) == dst
    traj = read_trajectory(dst)
    assert traj.header.forked_from == {"file": str(src.resolve()), "turn": 2, "id": 3}  # "c" is line 3 of src
    assert traj.header.task == make_header().task
    assert [(t.id, t.parent, t.turn, t.action) for t in traj.turns] == [(1, None, 1, "a"), (2, 1, 2, "c")]
    assert traj.turns[1].observation == "3" and traj.turns[1].tokens["generated"] == 7
    with pytest.raises(TrajectoryError, match="3 turns"):
        fork_trajectory(src, tmp_path / "g.jsonl", at_turn=4)
    with pytest.raises(TrajectoryError, match="already exists"):
        fork_trajectory(src, dst, at_turn=1)


# --- replay rendering ----------------------------------------------------------------------------


def test_replay_plain_shows_actions_and_observations_in_order(tmp_path):
    path = tmp_path / "s.jsonl"
    write_linear(path, [("ls -la", "total 0 [bold]x[/bold]"), ("cat a.json", '{"a": 1}'), ("curl x", "<html></html>")])
    out = render(path)
    order = [out.index(s) for s in ("ls -la", "total 0 [bold]x[/bold]", "cat a.json", '{"a": 1}', "curl x", "<html>")]
    assert order == sorted(order)
    assert "Turn 1" in out and "Turn 3" in out and "generated 7 tok" in out
    assert "let me think" not in out  # thinking is off by default
    assert "let me think" in render(path, show_thinking=True)
    assert "─" not in out and "\x1b" not in out and HAND_WRITTEN_LINE not in out


def test_replay_single_turn_and_out_of_range(tmp_path):
    path = tmp_path / "s.jsonl"
    write_linear(path, [("first-cmd", "one"), ("second-cmd", "two"), ("third-cmd", "three")])
    out = render(path, turn=2)
    assert "second-cmd" in out and "two" in out
    assert "first-cmd" not in out and "third-cmd" not in out
    with pytest.raises(TrajectoryError, match="3 turns"):
        render(path, turn=4)


def test_replay_follows_current_branch(tmp_path):
    path = tmp_path / "s.jsonl"
    write_with_undo(path)
    out = render(path)
    assert "action:\nb\n" not in out and "action:\nc\n" in out and "1 undone" in out


def test_replay_marks_hand_written_and_forks(tmp_path):
    path = tmp_path / "demo.jsonl"
    write_linear(path, [("ls", "a")], hand_written=True, model=None,
                 forked_from={"file": "orig.jsonl", "turn": 1})
    out = render(path)
    assert HAND_WRITTEN_LINE in out and "forked from orig.jsonl at turn 1" in out


def test_replay_rich_mode_highlights(tmp_path):
    path = tmp_path / "s.jsonl"
    write_linear(path, [("ls -la", '{"a": 1}')])
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=100, color_system="truecolor")
    pauses: list[float] = []
    replay(read_trajectory(path), console, speed=0.5, sleep=pauses.append)
    out = buffer.getvalue()
    text = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert "\x1b[" in out and "── Turn 1" in text and "ls -la" in text and '{"a": 1}' in text
    assert pauses and sum(pauses) <= 0.5 + 1e-9  # typewriter never takes longer than `speed`


@pytest.mark.parametrize("plain", [True, False])
def test_replay_says_where_the_context_was_cut_and_which_turns_were_regenerated(plain):
    from agentworld_local.cli.replay_plain import render_turn

    cut = make_turn("ls", "a", context={"omitted_turns": {"first": 2, "last": 9},
                                         "cut": {"tokens_before": 4100, "tokens_after": 2000, "context": 4096}})
    later = make_turn("pwd", "/", context={"omitted_turns": {"first": 2, "last": 9}})  # the same view, no new cut
    again = make_turn("id", "uid=0", extra={"attempt": 1})
    damaged = make_turn("w", "x", context={"omitted_turns": "2-9", "cut": 5}, extra={"attempt": "x"})
    shown = []
    for record in (cut, later, again, damaged):
        buffer = io.StringIO()
        render_turn(record, Console(file=buffer, width=120), plain=plain)
        shown.append(buffer.getvalue())
    assert "the model no longer sees turns 2-9" in shown[0]
    assert "no longer sees" not in shown[1] and "regenerated" not in shown[1]
    assert "regenerated: sample 2 of this turn" in shown[2]
    assert "no longer sees" not in shown[3] and "regenerated" not in shown[3]
