"""Files a person edited, a crash cut short or a long name made: `awl` says one line and
loses nothing (issue 15)."""

from __future__ import annotations

import json

import pytest

from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import assert_one_line_error, awl, scripted_model

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
