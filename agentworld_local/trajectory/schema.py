"""The trajectory file format: one JSON header line, then one JSON line per turn.

Files are append-only JSONL. A reader upgrades older versions through MIGRATIONS;
keys it does not know are kept in `extra`, so a newer awl's additions survive a round trip.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import Any, Callable

from agentworld_local import __version__

SCHEMA_NAME = "agentworld-local/trajectory"
SCHEMA_VERSION = 1

# MIGRATIONS[i] upgrades one line dict (header or turn, told apart by its "type")
# from version i + 1 to i + 2. Empty while only v1 exists; the reader still goes through it.
Migration = Callable[[dict[str, Any]], dict[str, Any]]
MIGRATIONS: list[Migration] = []


def migrate(record: dict[str, Any], from_version: int) -> dict[str, Any]:
    """Upgrade one line dict from `from_version` to SCHEMA_VERSION."""
    for version in range(from_version, SCHEMA_VERSION):
        record = MIGRATIONS[version - 1](dict(record))
        if record.get("type") == "header":
            record["version"] = version + 1
    return record


def utc_now() -> str:
    """ISO-8601 UTC timestamp, seconds precision, `Z` suffix."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


_MISSING = object()


def _get(data: dict[str, Any], key: str, kinds: tuple[type, ...], default: Any = _MISSING) -> Any:
    """One field of a line dict, type-checked; ValueError names the field (the reader adds the line)."""
    if key not in data:
        if default is _MISSING:
            raise ValueError(f"field '{key}' is missing")
        return default() if callable(default) else default
    value = data[key]
    # bool is an int subclass; a boolean where a number belongs is a damaged line.
    if isinstance(value, bool) and bool not in kinds:
        raise ValueError(f"field '{key}' should be {'/'.join(k.__name__ for k in kinds)}, not a boolean")
    if not isinstance(value, kinds):
        names = "/".join("null" if k is type(None) else k.__name__ for k in kinds)
        raise ValueError(f"field '{key}' should be {names}, not {type(value).__name__}")
    return value


def _extra(data: dict[str, Any], cls: type) -> dict[str, Any]:
    known = _known_keys(cls)
    return {k: v for k, v in data.items() if k not in known}


@functools.cache
def _known_keys(cls: type) -> frozenset[str]:
    return frozenset({f.name for f in fields(cls)} | {"type"})


def _check_type(data: dict[str, Any], expected: str) -> None:
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    if data.get("type", expected) != expected:
        raise ValueError(f"expected a '{expected}' line, got type '{data.get('type')}'")


NoneT = type(None)


def _str_list(data: dict[str, Any], key: str) -> list[str]:
    value = _get(data, key, (list,), list)
    if not all(isinstance(item, str) for item in value):
        raise ValueError(f"field '{key}' should be a list of strings")
    return list(value)


def _tool_list(data: dict[str, Any], key: str) -> list[dict[str, Any]] | None:
    value = _get(data, key, (list, NoneT), None)
    if value is not None and not all(isinstance(item, dict) for item in value):
        raise ValueError(f"field '{key}' should be a list of objects")
    return value


@dataclass
class ModelRef:
    """Which GGUF produced the turns. `sha256_scope` says how much of the file was hashed."""

    name: str
    path: str | None = None
    file_size: int | None = None
    sha256: str | None = None
    sha256_scope: str = "none"  # "first-8MiB", "file" or "none"
    architecture: str | None = None
    # Added within v1 (optional, written only when known, so older files still read and a
    # scripted or remote session's header is unchanged): how llama.cpp in awl's process ran it.
    n_ctx: int | None = None
    gpu_layers: int | None = None
    flash_attention: bool | None = None
    kv_type: str | None = None  # "f16", "q8_0"
    cpu_moe: int | None = None  # layers whose routed experts stayed in RAM; -1: every layer's
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.extra)
        out.update(
            name=self.name, path=self.path, file_size=self.file_size, sha256=self.sha256,
            sha256_scope=self.sha256_scope, architecture=self.architecture,
        )
        out.update((key, getattr(self, key)) for key in _RUN_KEYS if getattr(self, key) is not None)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelRef:
        if not isinstance(data, dict):
            raise ValueError("field 'model' should be an object or null")
        return cls(
            name=_get(data, "name", (str,)),
            path=_get(data, "path", (str, NoneT), None),
            file_size=_get(data, "file_size", (int, NoneT), None),
            sha256=_get(data, "sha256", (str, NoneT), None),
            sha256_scope=_get(data, "sha256_scope", (str,), "none"),
            architecture=_get(data, "architecture", (str, NoneT), None),
            n_ctx=_get(data, "n_ctx", (int, NoneT), None),
            gpu_layers=_get(data, "gpu_layers", (int, NoneT), None),
            flash_attention=_get(data, "flash_attention", (bool, NoneT), None),
            kv_type=_get(data, "kv_type", (str, NoneT), None),
            cpu_moe=_get(data, "cpu_moe", (int, NoneT), None),
            extra=_extra(data, cls),
        )


#: ModelRef's record of how the model ran (ModelInfo has the same names).
_RUN_KEYS = ("n_ctx", "gpu_layers", "flash_attention", "kv_type", "cpu_moe")


def _model_ref(data: dict[str, Any] | None) -> ModelRef | None:
    return None if data is None else ModelRef.from_dict(data)


@dataclass
class Header:
    """The first line of a trajectory: everything needed to understand or re-run the session."""

    schema: str = SCHEMA_NAME
    version: int = SCHEMA_VERSION
    awl_version: str = __version__
    created: str = field(default_factory=utc_now)
    model: ModelRef | None = None
    sampling: dict[str, Any] = field(default_factory=dict)  # temperature, top_p, top_k, min_p, max_tokens
    seed: int = 0
    think: str = "off"  # "off", "full", or a thinking-token budget such as "512"
    domain: str = ""
    scenario: dict[str, Any] | None = None  # {"name": ..., "title": ...}
    initial_state: str = ""
    task: str = ""
    system_prompt: str = ""
    hand_written: bool = False  # True for bundled demos: not model output
    note: str = ""
    #: {"file": source path, "turn": turns kept, "id": the source's turn id at the fork (None at 0)}
    forked_from: dict[str, Any] | None = None
    # Added within v1 (optional, with defaults, so older files still read):
    controls: list[str] = field(default_factory=list)  # control instructions given at the start
    tools: list[dict[str, Any]] | None = None  # tool definitions the world was given (JSON schema)
    world: str = ""  # fictional-world description the world was given
    state_format: str | None = None  # how the state is written, for domains with a choice (web)
    #: The prompt pack the system prompt came from: {"path": ..., "files": {"<domain>/system_prompt.txt": sha256}}
    prompt_pack: dict[str, Any] | None = None
    #: The agent model that proposed the actions (agent/), written only when there was one:
    #: {"name": ..., "backend": ..., "path"/"endpoint": ...} (never a key).
    agent: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "header"}
        out.update(self.extra)
        for f in fields(self):
            if f.name != "extra" and not (f.name == "agent" and self.agent is None):
                out[f.name] = getattr(self, f.name)
        out["model"] = self.model.to_dict() if self.model else None
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Header:
        _check_type(data, "header")
        return cls(
            schema=_get(data, "schema", (str,)),
            version=_get(data, "version", (int,)),
            awl_version=_get(data, "awl_version", (str,), ""),
            created=_get(data, "created", (str,), ""),
            model=_model_ref(_get(data, "model", (dict, NoneT), None)),
            sampling=_get(data, "sampling", (dict,), dict),
            seed=_get(data, "seed", (int,), 0),
            think=str(_get(data, "think", (str, int), "off")),
            domain=_get(data, "domain", (str,), ""),
            scenario=_get(data, "scenario", (dict, NoneT), None),
            initial_state=_get(data, "initial_state", (str,), ""),
            task=_get(data, "task", (str,), ""),
            system_prompt=_get(data, "system_prompt", (str,), ""),
            hand_written=_get(data, "hand_written", (bool,), False),
            note=_get(data, "note", (str,), ""),
            forked_from=_get(data, "forked_from", (dict, NoneT), None),
            controls=_str_list(data, "controls"),
            tools=_tool_list(data, "tools"),
            world=_get(data, "world", (str,), ""),
            state_format=_get(data, "state_format", (str, NoneT), None),
            prompt_pack=_get(data, "prompt_pack", (dict, NoneT), None),
            agent=_get(data, "agent", (dict, NoneT), None),
            extra=_extra(data, cls),
        )


#: Counts and seconds past this are no measurement (and a larger JSON integer overflows a float).
MAX_STORED_NUMBER = 2**53


def stored_number(section: Any, key: str) -> int | float | None:
    """`section[key]` when it is a number a reader can show: not a boolean, finite, from 0 to
    MAX_STORED_NUMBER. A hand-edited or damaged file may hold any JSON value there (text, a
    401-digit integer), and replay, export and the TUI must still show the turn."""
    value = section.get(key) if isinstance(section, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if 0 <= value <= MAX_STORED_NUMBER else None  # NaN fails both comparisons


@dataclass
class TurnRecord:
    """One agent action and the model's predicted observation.

    `id` is the 1-based order of turn lines in the file; `parent` links a turn to the
    previous turn of its branch (after an undo it points further back); `turn` is the
    1-based position in that branch. The writer fills in `id` (and `turn` when it is 0).
    """

    action: str
    observation: str = ""
    id: int = 0
    parent: int | None = None
    turn: int = 0
    action_payload: Any = None
    prompt: str = ""
    raw_output: str = ""
    thinking: str = ""
    parse_method: str = ""
    # prompt_evaluated, prompt_total, thinking, generated, [drafted, accepted], [estimated: the
    # names of the counts that are awl's estimates, where a server did not report them]
    tokens: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)  # prompt_s, generate_s, total_s, tokens_per_s
    finish: str = "stop"  # "stop" | "length" | "cancelled"
    created: str = field(default_factory=utc_now)
    # Added within v1, written only when set:
    controls_added: list[str] = field(default_factory=list)  # control instructions added before this turn
    # The exact assistant message later turns see, when it is not the canonical
    # `**Environment Observation:**` + newline + observation (e.g. an imported benchmark row).
    history_message: str | None = None
    # What the model saw when the conversation outgrew the context (engine/context_window.py):
    # {"omitted_turns": {"first": 2, "last": N}} and, on the turn that cut, "cut" with token counts.
    context: dict[str, Any] | None = None
    # Set on a resumed session's turns (session/resume_rules.py): the settings this turn ran with
    # where they differ from the header's ({"max_tokens": 8192, "think": "full", "seed": 9}), and
    # the model, when another than the header's (`--allow-other-model`).
    settings: dict[str, Any] | None = None
    model: ModelRef | None = None
    # The agent side of a turn an agent model proposed (agent/episode.py): {"proposal": what it
    # wrote, "decision": "auto" | "approved" | "edited" | "replaced", "asks": 1 or 2, "thinking"}.
    agent: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def estimated(self, key: str) -> bool:
        """Whether the recorded count `key` is awl's estimate (a server that did not report it)."""
        named = self.tokens.get("estimated")
        return isinstance(named, list) and key in named

    def token_count(self, key: str) -> int | None:
        """A recorded token count (`generated`, `prompt_total`, ...), or None when it is
        missing or unusable (see `stored_number`)."""
        value = stored_number(self.tokens, key)
        return value if isinstance(value, int) else None

    def timing(self, key: str) -> float | None:
        """A recorded timing (`total_s`, `tokens_per_s`, ...) as a float, or None when it is
        missing or unusable (see `stored_number`)."""
        value = stored_number(self.timings, key)
        return None if value is None else float(value)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "turn"}
        out.update(self.extra)
        for name in ("id", "parent", "turn", "action", "action_payload", "prompt", "raw_output",
                     "thinking", "observation", "parse_method", "tokens", "timings", "finish", "created"):
            out[name] = getattr(self, name)
        if self.controls_added:
            out["controls_added"] = list(self.controls_added)
        if self.history_message is not None:
            out["history_message"] = self.history_message
        if self.context is not None:
            out["context"] = self.context
        if self.settings:
            out["settings"] = dict(self.settings)
        if self.model is not None:
            out["model"] = self.model.to_dict()
        if self.agent is not None:
            out["agent"] = dict(self.agent)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TurnRecord:
        _check_type(data, "turn")
        return cls(
            id=_get(data, "id", (int,)),
            parent=_get(data, "parent", (int, NoneT), None),
            turn=_get(data, "turn", (int,)),
            action=_get(data, "action", (str,)),
            action_payload=data.get("action_payload"),
            prompt=_get(data, "prompt", (str,), ""),
            raw_output=_get(data, "raw_output", (str,), ""),
            thinking=_get(data, "thinking", (str,), ""),
            observation=_get(data, "observation", (str,), ""),
            parse_method=_get(data, "parse_method", (str,), ""),
            tokens=_get(data, "tokens", (dict,), dict),
            timings=_get(data, "timings", (dict,), dict),
            finish=_get(data, "finish", (str,), "stop"),
            created=_get(data, "created", (str,), ""),
            controls_added=_str_list(data, "controls_added"),
            history_message=_get(data, "history_message", (str, NoneT), None),
            context=_get(data, "context", (dict, NoneT), None),
            settings=_get(data, "settings", (dict, NoneT), None),
            model=_model_ref(_get(data, "model", (dict, NoneT), None)),
            agent=_get(data, "agent", (dict, NoneT), None),
            extra=_extra(data, cls),
        )
