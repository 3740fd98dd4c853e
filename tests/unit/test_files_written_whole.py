"""Every file awl writes whole goes through files.writing_whole (issue 15): a file written in
place was left shorter but complete-looking by a kill (`awl fork`) or partial by a full disk
(an asciicast export), and blocked the rerun. Append-only files (sessions, predictions,
verdicts) and a download that resumes are the exceptions, each named here with its reason."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "agentworld_local"
#: Writing a file's bytes in place: a whole-file write that is not writing_whole.
IN_PLACE = re.compile(r"\.write_text\(|\.write_bytes\(|\bopen\([^)]*[\"'](?:w|x)b?[\"']|os\.(?:replace|rename)\(")
ALLOWED = {
    "files.py": "writing_whole itself",
    "trajectory/writer.py": "a session file is append-only: a line at a time, fsynced, cut back on failure",
    "cli/main.py": "stdout pointed at os.devnull after a closed pipe",
    "models/hub.py": "a download appends to NAME.incomplete, resumable, and renames it when its hash is checked",
    "fixtures/tiny_gguf.py": "test fixtures, written by the gguf package",
    "engine/llama/state_cache.py": "a state is written with ordinary writes to a temporary file, renamed when whole",
    "env/gym.py": "a vector env's long observation spilled to its own private temp folder, renamed when whole",
}


def test_whole_file_writers_use_writing_whole():
    found = {}
    for path in PACKAGE.rglob("*.py"):
        name = path.relative_to(PACKAGE).as_posix()
        lines = [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if IN_PLACE.search(line) and not line.lstrip().startswith("#")]
        if lines and name not in ALLOWED:
            found[name] = lines
    assert not found, f"write these with files.writing_whole (or name the reason in ALLOWED): {found}"


def test_the_rule_sees_an_in_place_write():
    assert IN_PLACE.search('path.write_text(text, encoding="utf-8")')
    assert IN_PLACE.search('with open(out, "x", encoding="utf-8") as handle:')
    assert IN_PLACE.search("os.replace(temporary, ref)")
    assert not IN_PLACE.search('with open(path, "rb") as handle:')


def test_writing_whole_publishes_only_a_complete_file(tmp_path):
    import pytest

    from agentworld_local.files import writing_whole

    target = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError):
        with writing_whole(target) as handle:
            handle.write(b"half")
            raise RuntimeError("killed part-way")
    assert list(tmp_path.iterdir()) == []
    with writing_whole(target) as handle:
        handle.write(b"whole\n")
    assert target.read_bytes() == b"whole\n" and list(tmp_path.iterdir()) == [target]
    with pytest.raises(FileExistsError):
        with writing_whole(target) as handle:
            handle.write(b"other\n")
    with writing_whole(target, overwrite=True) as handle:
        handle.write(b"new\n")
    assert target.read_bytes() == b"new\n" and list(tmp_path.iterdir()) == [target]


def test_a_file_that_appears_meanwhile_is_not_replaced(tmp_path):
    import pytest

    from agentworld_local.files import writing_whole

    target = tmp_path / "out.jsonl"
    with pytest.raises(FileExistsError):
        with writing_whole(target) as handle:
            handle.write(b"mine\n")
            target.write_bytes(b"someone else's\n")  # another process took the name meanwhile
    assert target.read_bytes() == b"someone else's\n" and list(tmp_path.iterdir()) == [target]
