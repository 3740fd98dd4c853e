"""awl run in a context too small for the whole session: it goes on, says which turns the
model no longer sees (plain line and `context_trimmed` JSON event), and the file says so too."""

from __future__ import annotations

import json

from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import awl, scripted_model

SCREEN = "\n".join(f"-rw-r--r-- 1 user user {n:5d} Dec  2 file_{n}.txt" for n in range(8))
ANSWER = {"raw": f"<think>\nok\n</think>\n<predicted_observation>\n{SCREEN}\n</predicted_observation>", "chunk": 50}
ACTIONS = "".join(f"cat f{n}\n" for n in range(1, 31))
OPTIONS = ["--ctx", "2048", "--max-tokens", "64", "--think", "off"]


def test_a_session_longer_than_the_context_goes_on_and_says_what_the_model_no_longer_sees(tmp_path):
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", scripted_model(tmp_path, ANSWER), "-o", str(out), *OPTIONS, home=tmp_path, stdin=ACTIONS)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "left out of the model's view" in line]
    assert len(lines) >= 2 and "Traceback" not in result.stderr
    assert "(2,048 tokens); turns 2-" in lines[0] and "the file keeps them" in lines[0]
    turns = read_trajectory(out).current_branch()
    assert len(turns) == 30
    cut_turns = [t for t in turns if t.context and "cut" in t.context]
    assert len(cut_turns) == len(lines)
    assert f"turns 2-{cut_turns[0].context['omitted_turns']['last']} are" in lines[0]


def test_json_mode_prints_a_context_trimmed_event_before_the_turn_streams(tmp_path):
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", scripted_model(tmp_path, ANSWER), "-o", str(out), "--json", *OPTIONS,
                 home=tmp_path, stdin=ACTIONS)
    assert result.returncode == 0, result.stderr
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    cuts = [(index, e) for index, e in enumerate(printed) if e["event"] == "context_trimmed"]
    assert cuts
    index, cut = cuts[0]
    before = printed[index - 1]
    assert (before["event"], before["turn"], before["action"]) == ("action", cut["turn"], f"cat f{cut['turn']}")
    assert cut["first"] == 2 and cut["n_ctx"] == 2048 and cut["tokens_after"] < cut["tokens_before"]
    done = next(e for e in printed[index:] if e["event"] == "turn_done")
    assert done["turn"] == cut["turn"]
    assert done["record"]["context"]["omitted_turns"] == {"first": 2, "last": cut["last"]}
    assert printed[-1]["event"] == "saved" and printed[-1]["turns"] == 30
