"""`awl bench predict` against a server, beside what the official run (eval/eval.py `infer`)
writes for the same answers: `gen` is the message content as the server returned it, the
file keeps the input's row order, a row whose request keeps failing is written with an
empty `gen`, and a server that does not say its context is never guessed at.

The official rules are restated here in our words: each row gets one request; `gen` is
`choices[0].message.content` (or "" when the request failed); every row is written, in
the input's order.
"""

from __future__ import annotations

import json

import pytest

from tests.cli.helpers import assert_one_line_error, awl
from tests.remote.bench_server import Canned, CannedServer

THINKING = "The agent listed the directory; three entries.\n"
OBSERVATION = "<predicted_observation>\nmain.py  tests  README.md\nroot@box:/app# \n</predicted_observation>"


def bench_rows() -> list[dict]:
    """Two trajectories of two turns, interleaved in the file: a1, b1, a2, b2."""
    rows = []
    for turn in (1, 2):
        for name in ("a", "b"):
            prompts = [f"### Turn {t}\n**Action:**\n```\ncmd-{name}-{t}\n```" for t in (1, 2)]
            rows.append({"task": "terminal", "id": f"traj-{name}", "turn_idx": turn, "total_turns": 2,
                         "system_str": "You simulate a terminal.", "prompt": prompts,
                         "response": [f"**Environment Observation:**\nout-{name}-{t}" for t in (1, 2)], "current_prompt": ""})
    return rows


def action(body: dict) -> str:
    return body["messages"][-1]["content"].split("```\n")[1].split("\n")[0]


@pytest.fixture
def server():
    fake = CannedServer()
    fake.models[:] = ["world"]
    fake.model_extra = {"max_model_len": 65536}  # vLLM says its context in /v1/models
    yield fake
    fake.close()


@pytest.fixture
def bench(tmp_path):
    path = tmp_path / "terminal_test.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in bench_rows()), encoding="utf-8")
    return path, tmp_path / "predictions.jsonl"


def predict(path, out, server, *extra):
    return awl("bench", "predict", str(path), "--backend", "openai", "--base-url", server.base_url, "--api-model", "world",
               "--out", str(out), "--retries", "0", *extra, home=out.parent)


def written(out) -> list[dict]:
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(
    "answer",
    [
        # vLLM's reasoning parser: the content keeps the blank line the model wrote after `</think>`.
        Canned(content="\n\n" + OBSERVATION, reasoning=THINKING),
        # A reasoning parser that trims it.
        Canned(content=OBSERVATION, reasoning=THINKING),
        # No reasoning parser: the thinking (opened by the prompt) and `</think>` are in the content.
        Canned(content=THINKING + "</think>\n\n" + OBSERVATION),
        # No thinking at all.
        Canned(content=OBSERVATION),
    ],
    ids=["reasoning-parser", "reasoning-parser-trimmed", "no-reasoning-parser", "no-thinking"],
)
def test_gen_is_the_content_the_server_returned_with_nothing_added(bench, server, answer):
    path, out = bench
    server.canned = lambda body: answer
    result = predict(path, out, server)
    assert result.returncode == 0, result.stderr
    assert [row["gen"] for row in written(out)] == [answer.content] * 4  # the official gen: message.content


@pytest.mark.parametrize("concurrency", ["1", "2"])
def test_the_file_keeps_the_inputs_row_order_whatever_the_concurrency(bench, server, concurrency):
    path, out = bench
    server.canned = lambda body: Canned(content=f"<predicted_observation>\n{action(body)}\n</predicted_observation>")
    result = predict(path, out, server, "--concurrency", concurrency)
    assert result.returncode == 0, result.stderr
    rows = written(out)
    # Each trajectory runs in its own order: one at a time, the rows finish as a1, a2, b1, b2 (lines 1, 3, 2, 4).
    assert [row["awl_predict"]["line"] for row in rows] == [1, 2, 3, 4]
    assert [{k: v for k, v in row.items() if k not in ("gen", "awl_predict")} for row in rows] == bench_rows()
    assert [row["gen"].split("\n")[1] for row in rows] == ["cmd-a-1", "cmd-b-1", "cmd-a-2", "cmd-b-2"]
    sent = [action(body) for body in server.requests]
    assert sent.index("cmd-a-1") < sent.index("cmd-a-2") and sent.index("cmd-b-1") < sent.index("cmd-b-2")


def test_a_row_whose_request_keeps_failing_is_written_as_the_official_run_writes_it(bench, server):
    path, out = bench
    broken = {"cmd-b-1"}
    server.canned = lambda body: Canned(status=500) if action(body) in broken else Canned(content=OBSERVATION)
    result = predict(path, out, server)
    assert result.returncode == 1, result.stderr
    rows = written(out)
    assert [row["awl_predict"]["line"] for row in rows] == [1, 2, 3, 4], "every row is written, in the input's order"
    failed = rows[1]
    assert failed["gen"] == "" and failed["awl_predict"]["cause"] == "request"
    assert "HTTP 500" in failed["awl_predict"]["failed"]
    assert [row["gen"] for row in rows if row is not failed] == [OBSERVATION] * 3
    assert "1 row failed (the request kept failing)" in result.stderr and "--retry-failed" in result.stderr
    # A rerun keeps it: it is a result, as in the official run.
    sent = len(server.requests)
    again = predict(path, out, server)
    assert again.returncode == 0 and "already in" in again.stderr and len(server.requests) == sent
    # Asked to, a rerun predicts it again (and only it), once the server works.
    broken.clear()
    retried = predict(path, out, server, "--retry-failed")
    assert retried.returncode == 0, retried.stderr
    assert [action(body) for body in server.requests[sent:]] == ["cmd-b-1"]
    rows = written(out)
    assert [row["awl_predict"]["line"] for row in rows] == [1, 2, 3, 4] and [row["gen"] for row in rows] == [OBSERVATION] * 4
    assert "failed" not in rows[1]["awl_predict"]


def test_a_run_in_which_every_row_failed_exits_non_zero(bench, server):
    path, out = bench
    server.canned = lambda body: Canned(status=503)
    result = predict(path, out, server)
    assert result.returncode == 1
    assert "every row of this run failed" in result.stderr
    assert [row["gen"] for row in written(out)] == [""] * 4


def test_a_server_that_does_not_say_its_context_needs_ctx_before_any_request(bench, server):
    path, out = bench
    server.model_extra = {}  # it says nothing about its context, only how many requests it decodes at once
    server.server_info = {"max_running_requests": 4}
    server.canned = lambda body: Canned(content=OBSERVATION)
    assert_one_line_error(predict(path, out, server), "does not say how large its context is", "--ctx")
    assert server.requests == [] and not out.exists()
    given = predict(path, out, server, "--ctx", "65536")
    assert given.returncode == 0, given.stderr
    assert [row["gen"] for row in written(out)] == [OBSERVATION] * 4
