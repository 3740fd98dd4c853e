"""`awl bench judge` and `awl bench score` against a judge server on 127.0.0.1 whose verdicts
the test writes; the scores are checked against a hand computation on the same verdicts."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter

import pytest

from tests.cli.helpers import assert_one_line_error, awl
from tests.remote.conftest import killed_after_lines
from tests.remote.fake_openai import Reply

SYSTEM = {"terminal": "You judge simulated terminals (test pack).", "mcp": "You judge simulated tool calls (test pack)."}


def verdict(format, factuality, consistency, realism, quality=None, *, fenced=True) -> str:
    scores = {"format": format, "factuality": factuality, "consistency": consistency, "realism": realism}
    if quality is not None:
        scores["quality"] = quality
    body = json.dumps({"strengths": ["close to the real output"], "weaknesses": ["a detail differs"], "scores": scores})
    body = f"```json\n{body}\n```" if fenced else body
    return f"Format: fine. Factuality: mostly.\n<final_evaluation>\n{body}\n</final_evaluation>"


#: Row number -> the judge's answers, attempt after attempt.
ANSWERS = {
    1: [verdict(5, 4, 4, 3, 5)],
    # Thinking with a decoy object, floats and "n/5" text: 3.6 -> 4, "2/5" -> 2.
    2: ['<think>Draft: {"scores": {"format": 1}}</think>' + verdict(3.6, "2/5", 1, 5, 4, fenced=False)],
    3: ["I cannot decide.", verdict(2, 2, 2, 2, 2)],  # unreadable, then read on the second attempt
    4: [verdict(4, 4, 4, 4)],  # no quality score: 0, not counted
    5: ["no verdict"] * 5,  # never readable: failed after the attempts
}
DOMAINS = {1: "terminal", 2: "terminal", 3: "terminal", 4: "mcp", 5: "mcp", 6: "terminal"}


def prediction(number: int) -> dict:
    gen = "" if number == 6 else f"<predicted_observation>\nOBS-{number}\n</predicted_observation>"
    return {"task": f"agentworldbench/{DOMAINS[number]}", "id": f"t{number}", "turn_idx": 2, "total_turns": 2,
            "prompt": [f"### Turn 1\n**Action:**\nls {number}", f"### Turn 2\n**Action:**\npwd {number}"],
            "response": [f"**Environment Observation:**\nfirst-{number}", f"**Environment Observation:**\nTRUTH-{number}"],
            "current_prompt": "", "system_str": "sys", "gen": gen, "awl_predict": {"version": 2, "line": number}}


@pytest.fixture
def bench(tmp_path, fake):
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps(prediction(n)) + "\n" for n in range(1, 7)), encoding="utf-8")
    pack = tmp_path / "prompts"
    for domain, text in SYSTEM.items():
        (pack / domain).mkdir(parents=True)
        (pack / domain / "judge_system_prompt.txt").write_text(text, encoding="utf-8")
    asked: Counter = Counter()
    lock = threading.Lock()

    def respond(body):
        user = body["messages"][-1]["content"]
        number = next(n for n in ANSWERS if f"OBS-{n}\n" in user)
        with lock:
            answers = ANSWERS[number]
            text = answers[min(asked[number], len(answers) - 1)]
            asked[number] += 1
            asked["in flight"] += 1
            asked["most at once"] = max(asked["most at once"], asked["in flight"])
        time.sleep(fake.judge_delay)
        with lock:
            asked["in flight"] -= 1
        return Reply(text)

    fake.models[:] = ["judge"]
    fake.respond = respond
    fake.judge_delay = 0.0
    return predictions, pack, tmp_path / "judged.jsonl", asked


def judge_args(predictions, pack, out, fake, *extra):
    return ["bench", "judge", str(predictions), "--judge-base-url", fake.base_url, "--judge-model", "judge",
            "--prompts", str(pack), "--out", str(out), *extra]


def expected_scores() -> dict:
    """The official aggregation by hand, on the verdicts above (rows 5 and 6 failed)."""
    def norm(values):
        return (sum(values) / len(values) - 1) / 4 * 100
    terminal_totals = [(5 + 4 + 4 + 3 + 5) / 5, (4 + 2 + 1 + 5 + 4) / 5, 2.0]
    return {
        "terminal": {"format": norm([5, 4, 2]), "factuality": norm([4, 2, 2]), "consistency": norm([4, 1, 2]),
                     "realism": norm([3, 5, 2]), "quality": norm([5, 4, 2]), "total_score": norm(terminal_totals)},
        "mcp": {"format": 75.0, "factuality": 75.0, "consistency": 75.0, "realism": 75.0, "quality": None,
                "total_score": 75.0},
        "overall": norm(terminal_totals + [4.0]),
    }


def check_scores(summary: dict) -> None:
    wanted = expected_scores()
    for domain in ("terminal", "mcp"):
        for column, value in wanted[domain].items():
            got = summary["domains"][domain]["scores"][column]
            assert got == pytest.approx(value) if value is not None else got is None, (domain, column)
    assert summary["overall"] == pytest.approx(wanted["overall"])
    assert (summary["rows"], summary["valid"], summary["failed"]) == (6, 4, 2)
    assert (summary["domains"]["terminal"]["valid"], summary["domains"]["terminal"]["failed"]) == (3, 1)
    assert (summary["domains"]["mcp"]["valid"], summary["domains"]["mcp"]["failed"]) == (1, 1)


def test_judge_then_score_match_a_hand_computation(bench, fake):
    predictions, pack, out, asked = bench
    fake.judge_delay = 0.3  # each verdict takes a while: the requests overlap
    result = awl(*judge_args(predictions, pack, out, fake, "--concurrency", "3", "--json"), home=out.parent)
    assert result.returncode == 0, result.stderr
    check_scores(json.loads(result.stdout))
    assert asked.pop("most at once") == 3 and asked.pop("in flight") == 0
    assert dict(asked) == {1: 1, 2: 1, 3: 2, 4: 1, 5: 3}  # none for the row without a prediction
    rows = {json.loads(line)["awl_judge"]["line"]: json.loads(line) for line in out.read_text().splitlines()}
    assert list(rows) == [1, 2, 3, 4, 5, 6], "in the predictions' order, whatever order the verdicts came in"
    assert rows[2]["factuality"] == 2 and rows[2]["consistency"] == 1 and rows[2]["failed"] == 0.0
    assert rows[6]["failed"] == 1.0 and rows[6]["error_message"] == "No model generation"
    assert rows[5]["failed"] == 1.0 and rows[5]["total_score"] == 0 and rows[5]["error_message"] == "Judge scoring failed"
    assert "no JSON object" in rows[5]["judge_problem"]
    # The first reasons rows failed, counted by reason, and where the user message's words came from.
    assert "1 row failed: the judge's verdict could not be read: no JSON object in the verdict (line 5)" in result.stderr
    assert "1 row failed: No model generation (line 6)" in result.stderr
    assert "the judge's user message: awl's own wording" in result.stderr
    # What the judge saw: the pack's system prompt, the earlier turn, the prediction and the truth.
    for body in fake.requests:
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        number = next(n for n in ANSWERS if f"OBS-{n}\n" in user)
        assert system == SYSTEM[DOMAINS[number]]
        # Earlier turns as the benchmark wrote them (prompt, then the observation with its marker).
        assert f"ls {number}\n**Environment Observation:**\nfirst-{number}" in user
        assert f"pwd {number}" in user and f"TRUTH-{number}" in user
        assert "**Environment Observation:**" not in user.split(f"pwd {number}")[1]  # markers removed
    score = awl("bench", "score", str(out), "--json", home=out.parent)
    assert score.returncode == 0, score.stderr
    check_scores(json.loads(score.stdout))
    table = awl("bench", "score", str(out), home=out.parent)
    assert "Terminal" in table.stdout and "MCP" in table.stdout and f"{expected_scores()['overall']:.2f}" in table.stdout


def test_an_interrupted_judge_goes_on_without_judging_rows_again(bench, fake):
    predictions, pack, out, asked = bench
    fake.judge_delay = 0.4
    first = killed_after_lines(judge_args(predictions, pack, out, fake, "--concurrency", "1"), out, 2, out.parent, "awl_judge")
    assert 2 <= len(first) < 6
    fake.judge_delay = 0.0
    before = Counter(asked)
    result = awl(*judge_args(predictions, pack, out, fake, "--json"), home=out.parent)
    assert result.returncode == 0, result.stderr
    again = Counter({n: c for n, c in (asked - before).items() if isinstance(n, int)})
    assert not (set(again) & first)  # finished rows were not judged again
    lines = [json.loads(line)["awl_judge"]["line"] for line in out.read_text().splitlines()]
    assert sorted(lines) == [1, 2, 3, 4, 5, 6]
    check_scores(json.loads(result.stdout))


def test_a_pack_without_a_domains_judge_prompt_is_one_line_before_any_request(bench, fake):
    predictions, pack, out, _ = bench
    (pack / "mcp" / "judge_system_prompt.txt").unlink()
    result = awl(*judge_args(predictions, pack, out, fake), home=out.parent)
    assert_one_line_error(result, "mcp/judge_system_prompt.txt")
    assert fake.requests == []


def test_an_unknown_judge_model_is_one_line(bench, fake):
    predictions, pack, out, _ = bench
    fake.models[:] = ["other"]
    assert_one_line_error(awl(*judge_args(predictions, pack, out, fake), home=out.parent), "--judge-model other")


def test_a_judge_that_refuses_the_key_stops_the_run_on_one_line_and_the_rerun_finishes(bench, fake):
    predictions, pack, out, asked = bench
    fake.errors[:] = [(401, "key revoked")]  # every row would fail alike: the run stops, nothing is failed
    result = awl(*judge_args(predictions, pack, out, fake, "--retries", "0", "--concurrency", "1"), home=out.parent)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("awl: error:")]
    assert len(errors) == 1 and "refused the API key" in errors[0] and "the same command goes on" in errors[0]
    again = awl(*judge_args(predictions, pack, out, fake, "--json"), home=out.parent)
    assert again.returncode == 0, again.stderr
    check_scores(json.loads(again.stdout))
