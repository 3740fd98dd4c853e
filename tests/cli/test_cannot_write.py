"""`Cannot write PATH: REASON. FIX.`: one wording, with the real reason, for every command
that writes a file (session/files.py cannot_write)."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest

from agentworld_local.errors import InputError
from agentworld_local.session.files import cannot_write, ensure_new_file, write_whole
from tests.cli.helpers import assert_one_line_error, awl, scripted_model

DEMO = "assets/examples/terminal-demo.jsonl"


def unwritable_target(tmp_path: Path, name: str) -> Path:
    """A path in a folder this process may not write to."""
    if os.geteuid() == 0:  # root ignores permission bits; sysfs refuses a new file even to root
        if sys.platform != "linux" or not Path("/sys").is_dir():
            pytest.skip("running as root, and no read-only sysfs to stand for an unwritable folder")
        return Path("/sys") / name
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    return locked / name


def targets(tmp_path: Path, name: str) -> dict[str, tuple[Path, tuple[str, ...]]]:
    folder = tmp_path / "folder"
    folder.mkdir()
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file\n")
    return {
        "permission": (unwritable_target(tmp_path, name), ("permission denied", "folder you can write to")),
        "not a directory": (blocker / name, (f"{blocker} is a file, not a directory", "inside a directory")),
        "a directory": (folder, ("it is a directory", f"{folder}/NAME.jsonl")),
        "name too long": (tmp_path / ("a" * 300 + name), ("bytes long", "Choose a shorter name")),
        "exists": (blocker, ("already exists", "delete that one first")),
    }


COMMANDS = {
    "run": lambda tmp, out: ["run", "-m", scripted_model(tmp, "<predicted_observation>\nx\n</predicted_observation>"),
                             "-o", str(out)],
    "fork": lambda tmp, out: ["fork", DEMO, "--out", str(out)],
    "export": lambda tmp, out: ["export", DEMO, "--out", str(out)],
    "export asciicast": lambda tmp, out: ["export", DEMO, "--format", "asciicast", "--out", str(out)],
}


@pytest.mark.parametrize("reason", ["permission", "not a directory", "a directory", "name too long", "exists"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_says_why_it_cannot_write_in_one_wording(tmp_path, command, reason):
    target, fragments = targets(tmp_path, "s.jsonl")[reason]
    if command == "export asciicast":  # the hint names a file of the output's kind: a recording is .cast
        fragments = tuple(fragment.replace("NAME.jsonl", "NAME.cast") for fragment in fragments)
    result = awl(*COMMANDS[command](tmp_path, target), home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, "Cannot write ", *fragments)
    assert "Free disk space" not in result.stderr
    assert (tmp_path / "notes.txt").read_text() == "a file\n"  # nothing was overwritten


@pytest.mark.parametrize(
    ("number", "reason", "fix"),
    [
        (errno.EACCES, "permission denied", "folder you can write to"),
        (errno.EROFS, "read-only", "writable drive"),
        (errno.ENOSPC, "the disk is full", "Free disk space"),
        (errno.ENAMETOOLONG, "too long", "shorter name"),
        (errno.ENOTDIR, "not a directory", "inside a directory"),
    ],
)
def test_each_reason_has_its_own_fix(number, reason, fix):
    error = cannot_write(Path("x/s.jsonl"), OSError(number, os.strerror(number)))
    assert error.message.startswith("Cannot write x/s.jsonl: ") and reason in error.message
    assert fix in error.hint


def test_a_full_disk_while_writing_leaves_no_file_and_says_so(tmp_path, monkeypatch):
    def full(*_args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    out = tmp_path / "rows.jsonl"
    with pytest.raises(InputError) as raised:
        write_whole(out, [b"{}\n"])
    assert "the disk is full; no file was left behind" in raised.value.message
    assert "Free disk space" in raised.value.hint
    assert list(tmp_path.iterdir()) == []


def test_a_new_file_in_folders_not_made_yet_is_fine(tmp_path):
    ensure_new_file(tmp_path / "a" / "b" / "s.jsonl")
    assert list(tmp_path.iterdir()) == []  # the check leaves nothing behind
