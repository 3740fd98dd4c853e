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
