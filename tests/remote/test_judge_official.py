"""`awl bench judge` over the prompts/ folder of an official checkout, proven on a checkout this
test builds itself: the official file layout (eval/eval.py, eval/lwm_eval_utils/task_configs.py,
prompts/<domain>/judge_system_prompt.txt) holding this test's own text with the official
placeholders. A recording loopback server proves each request body; canned verdicts (a
negative score among them) prove the score table against a hand computation.

The official rules, restated: the system message is the domain's file as Python's
`read_text` gives it (newlines made `\\n`); the user message is the template filled with
the labels `build_judge_messages` puts around the earlier turns ("prompt\\nresponse\\n\\n"
each, only when there are some), the current prompt, the prediction (thinking removed,
the last response block, tags in any case, the domain's marker taken off) and the truth
(marker taken off), then stripped; model, 32,768 max tokens, temperature 0.6, nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import assert_one_line_error, awl
from tests.remote.bench_server import Canned, CannedServer

# -- the test's own checkout ---------------------------------------------------------------

EVAL_PY = '''"""A stand-in for the evaluation script, in this test's words: only its layout is official."""
from lwm_eval_utils import JUDGE_USER_PROMPT


def build_judge_messages(job, model_output, judge_system_prompts):
    context = ""
    for i in range(job["turn_idx"] - 1):
        context += job["prompt"][i] + "\\n" + job["response"][i] + "\\n\\n"
    if context:
        context = f"== PAST TURNS ==\\n{context}"
    user_prompt = JUDGE_USER_PROMPT.format(
        context=context,
        world_model_input=f"== NOW ==\\n{current_prompt}",
        predicted_observation=f"<<SIM>>\\n{model_output_clean}\\n<</SIM>> {{not a field}}",
        ground_truth=f"<<REAL>>\\n{ground_truth_clean}\\n<</REAL>>",
    ).strip()
    return user_prompt
'''
TEMPLATE = '''{context}

{world_model_input}

{predicted_observation}
{ground_truth}

Rate the simulation from 1 to 5 on each of five axes, then answer {{"scores": ...}} inside <verdict_here> tags.'''
CONFIGS = {
    "terminal": {"response_marker": "**Environment Observation:**", "response_tag": "predicted_observation",
                 "judge_response_tag": "verdict_here", "judge_system_prompt_path": "prompts/terminal/judge_system_prompt.txt"},
    # Another marker: the truth keeps the benchmark's, the prediction loses this one.
    "mcp": {"response_marker": "**Tool Says:**", "response_tag": "predicted_observation",
            "judge_response_tag": "verdict_here", "judge_system_prompt_path": "prompts/mcp/judge_system_prompt.txt"},
}
TASK_CONFIGS_PY = f'''"""A stand-in for task_configs.py, in this test's words."""
SCORE_DIMENSIONS = ["format", "factuality", "consistency", "realism", "quality"]
TASK_CONFIGS = {CONFIGS!r}
JUDGE_USER_PROMPT = """{TEMPLATE}"""
'''
SYSTEM = {"terminal": b"Judge the terminal (test text).\r\nLine two.\r\n", "mcp": b"Judge the tools (test text).\n"}
LABELS = {"context": ("== PAST TURNS ==\n", ""), "world_model_input": ("== NOW ==\n", ""),
          "predicted_observation": ("<<SIM>>\n", "\n<</SIM>> {not a field}"), "ground_truth": ("<<REAL>>\n", "\n<</REAL>>")}


def build_checkout(root: Path) -> Path:
    (root / "eval" / "lwm_eval_utils").mkdir(parents=True)
    (root / "eval" / "eval.py").write_text(EVAL_PY, encoding="utf-8")
    (root / "eval" / "lwm_eval_utils" / "task_configs.py").write_text(TASK_CONFIGS_PY, encoding="utf-8")
    for domain, text in SYSTEM.items():
        (root / "prompts" / domain).mkdir(parents=True)
        (root / "prompts" / domain / "judge_system_prompt.txt").write_bytes(text)
    return root / "prompts"


# -- the predictions and the verdicts ----------------------------------------------------------

#: Row -> (domain, gen, what the official rules read from it, the verdict's scores; None: HTTP 500).
ROWS = {
    1: ("terminal", "<think>draft <predicted_observation>no</predicted_observation></think>\n\n<predicted_observation>\nOBS-1\n</predicted_observation>",
        "OBS-1", {"format": 5, "factuality": 3, "consistency": 4, "realism": 4, "quality": 4}),
    2: ("terminal", "<PREDICTED_OBSERVATION>OBS-2</Predicted_Observation> trailing", "OBS-2",
        {"format": 4, "factuality": 3, "consistency": 4, "realism": 9, "quality": 4}),  # 9 is clamped to 5
    3: ("terminal", "plain OBS-3 with no tags\n", "plain OBS-3 with no tags",
        {"format": 3, "factuality": -1, "consistency": 2, "realism": 2, "quality": "2/5"}),  # -1 is kept
    4: ("mcp", "<predicted_observation>**Tool Says:** OBS-4</predicted_observation>", "OBS-4",
        {"format": 4.4, "factuality": 4, "consistency": 4, "realism": 4, "quality": 4}),
    5: ("mcp", "<predicted_observation>OBS-5</predicted_observation>", "OBS-5", None),  # the judge fails: HTTP 500
    6: ("terminal", "", None, None),  # no prediction: failed without a request
}


def job(number: int) -> dict:
    domain, gen, _, _ = ROWS[number]
    prompts = [f"### Turn 1\n**Action:**\nls {number}", f"### Turn 2\n**Action:**\nROW-{number}"]
    return {"task": f"agentworldbench/{domain}", "id": f"t{number}", "turn_idx": 2, "total_turns": 2, "prompt": prompts,
            "response": [f"**Environment Observation:**\nfirst-{number}", f"**Environment Observation:**\nTRUTH-{number}"],
            "current_prompt": "", "system_str": "sys", "gen": gen}


def expected_request(number: int) -> dict:
    domain, _, predicted, _ = ROWS[number]
    row = job(number)
    marker = CONFIGS[domain]["response_marker"]

    def unmarked(text: str) -> str:
        return text[len(marker):].strip() if text.startswith(marker) else text.replace(marker, "").strip()

    def label(name: str, text: str) -> str:
        return LABELS[name][0] + text + LABELS[name][1]

    user = TEMPLATE.format(
        context=label("context", f"{row['prompt'][0]}\n{row['response'][0]}\n\n"),
        world_model_input=label("world_model_input", row["prompt"][1]),
        predicted_observation=label("predicted_observation", unmarked(predicted)),
        ground_truth=label("ground_truth", unmarked(row["response"][1])),
    ).strip()
    system = SYSTEM[domain].decode().replace("\r\n", "\n")
    return {"model": "judge", "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "max_tokens": 32768, "temperature": 0.6}


def verdict(scores: dict) -> str:
    body = json.dumps({"strengths": ["close"], "weaknesses": ["a detail"], "scores": scores})
    # A decoy in the wrong tag comes first: only the domain's judge_response_tag counts.
    return f'<final_evaluation>{{"scores": {{"format": 1}}}}</final_evaluation>\nReasons.\n<verdict_here>\n```json\n{body}\n```\n</verdict_here>'


def row_of(body: dict) -> int:
    return next(n for n in ROWS if f"ROW-{n}" in body["messages"][1]["content"])


@pytest.fixture
def setup(tmp_path):
    pack = build_checkout(tmp_path / "Qwen-AgentWorld")
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps(job(n)) + "\n" for n in ROWS), encoding="utf-8")
    server = CannedServer()
    server.models[:] = ["judge"]
    broken = {5}
    server.canned = lambda body: Canned(status=500) if row_of(body) in broken else Canned(verdict(ROWS[row_of(body)][3]))
    yield predictions, pack, tmp_path / "judged.jsonl", server, broken
    server.close()


def judge(predictions, pack, out, server, *extra):
    return awl("bench", "judge", str(predictions), "--judge-base-url", server.base_url, "--judge-model", "judge",
               "--prompts", str(pack), "--out", str(out), "--retries", "0", *extra, home=out.parent)


def norm(values: list[float]) -> float:
    return (sum(values) / len(values) - 1) / 4 * 100


def test_the_official_request_for_every_row_the_failing_row_and_the_score_table(setup):
    predictions, pack, out, server, broken = setup
    result = judge(predictions, pack, out, server, "--concurrency", "1")
    assert result.returncode == 1, result.stderr  # a row's request kept failing: exit 1, the run went on
    assert f"the official checkout {pack.parent}" in result.stderr
    # Byte for byte: every request is the official one (the failing row's three attempts too).
    assert [row_of(body) for body in server.requests] == [1, 2, 3, 4, 5, 5, 5]
    for body in server.requests:
        assert body == expected_request(row_of(body)), row_of(body)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [row["awl_judge"]["line"] for row in rows] == [1, 2, 3, 4, 5, 6]
    assert rows[2]["factuality"] == -1 and rows[1]["realism"] == 5 and rows[3]["format"] == 4 and rows[2]["quality"] == 2
    assert rows[2]["total_score"] == pytest.approx(2.25)  # the mean of the scores above 0
    failed = rows[4]
    assert failed["failed"] == 1.0 and failed["error_message"] == "Judge scoring failed" and failed["total_score"] == 0
    assert "HTTP 500" in failed["judge_problem"] and failed["extracted_output"] == "OBS-5"
    assert rows[5]["failed"] == 1.0 and rows[5]["error_message"] == "No model generation"
    assert "1 row failed: The server at" in result.stderr and "HTTP 500" in result.stderr and "(line 5)" in result.stderr
    assert "1 row failed: No model generation (line 6)" in result.stderr and "--retry-failed" in result.stderr

    # The hand computation, the official way: the -1 is averaged (old awl read it as 0: 50.00).
    terminal_totals = [4.0, 4.0, (3 + 2 + 2 + 2) / 4]
    wanted = {"format": norm([5, 4, 3]), "factuality": norm([3, 3, -1]), "consistency": norm([4, 4, 2]),
              "realism": norm([4, 5, 2]), "quality": norm([4, 4, 2]), "total_score": norm(terminal_totals)}
    assert round(wanted["factuality"], 2) == 16.67
    score = awl("bench", "score", str(out), "--json", home=out.parent)
    summary = json.loads(score.stdout)
    assert summary["domains"]["terminal"]["scores"] == pytest.approx(wanted)
    assert summary["domains"]["mcp"]["scores"] == pytest.approx({column: 75.0 for column in wanted})
    assert summary["overall"] == pytest.approx(norm(terminal_totals + [4.0]))
    assert (summary["rows"], summary["valid"], summary["failed"]) == (6, 4, 2)
    table = awl("bench", "score", str(out), home=out.parent).stdout
    assert "16.67" in table and f"{norm(terminal_totals + [4.0]):.2f}" in table

    # A rerun keeps the failed row (a result, as officially); asked to, it judges it again, once the judge works.
    sent = len(server.requests)
    again = judge(predictions, pack, out, server)
    assert again.returncode == 0 and "already judged" in again.stderr and len(server.requests) == sent
    assert "1 row of" in again.stderr and "--retry-failed judges it again" in again.stderr
    broken.clear()
    ROWS_5_SCORES = {"format": 2, "factuality": 2, "consistency": 2, "realism": 2, "quality": 2}
    server.canned = lambda body: Canned(verdict(ROWS_5_SCORES))
    retried = judge(predictions, pack, out, server, "--retry-failed", "--json")
    assert retried.returncode == 0, retried.stderr
    assert [row_of(body) for body in server.requests[sent:]] == [5]
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [row["awl_judge"]["line"] for row in rows] == [1, 2, 3, 4, 5, 6] and rows[4]["failed"] == 0.0
    assert json.loads(retried.stdout)["domains"]["mcp"]["valid"] == 2


def test_negative_scores_read_as_none_is_an_option(setup):
    predictions, pack, out, server, _ = setup
    result = judge(predictions, pack, out, server, "--drop-negative-scores", "--json")
    assert result.returncode == 1, result.stderr
    scores = json.loads(result.stdout)["domains"]["terminal"]["scores"]
    assert scores["factuality"] == pytest.approx(norm([3, 3])) == 50.0
    # A file judged one way is not gone on in the other.
    assert_one_line_error(judge(predictions, pack, out, server), "judged by")


def test_score_refuses_a_file_without_verdicts_and_says_to_judge_it_first(setup):
    predictions, _, out, _, _ = setup
    assert_one_line_error(awl("bench", "score", str(predictions), home=out.parent), "holds no verdicts", "awl bench judge")


def test_a_checkout_awl_cannot_read_is_one_line_before_any_request(setup):
    predictions, pack, out, server, _ = setup
    (pack.parent / "eval" / "eval.py").write_text("def something_else():\n    pass\n", encoding="utf-8")
    assert_one_line_error(judge(predictions, pack, out, server), "build_judge_messages", "judge_labels.toml")
    assert server.requests == []
