"""AgentWorldBench interchange: benchmark rows <-> trajectories, and a row's message list.

Facts this module relies on (QwenLM/Qwen-AgentWorld, README "Data Format" and eval/eval.py
`run_inference`):
- a row is one evaluated turn of a trajectory: `task` (domain, possibly "group/domain"),
  `id`, `prompt` and `response` (lists of ALL turns of the trajectory: action prompts and
  ground-truth observations), `current_prompt` (the evaluated turn's prompt), `system_str`
  (this sample's own system prompt), `turn_idx` (1-based), `total_turns`;
- the evaluation sends: a system message (only when `system_str` is not empty), then for each
  earlier turn k < turn_idx a user message `prompt[k - 1]` and an assistant message
  `response[k - 1]` verbatim, then the user message `prompt[turn_idx - 1]`. It ignores
  `current_prompt` (an earlier version sent it) and requires `turn_idx`;
- `response` entries already start with `**Environment Observation:**` and a newline.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld_local.contract.parse import OBSERVATION_MARKER
from agentworld_local.domains.base import Action, ToollessDomain
from agentworld_local.engine.prompt_composition import CONTROL_HEADING
from agentworld_local.errors import InputError
from agentworld_local.files import check_name_length, check_regular_file, fit_name
from agentworld_local.safe_parse import SyntaxProblem, load_json
from agentworld_local.trajectory.reader import Trajectory, count
from agentworld_local.trajectory.schema import Header, TurnRecord
from agentworld_local.trajectory.writer import write_new

FORMAT = "agentworldbench"
ROW_HINT = (
    "Each line must be one AgentWorldBench row: a JSON object with task, id, prompt (list), "
    "response (list), current_prompt, system_str, turn_idx (required), total_turns."
)
#: Benchmark files hold every turn of every trajectory in each row; they can be large.
MAX_BENCH_BYTES = 4 * 1024**3
IMPORT_NOTE = "imported from AgentWorldBench: observations are the benchmark's ground truth from real environments"
_SECTION = re.compile(r"^\*\*(?P<name>[^*\n]+):\*\*[ \t]*$", re.MULTILINE)
_TURN = re.compile(r"^###\s*Turn\s+(\d+)\s*$", re.MULTILINE)
_FENCE = re.compile(r"^```[\w-]*\n(?P<body>.*)\n```$", re.DOTALL)


@dataclass(frozen=True)
class BenchRow:
    """One validated benchmark row. `line` is its 1-based line in the file; `fields` the row as read."""

    task: str
    id: Any
    prompts: list[str]
    responses: list[str]
    current_prompt: str  # kept for the round trip; the evaluation sends `prompt[turn_idx - 1]`
    system_str: str
    turn_idx: int
    total_turns: int | None
    line: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def domain(self) -> str:
        """The subtask, as the official script reads it (`a/b` -> `b`)."""
        return self.task.split("/")[-1]

    @property
    def current(self) -> str:
        """The prompt the evaluated turn sends: `prompt[turn_idx - 1]` (parse_row checks it exists)."""
        return self.prompts[self.turn_idx - 1]

    @property
    def ground_truth(self) -> str:
        """The real observation of the evaluated turn, marker removed ("" when the row lacks it)."""
        index = self.turn_idx - 1
        return split_response(self.responses[index])[0] if index < len(self.responses) else ""

    def history_pairs(self) -> int:
        """How many earlier turns the evaluation puts before the current prompt."""
        return self.turn_idx - 1


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
    return value


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__
    )


def _whole_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    """A field value for a message, in JSON's words, shortened."""
    if isinstance(value, (dict, list)):
        return _json_kind(value)
    text = {None: "null", True: "true", False: "false"}.get(value, repr(value)) if isinstance(value, (bool, type(None))) else repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


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
    if "turn_idx" not in data:
        raise _row_error(source, line, "field 'turn_idx' is missing (the evaluation needs it to pick the turn)")
    turn_idx = data["turn_idx"]
    if not _whole_number(turn_idx) or turn_idx < 1:
        raise _row_error(source, line, f"field 'turn_idx' should be a whole number from 1, not {_shown(turn_idx)}")
    total = data.get("total_turns")
    if total is not None and (not _whole_number(total) or total < 0):
        raise _row_error(source, line, f"field 'total_turns' should be a whole number, not {_shown(total)}")
    if turn_idx > len(prompts):
        raise _row_error(source, line, f"field 'turn_idx' is {_shown(turn_idx)} but 'prompt' has only {count(len(prompts), 'turn')}")
    if turn_idx - 1 > len(responses):
        raise _row_error(
            source, line, f"field 'turn_idx' is {_shown(turn_idx)} but 'response' has only {count(len(responses), 'turn')}; "
            "the turns before it need their responses",
        )
    known = {"task", "id", "prompt", "response", "current_prompt", "system_str", "turn_idx", "total_turns"}
    return BenchRow(
        task=task.strip(), id=data["id"], prompts=prompts, responses=responses, current_prompt=data.get("current_prompt", ""),
        system_str=data.get("system_str", ""), turn_idx=turn_idx, total_turns=total, line=line,
        extra={k: v for k, v in data.items() if k not in known}, fields=data,
    )


def _read_lines(path: Path) -> list[bytes]:
    """The file's lines as bytes: each row is decoded on its own, so a bad byte names its row."""
    check_regular_file(path, "benchmark file")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BENCH_BYTES + 1)
    except OSError as error:
        raise InputError(f"Cannot read the benchmark file {path}: {error.strerror}.", "Check its permissions.") from None
    if len(data) > MAX_BENCH_BYTES:
        raise InputError(f"The benchmark file {path} is larger than {MAX_BENCH_BYTES:,} bytes.", "Split it into smaller files.")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # a byte-order mark from an editor
    # Split on newlines only: a row may hold U+2028 or other characters str.splitlines() breaks on.
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    return lines


def _decode_json(raw: bytes, line: int, source: str) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _row_error(source, line, f"not UTF-8 text (byte 0x{raw[error.start]:02x} at column {error.start + 1})") from None
    try:
        return load_json(text)
    except SyntaxProblem as problem:
        raise _row_error(source, line, f"not valid JSON ({problem.reason})") from None


def _decode(raw: bytes, line: int, source: str) -> BenchRow:
    return parse_row(_decode_json(raw, line, source), line=line, source=source)


def _no_rows(path: Path) -> InputError:
    return InputError(f"The benchmark file {path} holds no rows.", ROW_HINT)


def read_bench_rows(path: str | Path) -> list[BenchRow]:
    """Every row of a benchmark JSONL file (blank lines skipped); the first bad row is refused."""
    bench = BenchFile(path)
    return [bench.row(line) for line in bench.lines()]


class BenchFile:
    """A benchmark file's lines, read once; each row is decoded and checked only when asked
    for, so a malformed row names its line and reason without stopping the others."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._raw = _read_lines(self.path)
        self._numbers = [number for number, raw in enumerate(self._raw, 1) if raw.strip()]
        if not self._numbers:
            raise _no_rows(self.path)

    def lines(self) -> list[int]:
        """The lines that hold something (1-based), in file order."""
        return list(self._numbers)

    @property
    def last_line(self) -> int:
        return self._numbers[-1]

    def data(self, line: int) -> Any:
        """The line's JSON value; InputError when it is not UTF-8 JSON."""
        return _decode_json(self._raw[line - 1], line, str(self.path))

    def row(self, line: int) -> BenchRow:
        """The line's row, checked; InputError naming the line and the field."""
        return parse_row(self.data(line), line=line, source=str(self.path))

    def fields(self) -> "RowFields":
        """Each line's row as read (a JSON object), decoded when looked up."""
        return RowFields(self)


class RowFields(Mapping[int, dict]):
    """Line -> the row's fields as read; lines that are blank or not a JSON object are absent."""

    def __init__(self, bench: BenchFile) -> None:
        self._bench = bench

    def __getitem__(self, line: int) -> dict:
        if line not in self._bench._numbers:
            raise KeyError(line)
        try:
            data = self._bench.data(line)
        except InputError:
            raise KeyError(line) from None
        if not isinstance(data, dict):
            raise KeyError(line)
        return data

    def __iter__(self) -> Iterator[int]:
        return iter(self._bench._numbers)

    def __len__(self) -> int:
        return len(self._bench._numbers)


def read_bench_row(path: str | Path, row: int) -> BenchRow:
    """Row `row` (1-based line number) of a benchmark file; only that line is validated."""
    path = Path(path)
    lines = _read_lines(path)
    if not any(raw.strip() for raw in lines):
        raise _no_rows(path)
    if not 1 <= row <= len(lines):
        raise InputError(f"{path} has {count(len(lines), 'line')}; there is no row {row}.", f"Pick a row from 1 to {len(lines)}.")
    if not lines[row - 1].strip():
        raise InputError(f"{path}: line {row} is blank, so it holds no row.", "Pick a line that holds a row.")
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
        payload: Any = load_json(shown)
    except SyntaxProblem:
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


def same_turns(row: BenchRow) -> tuple[Any, ...]:
    """Rows with this key carry the very same trajectory (task, id, system prompt and turns)."""
    return (row.task, str(row.id), row.system_str, tuple(row.prompts), tuple(row.responses))


def _file_stem(row: BenchRow) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{row.domain}-{row.id}").strip("-") or "row"


def file_name_part(text: str) -> str:
    """A row's field as part of a file name: letters, digits, `_`, `-` and inner dots only (a
    row's text never reaches a file name as it is: no separator, control character or lone
    surrogate, no `..`), at most 60 characters."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")[:60].strip("-.") or "row"


def imported_row_fields(row: BenchRow, turns: list[TurnRecord]) -> dict[str, Any]:
    """The row as read, for a later export to give it back unchanged.

    `prompt` and `response` become null when they are exactly the trajectory's turns (the
    usual case), so the header does not hold every turn once per row.
    """
    fields = dict(row.fields)
    if fields.get("prompt") == [t.prompt for t in turns]:
        fields["prompt"] = None
    if isinstance(fields.get("response"), list) and len(fields["response"]) == len(turns):
        fields["response"] = None  # row_turns keeps each response exactly (history_message when not canonical)
    return fields


def import_bench(path: str | Path, out_dir: str | Path) -> list[Path]:
    """Write one trajectory per distinct trajectory in the file (rows of the same one merge).

    Refuses before writing anything when a target file already exists; a failure part-way
    removes the files this import wrote.
    """
    path, out_dir = Path(path), Path(out_dir)
    check_name_length(out_dir, "--out-dir")
    groups: dict[tuple[Any, ...], list[BenchRow]] = {}
    for row in read_bench_rows(path):
        groups.setdefault(same_turns(row), []).append(row)
    targets: list[tuple[Path, list[BenchRow]]] = []
    used: set[str] = set()
    for rows in groups.values():
        stem = _file_stem(rows[0])
        name, n = fit_name(stem, ".jsonl"), 2  # a row id may be longer than a file name can be
        while name in used:
            name, n = fit_name(f"{stem}-{n}", ".jsonl"), n + 1
        used.add(name)
        targets.append((out_dir / name, rows))
    existing = [target for target, _ in targets if target.exists()]
    if existing:
        raise InputError(f"{existing[0]} already exists; awl will not overwrite a session.", "Choose another --out-dir, or delete the old files first.")
    written: list[Path] = []
    try:
        for target, rows in targets:
            turns = row_turns(rows[0])
            header = row_header(rows[0], path)
            ref = header.extra[FORMAT]
            ref["rows"] = [r.line for r in rows]
            ref["turn_idx"] = [r.turn_idx for r in rows]
            ref["turns"] = len(turns)
            ref["row_fields"] = [imported_row_fields(r, turns) for r in rows]
            written.append(write_new(target, header, turns))
    except BaseException:
        for done in written:  # all or nothing: a half import is harder to retry than none
            done.unlink(missing_ok=True)
        raise
    return written


def trajectory_id(traj: Trajectory) -> int | str:
    """The benchmark id: kept from an imported file, else a stable number from the session's header."""
    ref = traj.header.extra.get(FORMAT)
    if isinstance(ref, dict) and isinstance(ref.get("id"), (int, str)) and not isinstance(ref.get("id"), bool):
        return ref["id"]
    first = traj.turns[0].prompt if traj.turns else ""
    text = "\0".join((traj.header.created, traj.header.system_prompt, first))
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return int(digest[:13], 16)
