"""The scenario format (TOML, `version = 1`): a starting world for one domain.

Validation names the file and the field, and says what to write instead. The format is
documented in docs/scenarios.md; keep the two in step.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agentworld_local.defaults import MAX_THINK_TOKENS
from agentworld_local.domains import domain_class, domain_names, domains_with, get_domain
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import ThinkBudget
from agentworld_local.errors import InputError, did_you_mean
from agentworld_local.safe_parse import SyntaxProblem, load_json
from agentworld_local.terminal_text import shorten

SCENARIO_VERSION = 1
EXAMPLE_HINT = "See `awl scenarios show python-web-app` for a complete example."

REQUIRED = ("version", "name", "domain", "title", "task", "initial_state")
OPTIONAL = ("tools", "controls", "world", "description", "think")
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclass(frozen=True)
class Scenario:
    """A validated scenario. `source` is "bundled", "user" (the user's scenarios dir) or "file"."""

    name: str
    domain: str
    title: str
    task: str
    initial_state: str
    tools: list[dict[str, Any]] | None = None
    controls: list[str] = field(default_factory=list)
    world: str = ""
    description: str = ""
    #: The scenario's own thinking budget (`off`, `full` or tokens, as `--think`); None: awl's
    #: default. `--think` overrides it.
    think: str | None = None
    path: Path | None = None
    source: str = "file"
    version: int = SCENARIO_VERSION

    def ref(self) -> dict[str, Any]:
        """What a trajectory header records about the scenario."""
        ref: dict[str, Any] = {"name": self.name, "title": self.title}
        if self.source == "file" and self.path is not None:
            ref["path"] = str(self.path)
        return ref

    def apply(self, settings: SessionSettings) -> SessionSettings:
        """Session settings with this scenario's world in them."""
        return replace(
            settings,
            task=self.task,
            initial_state=self.initial_state,
            controls=list(self.controls),
            tools=self.tools,
            world_description=self.world,
            think=ThinkBudget.parse(self.think) if self.think is not None else settings.think,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": self.version, "name": self.name, "domain": self.domain, "title": self.title,
            "description": self.description, "task": self.task, "initial_state": self.initial_state,
            "controls": list(self.controls), "world": self.world, "tools": self.tools,
        }
        if self.think is not None:  # only where the scenario sets it
            out["think"] = self.think
        out["source"] = self.source
        out["path"] = str(self.path) if self.path else None
        return out


def _error(source: str, what: str, hint: str = EXAMPLE_HINT) -> InputError:
    return InputError(f"Scenario {source}: {what}.", hint)


def _text(data: dict[str, Any], key: str, source: str, *, required: bool) -> str:
    if key not in data:
        if required:
            raise _error(source, f"field `{key}` is missing", f"Add `{key} = \"...\"`. {EXAMPLE_HINT}")
        return ""
    value = data[key]
    if not isinstance(value, str):
        raise _error(source, f"field `{key}` should be a string, not {_kind(value)}")
    if required and not value.strip():
        raise _error(source, f"field `{key}` is {'empty' if not value else 'blank'}", f"Give `{key}` some text. {EXAMPLE_HINT}")
    return value


def _kind(value: Any) -> str:
    """What a TOML value is, in the words of the TOML format (never Python's type names)."""
    names = {
        bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "a table", str: "a string",
        datetime.datetime: "a date and time", datetime.date: "a date", datetime.time: "a time of day",
    }
    return names.get(type(value), "a value of another kind")


def _shown(value: Any) -> str:
    """A short quote of a value for a message: `"1"`, `2.5`, `1979-05-27` (a date)."""
    if isinstance(value, str):
        return f'"{shorten(value, 40)}"'
    if isinstance(value, (bool, int, float)):
        return shorten(str(value).lower() if isinstance(value, bool) else str(value), 40)
    if isinstance(value, (datetime.date, datetime.time)):
        return f"{value} ({_kind(value)})"
    return _kind(value)


def _check_version(data: dict[str, Any], source: str) -> int:
    if "version" not in data:
        raise _error(source, "field `version` is missing", f"Add `version = {SCENARIO_VERSION}` as the first line.")
    version = data["version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _error(source, f"field `version` should be a whole number such as {SCENARIO_VERSION}, not {_shown(version)}")
    if version > SCENARIO_VERSION:
        raise _error(
            source,
            f"field `version` is {version}, but this awl reads scenario format v{SCENARIO_VERSION}",
            "Upgrade with `pip install -U agentworld-local`, or rewrite the file for v1 (docs/scenarios.md).",
        )
    return version


def _controls(data: dict[str, Any], source: str) -> list[str]:
    value = data.get("controls", [])
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise _error(
            source, "field `controls` should be a list of non-empty strings",
            'Write e.g. `controls = ["The next tool call fails with a rate limit."]`.',
        )
    return [item.strip() for item in value]


def _think(data: dict[str, Any], source: str) -> str | None:
    """`think = 4096`, `think = "off"` or `think = "full"`: the budget as `--think` takes it."""
    if "think" not in data:
        return None
    value = data["think"]
    hint = 'Write `think = "off"`, `think = "full"` or a number of tokens such as `think = 4096`.'
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _error(source, f"field `think` should be `off`, `full` or a number of tokens, not {_kind(value)}", hint)
    try:
        budget = ThinkBudget.parse(str(value).strip())
    except InputError:
        digits = str(value).strip().isdigit()
        why = f"more than {MAX_THINK_TOKENS:,} tokens" if digits else "not `off`, `full` or a number of tokens"
        raise _error(source, f"field `think` is {_shown(value)}, {why}", hint) from None
    return budget.label()


def _tools(data: dict[str, Any], source: str) -> list[dict[str, Any]] | None:
    if "tools" not in data:
        return None
    value = data["tools"]
    hint = 'Write `[[tools]]` tables with `name`, `description` and `input_schema`, or a JSON array in a string.'
    if isinstance(value, str):
        try:
            value = load_json(value)
        except SyntaxProblem as problem:
            raise _error(source, f"field `tools` is a string but not JSON ({problem.reason})", hint) from None
    if not isinstance(value, list):
        raise _error(source, f"field `tools` should be a list of tool tables, not {_kind(value)}", hint)
    for index, tool in enumerate(value, start=1):
        if not isinstance(tool, dict):
            raise _error(source, f"tools[{index}] should be a table, not {_kind(tool)}", hint)
        named = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        if "name" not in named:
            raise _error(source, f"tools[{index}]: field `name` is missing", hint)
        if not isinstance(named["name"], str):
            raise _error(source, f"tools[{index}]: field `name` should be a string, not {_kind(named['name'])}", hint)
        if not named["name"].strip():
            raise _error(source, f"tools[{index}]: field `name` is blank", hint)
        for key in ("input_schema", "inputSchema", "parameters"):
            if key in named and not isinstance(named[key], dict):
                raise _error(
                    source, f"tools[{index}] ({named['name'].strip()}): field `{key}` should be a table (a JSON schema), "
                    f"not {_kind(named[key])}", hint,
                )
    return value


def scenario_from_dict(data: dict[str, Any], *, source: str, path: Path | None = None, origin: str = "file") -> Scenario:
    """Validate one parsed scenario file. `source` names it in errors (usually its path)."""
    version = _check_version(data, source)
    unknown = [key for key in data if key not in REQUIRED + OPTIONAL]
    if unknown:
        field_name = shorten(unknown[0], 60)
        hint = did_you_mean(field_name, REQUIRED + OPTIONAL) or f"Known fields: {', '.join(REQUIRED + OPTIONAL)}."
        raise _error(source, f"unknown field `{field_name}`", hint)
    name = _text(data, "name", source, required=True)
    if not _NAME.match(name):
        raise _error(source, f"field `name` is `{shorten(name, 60)}`; use lowercase letters, digits and dashes", 'E.g. `name = "my-shop"`.')
    domain = _text(data, "domain", source, required=True)
    if domain not in domain_names():
        raise _error(source, f"field `domain` names an unknown domain `{shorten(domain, 40)}`",
                     f"{did_you_mean(domain, domain_names())} Available: {', '.join(domain_names())}.".lstrip())
    tools = _tools(data, source)
    if tools:
        if not domain_class(domain).takes_tools:
            raise _error(source, f"field `tools` is given, but the {domain} domain takes no tool definitions",
                         f"Tools belong to the {', '.join(domains_with('takes_tools'))} domains; remove `tools` or change `domain`.")
        try:
            get_domain(domain, tools=tools)  # the domain's own checks (duplicate names, schemas)
        except InputError as error:
            raise _error(source, f"field `tools`: {error.message.rstrip('.')}", error.hint or EXAMPLE_HINT) from None
    return Scenario(
        name=name,
        domain=domain,
        title=_text(data, "title", source, required=True).strip(),
        task=_text(data, "task", source, required=True).strip(),
        initial_state=_text(data, "initial_state", source, required=True),
        tools=tools,
        controls=_controls(data, source),
        world=_text(data, "world", source, required=False).strip(),
        description=_text(data, "description", source, required=False).strip(),
        think=_think(data, source),
        path=path,
        source=origin,
        version=version,
    )
