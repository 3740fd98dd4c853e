"""`awl run --json` writes its lines with the trajectory writer's encoder: no control
character, C0 or C1 (U+0080..U+009F, e.g. U+009B, a terminal's CSI), reaches stdout raw."""

from __future__ import annotations

import json

from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import awl, scripted_model

# What a model might write for a program that prints escape sequences: C1 controls, a BEL, an ESC.
HOSTILE = "done \x9b31m red \x85 next \x07 bell \x1b[2J \u2028 sep"
ANSWER = f"<think>\nprint it\n</think>\n<predicted_observation>\n{HOSTILE}\n</predicted_observation>"


def raw_controls(text: str) -> set[str]:
    return {ch for ch in text if (ord(ch) < 0x20 and ch != "\n") or 0x7F <= ord(ch) <= 0x9F or ch in "\u2028\u2029"}


def test_run_json_escapes_every_control_as_the_trajectory_writer_does(tmp_path):
    out = tmp_path / "s.jsonl"
    for chunk in (1, 2, 5):  # the answer split at arbitrary points
        model = scripted_model(tmp_path, {"raw": ANSWER, "chunk": chunk}, name=f"a{chunk}.json")
        out.unlink(missing_ok=True)
        result = awl("run", "-m", model, "-o", str(out), "--json", home=tmp_path, stdin="./colours\n")
        assert result.returncode == 0, result.stderr
        assert raw_controls(result.stdout) == set(), sorted(raw_controls(result.stdout))
        assert "\\u009b" in result.stdout and "\\u0085" in result.stdout  # escaped, not dropped
        events = [json.loads(line) for line in result.stdout.splitlines()]
        done = next(event for event in events if event["event"] == "turn_done")
        assert HOSTILE in done["record"]["observation"]  # the exact text reads back
        saved = out.read_text(encoding="utf-8")
        assert raw_controls(saved) == set()
        assert read_trajectory(out).turns[0].observation == done["record"]["observation"]
