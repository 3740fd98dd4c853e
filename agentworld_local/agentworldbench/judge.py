"""Judging predictions as the official evaluation does: one judge request per row.

Each row's judge gets the domain's judge system prompt (`<domain>/judge_system_prompt.txt`
of a prompt pack in the official layout: awl ships none) and one user message: the
template filled with the earlier turns (prompt, then real observation), the current turn
prompt, the predicted observation (read from `gen` by the official rules,
official_parse.py) and the real one, each inside its label. The template and the labels
come from the pack, the official checkout it sits in, or awl's own wording
(judge_wording.py).

A row without `gen` is failed without a request. A request that fails (after the client's
own retries) or a verdict that cannot be read is asked again, up to the attempts allowed;
then the row is failed as the official run fails it (total 0, "Judge scoring failed"),
with the reason in `judge_problem`. The judged row is the prediction row, every field
kept, with the fields the official scoring reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld_local.agentworldbench.judge_wording import Wording, load_wording
from agentworld_local.agentworldbench.official_parse import model_output, unmarked
from agentworld_local.agentworldbench.verdict import DIMENSIONS, parse_verdict
from agentworld_local.errors import AwlError, Cancelled, InputError, ModelError
from agentworld_local.files import check_name_length, read_bytes, user_path
from agentworld_local.terminal_text import shorten

SYSTEM_FILE = "judge_system_prompt.txt"
#: A domain that can name a folder of a prompt pack (the official ones: terminal, swe, mcp, ...).
_FOLDER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
#: The official run's words for its two kinds of failed row.
NO_GEN = "No model generation"
JUDGE_FAILED = "Judge scoring failed"


def domain_of(row: dict[str, Any]) -> str:
    """The subtask, as the official scripts read it (`a/b` -> `b`); `mcp` when a row has no task."""
    task = row.get("task")
    task = task if isinstance(task, str) and task else "mcp"
    return task.split("/")[-1]


def _official_text(path: Path) -> str:
    """A prompt file read as the official scripts read it: UTF-8, newlines made `\\n`, a BOM kept."""
    data = read_bytes(path, "judge system prompt")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"The judge system prompt {path} is not UTF-8 text.", "Save it as UTF-8 and try again.") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True)
class JudgePrompts:
    """The judge's system prompt per domain and the user message's wording."""

    pack: Path
    systems: dict[str, str]
    wording: Wording

    @staticmethod
    def checked_pack(pack: str | Path) -> Path:
        pack = user_path(pack)
        check_name_length(pack, "prompt pack")
        if not pack.is_dir():
            raise InputError(f"--prompts {pack} is not a directory.",
                             "Give a prompt pack laid out like the official prompts/ folder (<domain>/judge_system_prompt.txt).")
        return pack

    @classmethod
    def load(cls, pack: str | Path, domains: set[str], wording: Wording | None = None) -> "JudgePrompts":
        """Read the pack's judge prompts for `domains` (and its wording, unless given);
        InputError naming every file that is missing."""
        pack = cls.checked_pack(pack)
        unnamed = sorted(domain for domain in domains if not _FOLDER_NAME.fullmatch(domain))
        if unnamed:  # a row's field never becomes a path as it is (`..` would read the pack's parent)
            raise InputError(f"A row's domain `{shorten(unnamed[0], 80)}` (the last part of its `task`) names no folder of "
                             "a prompt pack, so it has no judge prompt.",
                             "Correct the rows' `task` (e.g. agentworldbench/terminal), or judge only rows of the other "
                             "domains.")
        missing = sorted(str(pack / d / SYSTEM_FILE) for d in domains if not (pack / d / SYSTEM_FILE).is_file())
        if missing:
            raise InputError(f"The prompt pack has no judge prompt for {len(missing)} domain(s) of the predictions: {', '.join(missing)}.",
                             "Add those files (the official prompts/ folder has them), or judge only rows of the other domains.")
        systems = {d: _official_text(pack / d / SYSTEM_FILE) for d in sorted(domains)}
        return cls(pack, systems, wording or load_wording(pack))


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [item if isinstance(item, str) else str(item) for item in value] if isinstance(value, list) else []


def judge_messages(row: dict[str, Any], predicted: str, prompts: JudgePrompts) -> list[dict[str, str]]:
    """The judge's messages for one prediction row (`predicted`: what model_output read from its gen)."""
    domain = domain_of(row)
    wording, rules = prompts.wording, prompts.wording.rules(domain)
    turns, observations = _texts(row.get("prompt")), _texts(row.get("response"))
    turn_idx = row.get("turn_idx", 1)
    index = max(turn_idx - 1, 0) if isinstance(turn_idx, int) and not isinstance(turn_idx, bool) else 0
    earlier = "".join(f"{turns[i]}\n{observations[i]}\n\n" for i in range(min(index, len(turns), len(observations))))
    current = row.get("current_prompt") if isinstance(row.get("current_prompt"), str) else ""
    if not current and index < len(turns):
        current = turns[index]
    truth = observations[index] if index < len(observations) else ""
    user = wording.template.format(
        context=wording.label("context", earlier) if earlier else "",
        world_model_input=wording.label("world_model_input", current),
        predicted_observation=wording.label("predicted_observation", unmarked(predicted, rules.marker)),
        ground_truth=wording.label("ground_truth", unmarked(truth, rules.marker)),
    ).strip()
    return [{"role": "system", "content": prompts.systems.get(domain, "")}, {"role": "user", "content": user}]


Ask = Callable[[list[dict[str, str]]], str]


@dataclass(frozen=True)
class Judged:
    """A judged row, and why it failed: None, `no gen`, `request` (the request kept failing)
    or `verdict` (no answer could be read)."""

    row: dict[str, Any]
    failure: str | None = None
    reason: str = ""


def judge_row(row: dict[str, Any], ask: Ask, prompts: JudgePrompts, *, attempts: int,
              drop_negative: bool = False) -> Judged:
    """The row with the judge's verdict, in the fields the official scoring reads.

    `ask` sends messages and returns the judge's answer, or raises AwlError. A ModelError
    (the key refused, the model not served) or Cancelled is raised: it would fail every row
    alike, so the run stops and can go on later. Any other failure counts as an attempt.
    """
    out = dict(row)
    gen = row.get("gen")
    if not isinstance(gen, str) or not gen:
        out.update(failed=1.0, error_message=NO_GEN)
        return Judged(out, "no gen", NO_GEN)
    rules = prompts.wording.rules(domain_of(row))
    predicted = model_output(gen, rules.response_tag)
    messages = judge_messages(row, predicted, prompts)
    failure, problem = "verdict", ""
    for _ in range(max(attempts, 1)):
        try:
            answer = ask(messages)
        except (ModelError, Cancelled):
            raise
        except AwlError as error:
            failure, problem = "request", error.one_line()
            continue
        verdict = parse_verdict(answer, tag=rules.verdict_tag, drop_negative=drop_negative)
        if verdict.success:
            out.update(total_score=verdict.total, **verdict.scores, failed=0.0, strengths=verdict.strengths,
                       weaknesses=verdict.weaknesses, extracted_output=predicted, judge_raw_output=answer)
            return Judged(out)
        failure, problem = "verdict", f"the judge's verdict could not be read: {verdict.problem}"
    out.update(total_score=0, failed=1.0, error_message=JUDGE_FAILED, extracted_output=predicted, judge_problem=problem)
    return Judged(out, failure, problem)


__all__ = ["DIMENSIONS", "JUDGE_FAILED", "NO_GEN", "JudgePrompts", "Judged", "domain_of", "judge_messages", "judge_row"]
