"""AgentWorldBench interchange: benchmark rows <-> trajectories, and a row's message list.

Facts this module relies on (QwenLM/Qwen-AgentWorld, README "Data Format" and eval/eval.py
`run_inference`):
- a row is one evaluated turn of a trajectory: `task` (domain, possibly "group/domain"),
  `id`, `prompt` and `response` (lists of ALL turns of the trajectory: action prompts and
  ground-truth observations), `current_prompt` (the evaluated turn's prompt), `system_str`
  (this sample's own system prompt), `turn_idx` (1-based), `total_turns`;
- the evaluation sends: a system message (only when `system_str` is not empty), then for each
  earlier turn j < turn_idx a user message `prompt[j]` and an assistant message `response[j]`
  verbatim, then the user message `current_prompt` (or `prompt[turn_idx - 1]` when empty);
- `response` entries already start with `**Environment Observation:**` and a newline.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld_local.contract.parse import OBSERVATION_MARKER
from agentworld_local.contract.turns import history_observation
from agentworld_local.domains.base import Action, ToollessDomain
from agentworld_local.engine.session_context import CONTROL_HEADING
from agentworld_local.errors import InputError, TrajectoryError
from agentworld_local.trajectory.reader import Trajectory
from agentworld_local.trajectory.schema import Header, TurnRecord
from agentworld_local.trajectory.writer import TrajectoryWriter

FORMAT = "agentworldbench"
ROW_HINT = (
    "Each line must be one AgentWorldBench row: a JSON object with task, id, prompt (list), "
    "response (list), current_prompt, system_str, turn_idx, total_turns."
)
IMPORT_NOTE = "imported from AgentWorldBench: observations are the benchmark's ground truth from real environments"
_SECTION = re.compile(r"^\*\*(?P<name>[^*\n]+):\*\*[ \t]*$", re.MULTILINE)
_TURN = re.compile(r"^###\s*Turn\s+(\d+)\s*$", re.MULTILINE)
_FENCE = re.compile(r"^```[\w-]*\n(?P<body>.*)\n```$", re.DOTALL)


@dataclass(frozen=True)
class BenchRow:
    """One validated benchmark row. `line` is its 1-based line in the file."""

    task: str
    id: Any
    prompts: list[str]
    responses: list[str]
    current_prompt: str
    system_str: str
    turn_idx: int
    total_turns: int | None
    line: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def domain(self) -> str:
        """The subtask, as the official script reads it (`a/b` -> `b`)."""
        return self.task.split("/")[-1]

    @property
    def current(self) -> str:
        """The prompt the evaluated turn sends (the official fallback included)."""
        index = self.turn_idx - 1
        if not self.current_prompt and index < len(self.prompts):
            return self.prompts[index]
        return self.current_prompt

    @property
    def ground_truth(self) -> str:
        """The real observation of the evaluated turn, marker removed ("" when the row lacks it)."""
        index = self.turn_idx - 1
        return split_response(self.responses[index])[0] if index < len(self.responses) else ""

    def history_pairs(self) -> int:
        """How many earlier turns the evaluation puts before the current prompt."""
        return min(self.turn_idx - 1, len(self.prompts), len(self.responses))


def _row_error(source: str, line: int, what: str) -> InputError:
    return InputError(f"{source}: row {line}: {what}.", ROW_HINT)


def _str_list(data: dict[str, Any], key: str, source: str, line: int) -> list[str]:
    if key not in data:
        raise _row_error(source, line, f"field '{key}' is missing")
    value = data[key]
    if isinstance(value, str):
        return [value]  # the official script accepts a bare string as a one-turn list
    if not isinstance(value, list):
        raise _row_error(source, line, f"field '{key}' should be a list of strings, not {_json_kind(value)}")
    for index, item in enumerate(value, start=1):
        if not isinstance(item, str):
            raise _row_error(source, line, f"field '{key}' item {index} should be a string, not {_json_kind(item)}")
    return list(value)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__
    )


def parse_row(data: Any, *, line: int, source: str) -> BenchRow:
    """Validate one decoded row; errors say which row (1-based line) and which field."""
    if not isinstance(data, dict):
        raise _row_error(source, line, f"expected a JSON object, got {_json_kind(data)}")
    task = data.get("task")
    if not isinstance(task, str) or not task.strip():
        raise _row_error(source, line, "field 'task' is missing" if task is None else "field 'task' should be a non-empty string")
    if "id" not in data or not isinstance(data["id"], (int, str)) or isinstance(data["id"], bool):
        raise _row_error(source, line, "field 'id' should be a number or a string")
    prompts = _str_list(data, "prompt", source, line)
    responses = _str_list(data, "response", source, line)
    for key in ("current_prompt", "system_str"):
        if key in data and not isinstance(data[key], str):
            raise _row_error(source, line, f"field '{key}' should be a string, not {_json_kind(data[key])}")
    turn_idx = data.get("turn_idx", 1)
    if not isinstance(turn_idx, int) or isinstance(turn_idx, bool) or turn_idx < 1:
        raise _row_error(source, line, f"field 'turn_idx' should be a whole number from 1, not {turn_idx!r}")
    total = data.get("total_turns")
    if total is not None and (not isinstance(total, int) or isinstance(total, bool) or total < 0):
        raise _row_error(source, line, f"field 'total_turns' should be a whole number, not {total!r}")
    current = data.get("current_prompt", "")
    if not current and turn_idx > len(prompts):
        raise _row_error(source, line, f"field 'turn_idx' is {turn_idx} but 'prompt' has {len(prompts)} turns and 'current_prompt' is empty")
    known = {"task", "id", "prompt", "response", "current_prompt", "system_str", "turn_idx", "total_turns"}
    return BenchRow(
        task=task.strip(), id=data["id"], prompts=prompts, responses=responses, current_prompt=current,
        system_str=data.get("system_str", ""), turn_idx=turn_idx, total_turns=total, line=line,
        extra={k: v for k, v in data.items() if k not in known},
    )


def _read_lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"Benchmark file not found: {path}.", "Check the path to the .jsonl file.") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a directory.", "Pass one of its *_test.jsonl files.") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"Cannot read {path} ({error}).", "Pass a UTF-8 JSONL file.") from None
    return text.splitlines()


def _decode(raw: str, line: int, source: str) -> BenchRow:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as error:
        raise _row_error(source, line, f"not valid JSON ({error.msg} at column {error.colno})") from None
    return parse_row(data, line=line, source=source)


def read_bench_rows(path: str | Path) -> list[BenchRow]:
    """Every row of a benchmark JSONL file (blank lines skipped)."""
    path = Path(path)
    rows = [_decode(raw, number, str(path)) for number, raw in enumerate(_read_lines(path), 1) if raw.strip()]
    if not rows:
        raise InputError(f"{path} holds no rows.", ROW_HINT)
    return rows


def read_bench_row(path: str | Path, row: int) -> BenchRow:
    """Row `row` (1-based line number) of a benchmark file; only that line is validated."""
    path = Path(path)
    lines = _read_lines(path)
    if not 1 <= row <= len(lines):
        raise InputError(f"{path} has {len(lines)} rows; there is no row {row}.", f"Pick a row from 1 to {len(lines)}.")
    if not lines[row - 1].strip():
        raise InputError(f"{path}: row {row} is a blank line.", "Pick a line that holds a row.")
    return _decode(lines[row - 1], row, str(path))


# -- messages -------------------------------------------------------------------------


def bench_messages(row: BenchRow) -> list[dict[str, str]]:
    """The message list the official evaluation sends for this row."""
    messages = [{"role": "system", "content": row.system_str}] if row.system_str else []
    for index in range(row.history_pairs()):
        messages.append({"role": "user", "content": row.prompts[index]})
        messages.append({"role": "assistant", "content": row.responses[index]})
    messages.append({"role": "user", "content": row.current})
    return messages


def split_response(response: str) -> tuple[str, str | None]:
    """(observation, exact history message or None when it is the canonical form)."""
    canonical_prefix = f"{OBSERVATION_MARKER}\n"
    if response.startswith(canonical_prefix):
        return response[len(canonical_prefix):], None
    # Not our canonical layout: keep the text exact for the model, cleaned for people.
    return response.replace(OBSERVATION_MARKER, "").strip(), response


def prompt_sections(prompt: str) -> dict[str, str]:
    """`**Name:**` sections of a turn prompt, keyed by lowercase name (e.g. "action")."""
    matches = list(_SECTION.finditer(prompt))
    sections: dict[str, str] = {}
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(prompt)
        sections[match.group("name").strip().lower()] = prompt[match.end():end].strip("\n")
    return sections


def prompt_action(prompt: str) -> Action:
    """The agent action written in a turn prompt, as an Action that is sent verbatim."""
    sections = prompt_sections(prompt)
    text = sections.get("action")
    if text is None:
        text = _TURN.sub("", prompt, count=1).strip()
    fenced = _FENCE.match(text.strip())
    shown = fenced.group("body") if fenced else text.strip()
    try:
        payload: Any = json.loads(shown)
    except json.JSONDecodeError:
        payload = None
    return Action(text=shown, payload=payload, prompt_text=text)


class BenchDomain(ToollessDomain):
    """A stand-in Domain for benchmark rows of any domain: prompts are sent as written."""

    state_lexer = "text"
    ACTION_HELP = "Benchmark rows carry their own turn prompts."

    def __init__(self, row: BenchRow) -> None:
        self.name = row.domain
        self.title = f"AgentWorldBench {row.domain}"
        self._system = row.system_str

    def system_prompt(self) -> str:
        return self._system

    def parse_action(self, text: str) -> Action:
        return Action(text=text, payload=None, prompt_text=text)


# -- rows -> trajectories ---------------------------------------------------------------


def bench_ref(row: BenchRow, source: str | Path | None = None) -> dict[str, Any]:
    ref: dict[str, Any] = {"task": row.task, "id": row.id, "rows": [row.line], "turn_idx": [row.turn_idx]}
    if row.total_turns is not None:
        ref["total_turns"] = row.total_turns
    if source is not None:
        ref["file"] = str(source)
    return ref


def split_controls(task_section: str) -> tuple[str, list[str]]:
    """(task, control instructions) from a Task Instruction section written by awl."""
    task, found, block = task_section.partition(CONTROL_HEADING + "\n")
    if not found or (task and not task.endswith("\n\n")):
        return task_section.strip(), []
    controls = [line[2:].strip() for line in block.splitlines() if line.startswith("- ")]
    return task.strip(), controls


def row_header(row: BenchRow, source: str | Path | None = None) -> Header:
    """A trajectory header for the row's trajectory (no model: the observations are real)."""
    first = prompt_sections(row.prompts[0]) if row.prompts else {}
    task, controls = split_controls(first.get("task instruction", ""))
    return Header(
        model=None,
        domain=row.domain,
        task=task,
        controls=controls,
        initial_state=first.get("current state", ""),
        system_prompt=row.system_str,
        note=IMPORT_NOTE,
        extra={FORMAT: bench_ref(row, source)},
    )


def row_turns(row: BenchRow, limit: int | None = None) -> list[TurnRecord]:
    """The row's turns (prompt + ground-truth observation) as a straight branch, ids from 1."""
    count = min(len(row.prompts), len(row.responses))
    turns = []
    for index in range(count if limit is None else min(limit, count)):
        observation, exact = split_response(row.responses[index])
        action = prompt_action(row.prompts[index])
        turns.append(TurnRecord(
            id=index + 1, parent=index or None, turn=index + 1, action=action.text, action_payload=action.payload,
            prompt=row.prompts[index], observation=observation, parse_method=FORMAT, history_message=exact, created="",
        ))
    return turns


def _trajectory_key(row: BenchRow) -> tuple[Any, ...]:
    return (row.task, str(row.id), row.system_str, tuple(row.prompts), tuple(row.responses))


def _file_stem(row: BenchRow) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{row.domain}-{row.id}").strip("-") or "row"


def import_bench(path: str | Path, out_dir: str | Path) -> list[Path]:
    """Write one trajectory per distinct trajectory in the file (rows of the same one merge).

    Refuses before writing anything when a target file already exists.
    """
    path, out_dir = Path(path), Path(out_dir)
    groups: dict[tuple[Any, ...], list[BenchRow]] = {}
    for row in read_bench_rows(path):
        groups.setdefault(_trajectory_key(row), []).append(row)
    targets: list[tuple[Path, list[BenchRow]]] = []
    used: set[str] = set()
    for rows in groups.values():
        stem = _file_stem(rows[0])
        name, n = f"{stem}.jsonl", 2
        while name in used:
            name, n = f"{stem}-{n}.jsonl", n + 1
        used.add(name)
        targets.append((out_dir / name, rows))
    existing = [target for target, _ in targets if target.exists()]
    if existing:
        raise InputError(f"{existing[0]} already exists; awl will not overwrite a session.", "Choose another --out-dir, or delete the old files first.")
    written = []
    for target, rows in targets:
        header = row_header(rows[0], path)
        header.extra[FORMAT]["rows"] = [r.line for r in rows]
        header.extra[FORMAT]["turn_idx"] = [r.turn_idx for r in rows]
        with TrajectoryWriter.create(target, header) as writer:
            for turn in row_turns(rows[0]):
                writer.append(turn)
        written.append(target)
    return written


# -- trajectories -> rows ---------------------------------------------------------------


def trajectory_id(traj: Trajectory) -> int | str:
    """The benchmark id: kept from an imported file, else a stable number from the session's header."""
    ref = traj.header.extra.get(FORMAT)
    if isinstance(ref, dict) and isinstance(ref.get("id"), (int, str)):
        return ref["id"]
    first = traj.turns[0].prompt if traj.turns else ""
    digest = hashlib.sha256("\0".join((traj.header.created, traj.header.system_prompt, first)).encode()).hexdigest()
    return int(digest[:13], 16)


def trajectory_to_rows(traj: Trajectory) -> list[dict[str, Any]]:
    """One row per turn of the current branch, in the benchmark's JSONL layout."""
    branch = traj.current_branch()
    if not branch:
        raise TrajectoryError(f"{traj.path} has no turns to export.", "Run a session with `awl run` first.")
    prompts = [record.prompt for record in branch]
    if not all(prompts):
        raise TrajectoryError(
            f"{traj.path} does not record the prompts of its turns.",
            "Export needs files written by `awl run` (hand-written examples have no prompts).",
        )
    responses = [r.history_message if r.history_message is not None else history_observation(r.observation) for r in branch]
    ref = traj.header.extra.get(FORMAT)
    task = ref["task"] if isinstance(ref, dict) and isinstance(ref.get("task"), str) else traj.header.domain
    row_id = trajectory_id(traj)
    return [
        {
            "task": task, "id": row_id, "prompt": prompts, "response": responses, "current_prompt": prompts[index],
            "system_str": traj.header.system_prompt, "turn_idx": index + 1, "total_turns": len(branch),
        }
        for index in range(len(branch))
    ]
