"""`awl bench predict` against the official evaluation's rules, on rows this test writes itself.

The rules are restated here in our own words from QwenLM/Qwen-AgentWorld eval/eval.py and
its output parser (never imported or copied): the messages a row sends, what a server with a
reasoning parser returns as `gen`, which rows are predicted, and what the judge step reads
(`gen`, `task`, `prompt`, `response`, `turn_idx`, `current_prompt`; nothing else). The
answer path is the scripted backend streaming realistic raw answers in small chunks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentworld_local.agentworldbench.predict import BENCH_SAMPLING, BENCH_THINK, RowPredicted, predict_rows
from agentworld_local.agentworldbench.predictions import PredictionsFile, RunSettings
from agentworld_local.agentworldbench.rows import BenchFile
from agentworld_local.agentworldbench.selection import select_lines, work_order
from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend
from tests.unit.test_agentworldbench import bench_job, official_messages  # the message rule, restated there

MARKER = "**Environment Observation:**"
TWO_BLOCKS = (
    "<think>\nA first guess, then the screen as it really is. <predicted_observation>not this</predicted_observation>\n</think>\n\n"
    "<predicted_observation>\ndraft screen\n</predicted_observation>\n\n"
    "<predicted_observation>\nmain.py  tests\nroot@box:/app# \n</predicted_observation>"
)
ONE_BLOCK = "<think>\nThe tool returns the file list.\n</think>\n\n<predicted_observation>\n{\"files\": [\"a.txt\"]}\n</predicted_observation>"
JUDGE_FIELDS = ("gen", "task", "prompt", "response", "turn_idx", "current_prompt")


# -- the official rules, restated --------------------------------------------------------


def official_gen(raw: str) -> str:
    """The message content of a reasoning-parser server: what follows the first `</think>` (the
    prompt opened thinking); nothing when thinking never closed."""
    closed = raw.find("</think>")
    return "" if closed == -1 else raw[closed + len("</think>"):]


def scorer_extract(gen: str) -> str:
    """What the judge compares: thinking removed, then the last observation block's text."""
    text = re.sub(r"<think>.*?</think>", "", gen, flags=re.DOTALL)
    starts = [m.end() for m in re.finditer("<predicted_observation>", text)]
    if not starts:
        return text.strip() or "No output"
    rest = text[starts[-1]:]
    return rest.split("</predicted_observation>", 1)[0].strip()


def judge_input(job: dict) -> str | None:
    """The judge's user text from the fields it reads (None: the row counts as failed, no gen)."""
    if not job["gen"]:
        return None
    turn = max(job["turn_idx"] - 1, 0)
    history = "".join(f"{p}\n{r}\n\n" for p, r in zip(job["prompt"][:turn], job["response"][:turn]))
    current = job["current_prompt"] or job["prompt"][turn]
    truth = job["response"][turn].replace(MARKER, "").strip()
    return f"{history}{current}\n{scorer_extract(job['gen'])}\n{truth}"


# -- the run ------------------------------------------------------------------------------


class Recording(ScriptedBackend):
    """The scripted backend, keeping the messages and the answer of every call."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[tuple[list[dict[str, str]], str]] = []

    def generate(self, messages, **options):
        self.seen.append(([dict(m) for m in messages], self.answers[self.calls % len(self.answers)].raw))
        return super().generate(messages, **options)


def write_rows(path: Path) -> list[dict]:
    jobs = [bench_job("terminal", 1), bench_job("terminal", 2), bench_job("mcp", 1), bench_job("search", 2),
            bench_job("web", 1, system_str=""),  # no system prompt: no system message
            bench_job("swe", 1, system_str="tool definitions " * 2500)]  # longer than the context below
    lines = [json.dumps(job) for job in jobs]
    lines.insert(3, '{"task": "os", "id": 7, "prompt": ["### Turn 1"], ')  # malformed: cut JSON
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return jobs


def test_messages_gen_selection_and_the_judge_input_match_the_official_evaluation(tmp_path):
    bench_path, out_path = tmp_path / "mixed_test.jsonl", tmp_path / "predictions.jsonl"
    jobs = write_rows(bench_path)
    bench = BenchFile(bench_path)
    selection = select_lines(bench)
    assert [(problem.line, "not valid JSON" in problem.reason) for problem in selection.malformed] == [(4, True)]
    backend = Recording([ScriptedAnswer(TWO_BLOCKS, chunk=3), ScriptedAnswer(ONE_BLOCK, chunk=5)], n_ctx=40960)
    settings = RunSettings("scripted", BENCH_SAMPLING, BENCH_THINK, 0)
    out = PredictionsFile.open(out_path, bench.fields(), settings, source=bench_path)
    events = list(predict_rows(work_order(selection.rows), backend, settings, out))
    out.close()

    # Selection: every well-formed row is written once; the malformed line is the only one left out.
    written = [json.loads(line) for line in out_path.read_text(encoding="utf-8").splitlines()]
    assert sorted(line["awl_predict"]["line"] for line in written) == [1, 2, 3, 5, 6, 7]
    assert all(isinstance(event, RowPredicted) for event in events)

    # Messages: what the model received for each predicted row is the official list.
    by_line = {line["awl_predict"]["line"]: line for line in written}
    inputs = {1: jobs[0], 2: jobs[1], 3: jobs[2], 5: jobs[3], 6: jobs[4], 7: jobs[5]}
    predicted = [event.row.line for event in events if not event.failed]
    assert len(backend.seen) == len(predicted) == 5, "the row too long for the context never reached the model"
    for line, (messages, raw) in zip(predicted, backend.seen):
        assert messages == official_messages(inputs[line]), f"row {line}"
        # gen: the content a reasoning-parser server returns for this raw answer.
        assert by_line[line]["gen"] == official_gen(raw), f"row {line}"
    two_block_rows = [line for line, (_, raw) in zip(predicted, backend.seen) if raw == TWO_BLOCKS]
    assert two_block_rows and all(scorer_extract(by_line[line]["gen"]) == "main.py  tests\nroot@box:/app#"
                                  for line in two_block_rows), "the whole answer is kept: the scorer takes the last block"

    # The row longer than the context fails as the official run fails it: an empty gen, a reason.
    assert by_line[7]["gen"] == "" and "more than the 40,960-token context" in by_line[7]["awl_predict"]["failed"]

    # The judge step reads only its fields; every other field (awl_predict included) can go.
    for line, row in by_line.items():
        judged = judge_input({field: row[field] for field in JUDGE_FIELDS})
        assert (judged is None) == (line == 7)
        assert {key: value for key, value in row.items() if key not in ("gen", "awl_predict")} == inputs[line]
