"""Trajectories under faults: undo lines, a full disk, damaged lines, hostile content.

Each test reproduces a way a saved session was lost, refused whole, or ended in a traceback.
"""

from __future__ import annotations

import errno
import io
import json
import os
import re

import pytest
from rich.console import Console

from agentworld_local.errors import AwlError, TrajectoryError
from agentworld_local.trajectory import (
    Header,
    TrajectoryWriter,
    TurnRecord,
    fork_trajectory,
    read_trajectory,
    utc_now,
)
from agentworld_local.trajectory import writer as writer_module
from agentworld_local.agentworldbench.export import ExportPlan, trajectory_to_rows
from agentworld_local.cli.replay_plain import replay
from agentworld_local.trajectory.asciicast import asciicast_text
from agentworld_local.trajectory.replay import DEFAULT_TURN_S, turn_pause, turn_stats
from tests.cli.helpers import awl
from tests.unit.test_trajectory import make_header, make_turn, write_linear

UTC_FORM = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def actions(traj) -> list[str]:
    return [t.action for t in traj.current_branch()]


# --- undo is written to the file (issue 7, defect 3) -------------------------------------------


def test_an_undo_at_the_end_is_kept(tmp_path):
    path = tmp_path / "s.jsonl"
    with TrajectoryWriter.create(path, make_header()) as writer:
        writer.append(make_turn("ls", "a"))
        writer.append(make_turn("pwd", "/", parent=1))
        writer.record_undo(1)  # `:undo` after the last turn
        assert writer.branch_length == 1
    traj = read_trajectory(path)
    assert actions(traj) == ["ls"] and len(traj.turns) == 2 and traj.warnings == []
    assert json.loads(path.read_text().splitlines()[-1])["type"] == "undo"
    # Fork and export follow the undo too.
    fork = fork_trajectory(path, tmp_path / "f.jsonl")
    assert actions(read_trajectory(fork)) == ["ls"]
    traj = read_trajectory(path)
    traj.turns = [t.__class__(**{**t.__dict__, "prompt": f"### Turn {t.turn}\n{t.action}"}) for t in traj.turns]
    assert [row["turn_idx"] for row in trajectory_to_rows(traj)] == [1]


def test_undo_everything_then_a_later_append_follows_the_undo(tmp_path):
    path = tmp_path / "s.jsonl"
    with TrajectoryWriter.create(path, make_header()) as writer:
        writer.append(make_turn("a", "1"))
        writer.append(make_turn("b", "2", parent=1))
        writer.record_undo(0)
        writer.record_undo(0)  # nothing left to drop: no line
    assert actions(read_trajectory(path)) == []
    assert path.read_text().count('"undo"') == 1
    with TrajectoryWriter.append_to(path) as writer:  # resume: the branch is empty
        assert writer.branch_length == 0
        writer.append(make_turn("c", "3"))
        writer.record_undo(0)
        writer.append(make_turn("d", "4"))
        writer.append(make_turn("e", "5", parent=4))
        writer.record_undo(1)
    traj = read_trajectory(path)
    assert actions(traj) == ["d"] and [t.id for t in traj.turns] == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="cannot keep 3 turns"):
        TrajectoryWriter.append_to(path).record_undo(3)


@pytest.mark.parametrize("kept", ["-1", "3", '"1"', "true", "null"])
def test_a_bad_undo_line_is_damage_not_a_crash(tmp_path, kept):
    path = tmp_path / "s.jsonl"
    write_linear(path, [("a", "1"), ("b", "2")])
    with open(path, "a") as handle:
        handle.write(f'{{"type": "undo", "kept": {kept}}}\n')
    traj = read_trajectory(path)
    assert actions(traj) == ["a", "b"] and traj.damaged_line == 4
    assert "an undo line should keep a turn count from 0 to 2" in traj.warnings[0]


def test_unknown_line_types_are_skipped_and_a_line_without_type_is_a_turn(tmp_path):
    path = tmp_path / "s.jsonl"
    write_linear(path, [("a", "1")])
    turn = make_turn("b", "2", parent=1).to_dict() | {"id": 2, "turn": 2}
    del turn["type"]  # TurnRecord.from_dict reads this as a turn; so must the reader
    with open(path, "a") as handle:
        handle.write('{"type": "bookmark", "at": 1}\n' + json.dumps(turn) + '\n{"type": "bookmark"}\n')
    traj = read_trajectory(path)
    assert actions(traj) == ["a", "b"]
    assert traj.warnings == [
        "2 lines of a type this awl does not know ('bookmark') were skipped; a newer awl may have written them"
    ]


def test_turn_timestamps_use_the_header_form():
    assert UTC_FORM.match(utc_now())
    assert UTC_FORM.match(TurnRecord(action="x").created)


# --- a full disk (issue 7 defect 4, issue 8) --------------------------------------------------


class FailingHandle:
    """A real file whose next write stops half-way with ENOSPC, as a full disk does."""

    def __init__(self, handle, *, fail_writes: int = 1, truncate_fails: bool = False) -> None:
        self._handle = handle
        self.fail_writes = fail_writes
        self.truncate_fails = truncate_fails

    def write(self, data):
        if self.fail_writes:
            self.fail_writes -= 1
            self._handle.write(bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self._handle.write(data)

    def truncate(self, size):
        if self.truncate_fails:
            raise OSError(errno.EIO, "I/O error")
        return self._handle.truncate(size)

    def close(self):
        self._handle.close()
        raise OSError(errno.ENOSPC, "close after a failure")  # must not surface

    def __getattr__(self, name):
        return getattr(self._handle, name)


def test_a_full_disk_mid_session_cuts_back_and_says_the_saved_turns_are_intact(tmp_path):
    path = tmp_path / "s.jsonl"
    writer = TrajectoryWriter.create(path, make_header())
    writer.append(make_turn("a", "1"))
    writer._handle = FailingHandle(writer._handle)
    with pytest.raises(TrajectoryError) as caught:
        writer.append(make_turn("b", "2" * 5000, parent=1))
    message = caught.value.one_line()
    assert "could not save turn 2" in message and "the disk is full" in message
    assert "every turn saved before it is intact (1 turn)" in message and "\n" not in message
    traj = read_trajectory(path)  # no half line: the file reads cleanly
    assert actions(traj) == ["a"] and traj.warnings == []
    # Space freed: the session goes on, with the next line complete and correctly numbered.
    again = writer.append(make_turn("b", "2", parent=1))
    assert (again.id, again.turn) == (2, 2)
    writer.close()  # the handle's close raises; the writer's close never does
    assert actions(read_trajectory(path)) == ["a", "b"]


def test_a_full_disk_that_cannot_even_cut_back_stops_the_writer_cleanly(tmp_path):
    path = tmp_path / "s.jsonl"
    writer = TrajectoryWriter.create(path, make_header())
    writer.append(make_turn("a", "1"))
    writer._handle = FailingHandle(writer._handle, truncate_fails=True)
    with pytest.raises(TrajectoryError, match="Its last line is incomplete"):
        writer.append(make_turn("b", "2", parent=1))
    with pytest.raises(TrajectoryError) as caught:
        writer.append(make_turn("b", "2", parent=1))
    assert re.search(r"could not be written earlier.*`awl fork .* --out NEW.jsonl`", caught.value.one_line())
    writer.close()
    traj = read_trajectory(path)
    assert actions(traj) == ["a"] and "incomplete" in traj.warnings[0]


def test_a_full_disk_at_start_leaves_no_file_and_a_retry_works(tmp_path, monkeypatch):
    path = tmp_path / "s.jsonl"
    real_open = writer_module.open_unbuffered
    monkeypatch.setattr(writer_module, "open_unbuffered", lambda p, mode: FailingHandle(real_open(p, mode)))
    with pytest.raises(TrajectoryError) as caught:
        TrajectoryWriter.create(path, make_header())
    assert "nothing was saved and no file was left behind" in caught.value.one_line()
    assert not path.exists()
    monkeypatch.setattr(writer_module, "open_unbuffered", real_open)
    TrajectoryWriter.create(path, make_header()).close()
    assert read_trajectory(path).turns == []


def test_dev_full_is_reported_not_raised_raw(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    writer = TrajectoryWriter(tmp_path / "x.jsonl", open("/dev/full", "wb", buffering=0), {})
    with pytest.raises(TrajectoryError, match="the disk is full"):
        writer.append(make_turn("a", "1"))
    writer.close()


def test_a_surrogate_never_stops_the_writer(tmp_path):
    path = tmp_path / "s.jsonl"
    with TrajectoryWriter.create(path, make_header(task="bad \ud800 text")) as writer:
        writer.append(make_turn("echo \udcff", "out \ud83d"))
    traj = read_trajectory(path)
    assert traj.header.task == "bad \ud800 text" and traj.turns[0].observation == "out \ud83d"


# --- damaged and hostile files (issue 8) ------------------------------------------------------


def damaged(tmp_path, line: bytes, *, tail: bool = False):
    path = tmp_path / "s.jsonl"
    write_linear(path, [("a", "1"), ("b", "2")])
    data = path.read_bytes() + line
    if not tail:
        data += b"\n" + json.dumps(make_turn("c", "3", parent=2).to_dict() | {"id": 3, "turn": 3}).encode() + b"\n"
    path.write_bytes(data)
    return path


HOSTILE_LINES = {
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "deep-object": b'{"type": "turn", "action_payload": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_001,
    "huge-int": b'{"type": "turn", "id": ' + b"9" * 5000 + b"}",
    "bad-utf8": b'{"type": "turn", "action": "\xff\xfe"}',
    "binary": bytes(b for b in range(256) if b != ord("\n")),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_LINES))
@pytest.mark.parametrize("tail", [False, True], ids=["middle", "unfinished-last-line"])
def test_hostile_lines_keep_the_turns_before_them(tmp_path, name, tail):
    path = damaged(tmp_path, HOSTILE_LINES[name], tail=tail)
    traj = read_trajectory(path)
    assert actions(traj) == ["a", "b"]
    assert len(traj.warnings) == 1 and "line 4" in traj.warnings[0]
    if tail:
        # An unfinished last line is cut off when the session continues; nothing else is.
        with TrajectoryWriter.append_to(path) as writer:
            writer.append(make_turn("c", "3", parent=2))
        assert actions(read_trajectory(path)) == ["a", "b", "c"]
    else:
        assert "awl fork" in traj.warnings[0]
        with pytest.raises(TrajectoryError) as caught:
            TrajectoryWriter.append_to(path)
        assert re.search(r"damaged at line 4.*`awl fork .* --turn 2 --out NEW.jsonl`", caught.value.one_line())
        before = path.read_bytes()
        clean = fork_trajectory(path, tmp_path / "clean.jsonl")
        assert path.read_bytes() == before, "nothing saved is lost"
        fixed = read_trajectory(clean)
        assert actions(fixed) == ["a", "b"] and fixed.warnings == []


def test_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(TrajectoryError, match="not a regular file"):
        read_trajectory(fifo)
    with pytest.raises(TrajectoryError, match="is a directory"):
        read_trajectory(tmp_path)


def test_a_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "s.jsonl"
    write_linear(path, [("a", "1")])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert actions(read_trajectory(path)) == ["a"]
    with TrajectoryWriter.append_to(path) as writer:
        writer.append(make_turn("b", "2", parent=1))
    assert actions(read_trajectory(path)) == ["a", "b"]


def hostile_session(path) -> None:
    """Surrogates, terminal escapes and control bytes, as a damaged or malicious file holds them."""
    header = make_header(task="task \ud800", system_prompt="sys")
    with TrajectoryWriter.create(path, header) as writer:
        turn = make_turn("printf '\x1b]0;pwned\x07'", "\x1b[2J\x1b[31mred\x1b[0m \x9b6n \udcff \x00 [bold]x[/]")
        turn.thinking, turn.prompt = "think \ud800", "### Turn 1\n\x1b[2J \ud800"
        writer.append(turn)


@pytest.mark.parametrize("plain", [True, False])
def test_replay_shows_hostile_text_safely(tmp_path, plain):
    path = tmp_path / "s.jsonl"
    hostile_session(path)
    buffer = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # a strict UTF-8 stream, like a terminal
    console = Console(file=buffer, force_terminal=not plain, width=100, color_system=None if plain else "truecolor")
    replay(read_trajectory(path), console, plain=plain, show_thinking=True)
    buffer.flush()
    out = buffer.buffer.getvalue().decode("utf-8")
    assert "\x1b]" not in out and "\x07" not in out and "\x1b[2J" not in out and "\x9b" not in out and "\x00" not in out
    assert "\\x1b]0;pwned\\x07" in out and "red" in out and "[bold]x[/]" in out and "\ufffd" in out


def test_export_of_hostile_text_is_valid_utf8_json_that_reads_back_the_same(tmp_path):
    path = tmp_path / "s.jsonl"
    hostile_session(path)
    plan = ExportPlan(read_trajectory(path))
    data = b"".join(plan.chunks())
    text = data.decode("utf-8")  # strict: no surrogate reached the bytes
    assert "\x9b" not in text and "\x1b" not in text
    [row] = [json.loads(line) for line in text.splitlines()]
    assert row == trajectory_to_rows(read_trajectory(path))[0]
    assert row["prompt"] == ["### Turn 1\n\x1b[2J \ud800"]


def test_streamed_export_equals_the_rows_for_a_few_hundred_turns(tmp_path):
    path = tmp_path / "long.jsonl"
    with TrajectoryWriter.create(path, make_header()) as writer:
        parent = None
        for n in range(1, 301):
            turn = make_turn(f"echo {n}", f"{n}\n$ ", parent)
            turn.prompt = f"### Turn {n}\n**Action:**\necho {n} ü"
            parent = writer.append(turn).id
    traj = read_trajectory(path)
    plan = ExportPlan(traj)
    lines = b"".join(plan.chunks()).decode("utf-8").splitlines()
    rows = trajectory_to_rows(traj)
    assert len(lines) == len(rows) == len(plan) == 300
    assert [json.loads(line) for line in lines] == rows
    assert lines[0] == json.dumps(rows[0], ensure_ascii=False), "the same text json.dumps writes"
    assert rows[299]["turn_idx"] == 300 and rows[0]["prompt"] is rows[299]["prompt"]


def test_reader_errors_are_awl_errors(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"[" * 100_000)
    with pytest.raises(AwlError, match="not an awl trajectory"):
        read_trajectory(path)
    path.write_bytes(json.dumps(make_header().to_dict() | {"version": 10**4000}).encode() + b"\n")
    with pytest.raises(TrajectoryError, match="newer awl"):
        read_trajectory(path)
    path.write_bytes(json.dumps(Header().to_dict() | {"seed": "x"}).encode() + b"\n")
    with pytest.raises(TrajectoryError, match=r"header \(line 1\) is damaged \(field 'seed'"):
        read_trajectory(path)


# --- stored numbers are read defensively (issue 15) ---------------------------------------------

#: Legal JSON a hand-edited or damaged file may hold where a turn records its numbers:
#: an integer past float range, text, a negative, Python's Infinity/NaN, a boolean.
HOSTILE_NUMBERS = ["1" + "0" * 400, '"fast"', "-5", "Infinity", "NaN", "true", "1e400"]


def write_hostile_numbers(path) -> None:
    """A terminal session whose turns record unusable `tokens` and `timings` values."""
    lines = [json.dumps(make_header(domain="terminal").to_dict())]
    for n, bad in enumerate(HOSTILE_NUMBERS, start=1):
        turn = make_turn(f"echo {n}", f"{n}\nuser@box:~$ ", parent=n - 1 or None).to_dict() | {"id": n, "turn": n}
        numbers = {key: "@" for key in ("prompt_total", "thinking", "generated")}
        timings = {key: "@" for key in ("total_s", "tokens_per_s")}
        text = json.dumps(turn | {"tokens": numbers, "timings": timings})
        lines.append(text.replace('"@"', bad))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_numbers_no_reader_can_use_are_left_out_of_replay_and_export(tmp_path):
    """A legal 401-digit integer in `timings` crashed replay and the asciicast export."""
    path = tmp_path / "s.jsonl"
    write_hostile_numbers(path)
    traj = read_trajectory(path)
    assert len(traj.current_branch()) == len(HOSTILE_NUMBERS) and not traj.warnings
    for record in traj.current_branch():
        assert record.token_count("generated") is None and record.timing("total_s") is None
        assert turn_stats(record) == ""
        assert turn_pause(record) == DEFAULT_TURN_S and turn_pause(record, speed=2.0) == DEFAULT_TURN_S / 2
    cast = asciicast_text(traj).splitlines()
    assert len(cast) > len(HOSTILE_NUMBERS) and all(json.loads(line) for line in cast)
    buffer = io.StringIO()
    replay(traj, Console(file=buffer, width=100), plain=True, show_thinking=False)
    assert "echo 7" in buffer.getvalue()


def test_usable_numbers_are_still_shown():
    turn = make_turn("ls", "a")
    turn.tokens |= {"generated": 2**53}
    assert turn_stats(turn) == f"prompt 50 tok · thinking 3 tok · generated {2**53} tok · 0.3 s · 35.0 tok/s"
    turn.tokens["generated"], turn.timings["total_s"] = 2**53 + 1, 0
    assert turn.token_count("generated") is None and turn.timing("total_s") == 0.0


@pytest.mark.parametrize("command", [["replay", "--plain"], ["export", "--format", "asciicast"]])
def test_awl_replay_and_export_show_a_file_with_unusable_numbers(tmp_path, command):
    path = tmp_path / "s.jsonl"
    write_hostile_numbers(path)
    name, *options = command
    result = awl(name, str(path), *options, home=tmp_path)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "echo 7" in result.stdout


# --- save-failure messages say what happened (issue 15) ---------------------------------------


class RefusingHandle(FailingHandle):
    """A file that became immutable (chattr +i) or read-only meanwhile: writes and truncation
    fail with EPERM and nothing reaches the file."""

    def write(self, data):
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))

    def truncate(self, size):
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))


def test_a_write_refused_whole_is_not_called_an_incomplete_last_line(tmp_path):
    path = tmp_path / "s.jsonl"
    writer = TrajectoryWriter.create(path, make_header())
    writer.append(make_turn("a", "1"))
    before = path.read_bytes()
    writer._handle = RefusingHandle(writer._handle)
    with pytest.raises(TrajectoryError) as refused:
        writer.append(make_turn("b", "2", parent=1))
    said = refused.value.one_line()
    assert "Operation not permitted" in said and "Nothing of it reached the file" in said and "intact (1 turn)" in said
    assert "incomplete" not in said and "Free disk space" not in said
    writer._handle = writer._handle._handle  # the file can be written again: the writer goes on
    writer.append(make_turn("b", "2", parent=1))
    writer.close()
    assert path.read_bytes().startswith(before) and actions(read_trajectory(path)) == ["a", "b"]


def test_a_session_file_that_cannot_be_made_says_so_in_the_one_wording_of_every_command(tmp_path):
    from agentworld_local.errors import TrajectoryError
    from agentworld_local.trajectory.schema import Header
    from agentworld_local.trajectory.writer import TrajectoryWriter

    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    with pytest.raises(TrajectoryError) as refused:
        TrajectoryWriter.create(tmp_path / "a-file" / "s.jsonl", Header(domain="terminal"))
    assert refused.value.message.startswith(f"Cannot write {tmp_path / 'a-file' / 's.jsonl'}: ")
    assert "not a directory" in refused.value.message and refused.value.hint
