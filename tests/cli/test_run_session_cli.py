"""`awl run` over the session core: its JSON lines are the session events' wire form."""

from __future__ import annotations

import json

from agentworld_local.engine.events import event_from_dict
from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import assert_one_line_error, awl, scripted_model

THOUGHT_LS = "<think>\nAn empty directory lists nothing.\n</think>\n<predicted_observation>\ntotal 0\n</predicted_observation>"


def test_awl_run_json_prints_session_events_that_read_back_exactly(tmp_path):
    out = tmp_path / "s.jsonl"
    model = scripted_model(tmp_path, THOUGHT_LS)
    result = awl("run", "-m", model, "-o", str(out), "--json", home=tmp_path,
                 stdin="ls\n:control the disk is full\npwd\n:undo\n")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert {line["event"] for line in lines} >= {"action", "thinking", "answer", "observation", "turn_done",
                                                  "control", "undo", "saved"}
    assert [event_from_dict(line).to_dict() for line in lines] == lines


def test_resume_continues_the_saved_branch_in_the_same_file(tmp_path):
    out = tmp_path / "s.jsonl"
    model = scripted_model(tmp_path, THOUGHT_LS)
    first = awl("run", "-m", model, "-o", str(out), "--seed", "4", "--task", "tidy up", home=tmp_path,
                stdin="ls\npwd\n:undo\n")
    assert first.returncode == 0, first.stderr
    result = awl("run", "--resume", str(out), "-m", model, "--json", home=tmp_path, stdin="whoami\n:undo\nid\n")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["turn"] for line in lines if line["event"] == "action"] == [2, 2]  # on the branch after the undo
    assert lines[-1] == {"event": "saved", "path": str(out), "turns": 2}
    traj = read_trajectory(out)
    assert [t.action for t in traj.current_branch()] == ["ls", "id"]
    assert traj.header.seed == 4 and traj.header.task == "tidy up" and traj.damaged_line is None


def test_resume_works_on_a_file_whose_last_line_was_cut_off(tmp_path):
    out = tmp_path / "s.jsonl"
    model = scripted_model(tmp_path, THOUGHT_LS)
    assert awl("run", "-m", model, "-o", str(out), home=tmp_path, stdin="ls\n").returncode == 0
    with out.open("ab") as file:
        file.write(b'{"type": "turn", "id": 2, "parent": 1, "turn": 2, "act')  # killed mid-write
    result = awl("run", "--resume", str(out), "-m", model, home=tmp_path, stdin="pwd\n")
    assert result.returncode == 0, result.stderr
    traj = read_trajectory(out)
    assert [t.action for t in traj.current_branch()] == ["ls", "pwd"] and traj.damaged_line is None


def test_resume_refuses_a_damaged_file_with_the_fork_hint_before_loading(tmp_path):
    out = tmp_path / "s.jsonl"
    model = scripted_model(tmp_path, THOUGHT_LS)
    assert awl("run", "-m", model, "-o", str(out), home=tmp_path, stdin="ls\npwd\n").returncode == 0
    header, _, second = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(header + b"{broken\n" + second)
    before = out.read_bytes()
    result = awl("run", "--resume", str(out), "-m", "no-such-model", home=tmp_path, stdin="id\n")
    assert_one_line_error(result, "damaged at line 2", "awl fork")
    assert out.read_bytes() == before  # nothing saved is lost


def test_resume_refuses_options_that_would_change_the_saved_setup(tmp_path):
    out = tmp_path / "s.jsonl"
    model = scripted_model(tmp_path, THOUGHT_LS)
    assert awl("run", "-m", model, "-o", str(out), home=tmp_path, stdin="ls\n").returncode == 0
    result = awl("run", "--resume", str(out), "-m", model, "--task", "other", home=tmp_path, stdin="id\n")
    assert_one_line_error(result, "--task cannot change it")
    result = awl("run", "--resume", str(out), "-m", model, "--domain", "web", home=tmp_path, stdin="id\n")
    assert_one_line_error(result, "--domain cannot change it")  # what defines the world; --seed may change
    assert len(read_trajectory(out).turns) == 1


def test_resume_on_the_real_llama_path(tmp_path, qwen_gguf):
    out = tmp_path / "s.jsonl"
    options = ("-m", str(qwen_gguf), "--think", "4", "--max-tokens", "12", "--ctx", "4096")
    first = awl("run", *options, "-o", str(out), home=tmp_path, stdin="ls\npwd\n")
    assert first.returncode == 0, first.stderr
    result = awl("run", "--resume", str(out), "-m", str(qwen_gguf), "--ctx", "4096",
                 "--json", home=tmp_path, stdin="whoami\n")
    assert result.returncode == 0, result.stderr
    done = [json.loads(line) for line in result.stdout.splitlines() if '"turn_done"' in line]
    assert [d["turn"] for d in done] == [3]
    record = done[0]["record"]
    # The history read once, fresh, after the system prompt the first run left in the state cache.
    assert 8 < record["tokens"]["prompt_evaluated"] < record["tokens"]["prompt_total"] // 2
    traj = read_trajectory(out)
    assert [t.action for t in traj.current_branch()] == ["ls", "pwd", "whoami"]
    assert traj.current_branch()[2].parent == traj.current_branch()[1].id


def test_regenerate_in_a_script_runs_the_last_turn_again_and_records_the_attempt(tmp_path):
    out = tmp_path / "s.jsonl"
    model = scripted_model(tmp_path, THOUGHT_LS)
    result = awl("run", "-m", model, "-o", str(out), "--json", home=tmp_path, stdin="ls\npwd\n:regenerate\n")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    # `:regenerate` is told as a regenerate (not an undo), with where the branch stands.
    assert [(e["event"], e.get("turn", e.get("turns"))) for e in lines if e["event"] in ("action", "undo", "regenerate")] == [
        ("action", 1), ("action", 2), ("regenerate", 2), ("action", 2)]
    regenerate = next(e for e in lines if e["event"] == "regenerate")
    assert regenerate == {"event": "regenerate", "turn": 2, "attempt": 1, "turns": 1, "head": 1}
    assert lines[-1] == {"event": "saved", "path": str(out), "turns": 2}
    branch = read_trajectory(out).current_branch()
    assert [(t.action, t.extra.get("attempt")) for t in branch] == [("ls", None), ("pwd", 1)]


def test_regenerate_before_any_turn_is_a_clear_error(tmp_path):
    script = tmp_path / "actions.txt"
    script.write_text(":regenerate\nls\n", encoding="utf-8")
    result = awl("run", str(script), "-m", scripted_model(tmp_path, THOUGHT_LS), "-o", str(tmp_path / "s.jsonl"),
                 home=tmp_path)
    assert_one_line_error(result, "no turn to regenerate")


def test_a_control_after_the_last_turn_reaches_the_next_turn_after_resume(tmp_path):
    """It used to be lost: the control lived only in memory until a turn carried it."""
    out = tmp_path / "s.jsonl"
    model = scripted_model(tmp_path, THOUGHT_LS)
    first = awl("run", "-m", model, "-o", str(out), home=tmp_path, stdin="ls\n:control the disk is full\n")
    assert first.returncode == 0, first.stderr
    result = awl("run", "--resume", str(out), "-m", model, home=tmp_path, stdin="touch notes.txt\n")
    assert result.returncode == 0, result.stderr
    last = read_trajectory(out).current_branch()[-1]
    assert last.action == "touch notes.txt" and last.controls_added == ["the disk is full"]
    assert "the disk is full" in last.prompt


def test_the_web_state_format_is_kept_by_resume(tmp_path):
    out = tmp_path / "s.jsonl"
    model = scripted_model(tmp_path, THOUGHT_LS)
    first = awl("run", "-m", model, "-o", str(out), "-d", "web", "--state-format", "html", home=tmp_path, stdin="click 12\n")
    assert first.returncode == 0, first.stderr
    assert read_trajectory(out).header.state_format == "html"
    result = awl("run", "--resume", str(out), "-m", model, home=tmp_path, stdin="click 13\n")
    assert result.returncode == 0, result.stderr
    turns = read_trajectory(out).current_branch()
    assert [t.action for t in turns] == ["click 12", "click 13"]
    assert read_trajectory(out).header.state_format == "html"


def test_awl_fork_then_resume_continues_the_copy_with_its_pending_control(tmp_path):
    out, copy = tmp_path / "s.jsonl", tmp_path / "f.jsonl"
    model = scripted_model(tmp_path, THOUGHT_LS)
    assert awl("run", "-m", model, "-o", str(out), home=tmp_path, stdin="ls\n:control the disk is full\n").returncode == 0
    forked = awl("fork", str(out), "--out", str(copy), home=tmp_path)
    assert forked.returncode == 0 and "wrote 1 turn to" in forked.stderr
    assert read_trajectory(copy).header.forked_from["turn"] == 1
    result = awl("run", "--resume", str(copy), "-m", model, home=tmp_path, stdin="pwd\n")
    assert result.returncode == 0, result.stderr
    assert read_trajectory(copy).current_branch()[-1].controls_added == ["the disk is full"]


def test_untagged_text_streams_in_json_as_it_does_on_screen(tmp_path):
    """A model that writes no observation tag (small models often do) is not silent: its text
    streams as `untagged` events, and the turn records the parser's observation of it."""
    answer_text = "total 0\ndrwxr-xr-x 2 dev dev 4096 .\n<predicted_obs"  # ends with what could become a tag
    raw = "<think>\nno tags today\n</think>\n" + answer_text
    result = awl("run", "-m", scripted_model(tmp_path, raw, chunk=2), "-o", str(tmp_path / "s.jsonl"), "--json",
                 home=tmp_path, stdin="ls\n")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    untagged = "".join(e["text"] for e in lines if e["event"] == "untagged")
    assert untagged == "\ntotal 0\ndrwxr-xr-x 2 dev dev 4096 .\n"  # held back: the start of a tag
    done = next(e for e in lines if e["event"] == "turn_done")
    assert done["record"]["observation"].startswith("total 0") and done["record"]["parse_method"] == "cleaned"


def test_a_notice_during_a_session_is_said_on_stderr(capsys):
    """Notices reach the CLI as events from the runner (a model's log with --verbose, a remote
    server's note); people see each on stderr, programs get it as a JSON line."""
    from agentworld_local.cli.turn_output import TurnPrinter
    from agentworld_local.engine.events import Notice

    TurnPrinter(as_json=False, show_thinking=False, live=False).show(Notice("llama.cpp says hello"))
    assert "awl: llama.cpp says hello" in capsys.readouterr().err
    TurnPrinter(as_json=True, show_thinking=False).show(Notice("x"))
    assert json.loads(capsys.readouterr().out) == {"event": "notice", "text": "x"}


def test_two_sessions_started_in_the_same_second_get_files_of_their_own(tmp_path):
    """The default file is named by the second: the second session gets `-2`, not an error."""
    model = scripted_model(tmp_path, "<predicted_observation>\nok\n</predicted_observation>")
    for _ in range(3):
        result = awl("run", "-m", model, home=tmp_path, stdin="ls\n")
        assert result.returncode == 0, result.stderr
    sessions = sorted((tmp_path / "data" / "sessions").glob("*.jsonl"))
    assert len(sessions) == 3 and all(len(read_trajectory(path).turns) == 1 for path in sessions)


def test_the_default_session_file_of_a_taken_second_gets_a_number(tmp_path, monkeypatch):
    from datetime import datetime

    from agentworld_local.session import files

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime(2026, 12, 3, 9, 59, 45)

    monkeypatch.setattr(files, "datetime", Frozen)
    first = files.default_session_path("terminal", tmp_path)
    first.write_text("taken")
    second = files.default_session_path("terminal", tmp_path)
    second.write_text("taken")
    assert (first.name, second.name, files.default_session_path("terminal", tmp_path).name) == (
        "20261203-095945-terminal.jsonl", "20261203-095945-terminal-2.jsonl", "20261203-095945-terminal-3.jsonl")


def test_untagged_text_at_a_terminal_is_one_marked_line_as_it_streams(capsys):
    from agentworld_local.cli.turn_output import TurnPrinter
    from agentworld_local.engine import events as ev

    printer = TurnPrinter(as_json=False, show_thinking=False, live=False)
    printer.show(ev.TurnStarted(1, "ls"))
    for piece in ("\n", "total", " 0", "\nfile"):
        printer.show(ev.AnswerDelta(1, piece))
        printer.show(ev.UntaggedDelta(1, piece))
    err = capsys.readouterr().err
    assert err.count("(untagged answer)") == 1 and "(untagged answer) total 0\nfile" in err
