"""Files a person edited, a crash cut short or a long name made: `awl` says one line and
loses nothing (issue 15)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import REPO, assert_one_line_error, awl, awl_env, scripted_model

LS = "<think>\nNothing here yet.\n</think>\n<predicted_observation>\ntotal 0\n</predicted_observation>"


def edit_header(path, **sampling) -> None:
    header, *rest = path.read_bytes().splitlines(keepends=True)
    record = json.loads(header)
    record["sampling"].update(sampling)
    path.write_bytes(json.dumps(record).encode() + b"\n" + b"".join(rest))


@pytest.mark.parametrize(
    ("sampling", "said"),
    [
        ({"temperature": "0.6"}, "`sampling.temperature` '0.6' is not a number"),
        ({"max_tokens": -1}, "`sampling.max_tokens` -1 leaves no room for an observation"),
        ({"top_k": 10**30}, "`sampling.top_k` 1000000000000000000000000000000 is out of range"),
    ],
)
def test_resume_checks_the_headers_sampling_by_the_options_rules(tmp_path, sampling, said):
    """A text temperature was a traceback; `max_tokens: -1` gave 1-token turns."""
    out = tmp_path / "s.jsonl"
    model = scripted_model(tmp_path, LS)
    assert awl("run", "-m", model, "-o", str(out), home=tmp_path, stdin="ls\n").returncode == 0
    edit_header(out, **sampling)
    before = out.read_bytes()
    result = awl("run", "--resume", str(out), "-m", model, home=tmp_path, stdin="pwd\n")
    assert_one_line_error(result, said, "line 1")
    assert out.read_bytes() == before and len(read_trajectory(out).turns) == 1


# -- names longer than a file system holds (255 bytes a component) ----------------------------

LONG = "a" * 300
DEMO = "assets/examples/terminal-demo.jsonl"


def bench_rows(tmp_path, *ids: str):
    """AgentWorldBench rows (the demo's, exported), one trajectory per id."""
    rows_file = tmp_path / "rows.jsonl"
    assert awl("export", DEMO, "--out", str(rows_file), home=tmp_path).returncode == 0
    rows = [json.loads(line) for line in rows_file.read_text(encoding="utf-8").splitlines()]
    out = tmp_path / "bench.jsonl"
    out.write_text("".join(json.dumps(row | {"id": id_}) + "\n" for id_ in ids for row in rows), encoding="utf-8")
    return out


@pytest.mark.parametrize(
    "command",
    [
        ["fork", DEMO, "--out", f"{LONG}.jsonl"],
        ["export", DEMO, "--out", f"{LONG}.jsonl"],
        ["export", DEMO, "--format", "asciicast", "--out", f"{LONG}.cast"],
        ["run", "-m", "scripted:answers.json", "-o", f"{LONG}.jsonl"],
        ["demo", "-m", "scripted:answers.json", "-o", f"{LONG}.jsonl"],
        ["bench", "predict", "BENCH", "-m", "scripted:answers.json", "-o", f"{LONG}.jsonl"],
        ["import", "BENCH", "--out-dir", LONG],
        ["run", "-m", f"{LONG}.gguf"],
        ["scenarios", "show", f"{LONG}.toml"],
        ["replay", f"{LONG}.jsonl"],
        ["models", "info", f"{LONG}.gguf"],
    ],
    ids=lambda command: " ".join(command[:2]) if command[0] in ("bench", "scenarios", "models") else command[0],
)
def test_a_given_name_too_long_for_the_file_system_is_one_line(tmp_path, command):
    """Each of these raised ENAMETOOLONG as a traceback."""
    bench = bench_rows(tmp_path, "t1")
    command = [str(bench) if part == "BENCH" else part for part in command]
    result = awl(*command, home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, "is 30", "bytes long; file systems allow at most 255 bytes per name", "shorter name")


def test_import_shortens_a_name_it_derives_from_a_long_row_id(tmp_path):
    """`awl import` of a row whose id is long named its file after the whole id."""
    bench = bench_rows(tmp_path, "x" * 400, "x" * 399 + "y")
    result = awl("import", str(bench), "--out-dir", str(tmp_path / "imported"), home=tmp_path)
    assert result.returncode == 0, result.stderr
    files = sorted((tmp_path / "imported").iterdir())
    assert len(files) == 2 and all(len(f.name.encode()) <= 255 and f.suffix == ".jsonl" for f in files)
    assert files[0].name != files[1].name and all(f.name.startswith("terminal-xxxx") for f in files)
    assert all(len(read_trajectory(f).turns) == 5 for f in files)
    # Without --out-dir the folder is named after the file: `bench-` + a 250-byte stem is too long.
    named = bench.rename(tmp_path / ("b" * 250 + ".jl"))
    result = awl("import", str(named), home=tmp_path)
    assert result.returncode == 0, result.stderr
    [folder] = (tmp_path / "data" / "sessions").iterdir()
    assert folder.name.startswith("bench-bbbb") and len(folder.name.encode()) == 255 and len(list(folder.iterdir())) == 2


def test_fit_name_cuts_at_a_character_boundary_and_keeps_short_names():
    from agentworld_local.files import fit_name

    assert fit_name("session", ".jsonl") == "session.jsonl"
    long = fit_name("é" * 200, ".cast")
    assert len(long.encode()) <= 255 and long.endswith(".cast") and long.startswith("é" * 100)
    assert fit_name("é" * 200, ".cast") == long != fit_name("é" * 199 + "e", ".cast")


# -- files written whole: a kill or a full disk part-way leaves nothing that blocks a rerun ----------


def awl_with_file_limit(limit: int, *args: str, home) -> subprocess.CompletedProcess:
    """`awl ARGS` with a file size limit (RLIMIT_FSIZE): past `limit` bytes a write fails as on a full disk."""
    code = ("import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit})); "
            "from agentworld_local.cli.main import main; sys.argv[0] = 'awl'; sys.exit(main())")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=awl_env(home),
                          cwd=REPO)


@pytest.mark.skipif(sys.platform == "win32", reason="uses RLIMIT_FSIZE")
@pytest.mark.parametrize(
    ("command", "out_name", "room"),
    [
        (["fork", DEMO, "--turn", "4", "--out", "OUT"], "fork.jsonl", 600),  # the header fits, the turns do not
        (["export", DEMO, "--format", "asciicast", "--out", "OUT"], "demo.cast", 3000),
        (["export", DEMO, "--out", "OUT"], "rows.jsonl", 3000),
    ],
    ids=["fork", "asciicast", "rows"],
)
def test_a_full_disk_part_way_leaves_no_file_and_says_so(tmp_path, command, out_name, room):
    """A fork to a full disk said its turns were intact; an asciicast export left a partial .cast
    that refused the rerun."""
    out = tmp_path / "out" / out_name
    args = [str(out) if part == "OUT" else part for part in command]
    limit = room + (len((REPO / DEMO).read_bytes().split(b"\n")[0]) if command[0] == "fork" else 0)
    result = awl_with_file_limit(limit, *args, home=tmp_path)
    assert_one_line_error(result, "no file was left behind", "run the same command again")
    assert "intact" not in result.stderr
    assert not out.exists() and list(out.parent.iterdir()) == [], "no partial file, no temporary file"
    again = awl(*args, home=tmp_path)
    assert again.returncode == 0, again.stderr
    assert out.stat().st_size > limit


def test_a_killed_fork_leaves_no_shorter_file_that_looks_complete(tmp_path):
    """`awl fork` killed part-way left a file whose header said "forked at turn 3000" and held
    51 turns, and the rerun refused to overwrite it. The kill lands at a different point each time."""
    from agentworld_local.trajectory import Header, TurnRecord, write_new

    turns = 3000
    source = write_new(tmp_path / "long.jsonl", Header(domain="terminal", initial_state="$ "),
                       (TurnRecord(f"echo {n}", f"{n}\n" + "x" * 1000 + "\n$ ") for n in range(1, turns + 1)))
    out = tmp_path / "forks" / "fork.jsonl"
    out.parent.mkdir()
    command = [sys.executable, "-m", "agentworld_local.cli.main", "fork", str(source), "--out", str(out)]
    for delay in (0.0, 0.002, 0.01, 0.05):
        process = subprocess.Popen(command, env=awl_env(tmp_path), cwd=REPO, stderr=subprocess.DEVNULL)
        while process.poll() is None and not any(out.parent.iterdir()):
            time.sleep(0.001)  # until the fork starts writing
        time.sleep(delay)  # a moment of the write to land in (any moment must hold), not a wait for an event
        process.send_signal(signal.SIGKILL)
        process.wait()
        if out.exists():  # the kill came after the end: then the file is whole
            assert len(read_trajectory(out).turns) == turns
            out.unlink()
        for left in out.parent.iterdir():  # what a kill leaves is a hidden temporary file, not a session
            assert left.name.startswith(".fork.jsonl.") and left.name.endswith(".part"), left.name
            left.unlink()
    again = awl("fork", str(source), "--out", str(out), home=tmp_path)
    assert again.returncode == 0, again.stderr
    forked = read_trajectory(out)
    assert len(forked.turns) == turns and forked.header.forked_from["turn"] == turns and not forked.warnings


# -- a long session resumes in time linear in its file ------------------------------------------


def test_a_long_session_resumes_reading_its_file_once(tmp_path, monkeypatch):
    """Resuming a 20,000-turn file took a minute: the file was parsed four times, whole, with a
    nesting walk over every value (bench/hostile_scale.py prints the numbers). Bounded here:
    3,000 turns, read once by Session.resume, and the next turn follows the last."""
    from agentworld_local.domains import get_domain
    from agentworld_local.engine.scripted import ScriptedBackend
    from agentworld_local.engine.settings import SessionSettings
    from agentworld_local.engine.world import World
    from agentworld_local.session import core
    from agentworld_local.testing.answers import answer
    from agentworld_local.trajectory import TurnRecord, write_new
    from agentworld_local.trajectory import writer as writer_module

    backend = ScriptedBackend([answer("thinking_then_tags").scripted()])
    first = core.Session.create(World(backend, get_domain("terminal"), SessionSettings()), tmp_path / "a.jsonl")
    header = first.header  # a real session's header, for this backend
    first.close(discard_if_unused=True)
    turns = 3000
    path = write_new(tmp_path / "long.jsonl", header,
                     (TurnRecord(f"echo {n}", f"{n}\n$ ", prompt=f"### Turn {n}") for n in range(1, turns + 1)))
    reads: list[str] = []
    real = core.read_trajectory
    monkeypatch.setattr(core, "read_trajectory", lambda p: reads.append(str(p)) or real(p))
    monkeypatch.setattr(writer_module, "read_trajectory", lambda p: pytest.fail("append_to read the file again"))
    session = core.Session.resume(path, backend)
    events = list(session.step("pwd"))
    session.close()
    assert reads == [str(path)]
    record = events[-1].record
    assert (record.turn, record.parent) == (turns + 1, turns)
    assert len(real(path).turns) == turns + 1


@pytest.mark.parametrize("attempt", ['"second"', "1e400", "-3", "null"])
def test_regenerate_after_resume_reads_a_stored_attempt_defensively(tmp_path, attempt):
    """A turn's `attempt` is a stored number too: text there made regenerate a traceback."""
    from agentworld_local.domains import get_domain
    from agentworld_local.engine.scripted import ScriptedBackend
    from agentworld_local.engine.settings import SessionSettings
    from agentworld_local.engine.world import World
    from agentworld_local.session.core import Session
    from agentworld_local.testing.answers import answer

    backend = ScriptedBackend([answer("thinking_then_tags").scripted()])
    path = tmp_path / "s.jsonl"
    session = Session.create(World(backend, get_domain("terminal"), SessionSettings()), path)
    list(session.step("ls"))
    session.close()
    header, turn = path.read_text(encoding="utf-8").splitlines()
    path.write_text(header + "\n" + turn[:-1] + f', "attempt": {attempt}}}\n', encoding="utf-8")
    resumed = Session.resume(path, backend)
    events = list(resumed.regenerate())
    resumed.close()
    assert events[-1].record.extra["attempt"] == 1 and events[-1].record.turn == 1
