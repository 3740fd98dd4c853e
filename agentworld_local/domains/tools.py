"""Tool-call domains (swe, mcp, search): tool definitions and the tool-call action parser.

The action is a JSON tool call `{"name": ..., "arguments": {...}}`, written into the prompt
inside a ```json fence as the benchmark writes it. Friendly forms: `TOOL key=value ...`,
`TOOL some text` (the text fills the tool's main parameter), or a domain's shortcut.
Arguments are checked only for what makes a call malformed (unknown tool, missing required
argument, a value of the wrong JSON type, an argument the schema forbids); a real
server's reaction to odd but well-formed arguments is for the world model to simulate.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentworld_local.domains.base import Action, action_json
from agentworld_local.domains.packs import builtin_template, fill_template
from agentworld_local.domains.syntax import (
    Word,
    begin_action,
    guess_scalar,
    load_json,
    read_int,
    read_number,
    split_spans,
    unfence,
    value_text,
)
from agentworld_local.errors import ActionError, InputError, did_you_mean

TOOL_DEFINITION_HINT = (
    'Each tool needs a "name" and an "inputSchema" (a JSON schema of type object), '
    'e.g. {"name": "read_file", "description": "...", "inputSchema": {"type": "object", '
    '"properties": {"path": {"type": "string"}}, "required": ["path"]}}.'
)
_JSON_TYPES = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
    "object": dict,
}


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    schema: dict[str, Any]

    @property
    def properties(self) -> dict[str, Any]:
        return self.schema.get("properties") or {}

    @property
    def required(self) -> list[str]:
        return list(self.schema.get("required") or [])

    @property
    def primary(self) -> str | None:
        """The parameter that free text fills (`bash ls -la`): the first required one, else the first."""
        if self.required:
            return self.required[0]
        return next(iter(self.properties), None)

    def definition(self) -> dict[str, Any]:
        """MCP's shape: name, description, inputSchema."""
        return {"name": self.name, "description": self.description, "inputSchema": self.schema}

    def signature(self) -> str:
        required = set(self.required)
        names = [name if name in required else f"{name}?" for name in self.properties]
        return f"{self.name}({', '.join(names)})"


def _schema_problem(schema: dict[str, Any]) -> str | None:
    """What makes an input schema unusable for checking calls, in plain words, or None."""
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        return "its `properties` should be a table of argument schemas"
    for key, value in properties.items():
        if not isinstance(value, dict):
            return f'its property `{key}` should be a table (a JSON schema such as {{"type": "string"}})'
        kind = value.get("type")
        if kind is not None and not (isinstance(kind, str) or (isinstance(kind, list) and all(isinstance(k, str) for k in kind))):
            return f'its property `{key}` has a `type` that is neither a type name nor a list of names (e.g. "string")'
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(key, str) for key in required):
        return 'its `required` should be a list of argument names, e.g. ["path"]'
    return None


def _not_json(value: Any) -> str | None:
    """The first value JSON cannot hold (a TOML date, a non-finite number), described, or None."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            stack.extend((child, f"{where}.{key}" if where else str(key)) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{index}]") for index, child in enumerate(item))
        elif isinstance(item, float) and not math.isfinite(item):
            return f"`{where}` is {item}, which JSON cannot hold; use a finite number"
        elif not (item is None or isinstance(item, (str, int, float, bool))):
            return (
                f"`{where}` is a {_value_kind(item)} ({item}), which a JSON schema cannot hold; "
                "write it in quotes as text"
            )
    return None


def _value_kind(value: Any) -> str:
    kinds = {"datetime": "date and time", "date": "date", "time": "time of day"}
    return kinds.get(type(value).__name__, type(value).__name__)


def normalize_tools(definitions: list[dict[str, Any]]) -> list[ToolSpec]:
    """Accept MCP (`inputSchema`), Anthropic (`input_schema`) and OpenAI (`parameters`,
    optionally wrapped in `{"type": "function", "function": ...}`) tool definitions."""
    specs: list[ToolSpec] = []
    seen: dict[str, str] = {}  # name without any whitespace -> name
    for index, raw in enumerate(definitions, start=1):
        item = raw.get("function", raw) if isinstance(raw, dict) and raw.get("type") == "function" else raw
        if not isinstance(item, dict):
            raise InputError(f"Tool definition {index} is not an object.", TOOL_DEFINITION_HINT)
        name = item.get("name")
        if name is None:
            raise InputError(f'Tool definition {index} has no "name".', TOOL_DEFINITION_HINT)
        if not isinstance(name, str):
            raise InputError(f'Tool definition {index}: its "name" should be text.', TOOL_DEFINITION_HINT)
        if not name.strip():
            raise InputError(f'Tool definition {index} has a blank "name".', TOOL_DEFINITION_HINT)
        name = name.strip()
        schema = item.get("inputSchema", item.get("input_schema", item.get("parameters")))
        schema = {"type": "object", "properties": {}} if schema is None else schema
        if not isinstance(schema, dict):
            raise InputError(f"Tool `{name}`: its input schema must be a JSON object schema.", TOOL_DEFINITION_HINT)
        problem = _schema_problem(schema) or _not_json(item)
        if problem:
            raise InputError(f"Tool `{name}`: {problem}.", TOOL_DEFINITION_HINT)
        description = item.get("description") or ""
        if not isinstance(description, str):
            raise InputError(f"Tool `{name}`: its description should be text.", TOOL_DEFINITION_HINT)
        key = "".join(name.split())
        if key in seen:
            same = seen[key] == name
            raise InputError(
                f"Tool `{name}` is defined twice." if same
                else f"Tools `{seen[key]}` and `{name}` differ only in spaces.",
                "Give every tool a distinct name.",
            )
        seen[key] = name
        specs.append(ToolSpec(name, description, schema))
    return specs


def tools_json(specs: list[ToolSpec]) -> str:
    """A JSON array with one tool per line: readable, and far fewer tokens than indented JSON."""
    lines = [json.dumps(spec.definition(), ensure_ascii=False) for spec in specs]
    return "[\n" + ",\n".join(lines) + "\n]"


def tool_call_text(payload: dict[str, Any]) -> str:
    """How a call is written in `**Action:**`: a ```json fence, as in the benchmark's rows."""
    return f"```json\n{action_json(payload)}\n```"


def _kinds(schema: dict[str, Any]) -> list[str]:
    """The JSON types a parameter schema allows (`"string"` or `["string", "null"]`); [] if untyped."""
    expected = schema.get("type")
    return [expected] if isinstance(expected, str) else list(expected or [])


def _type_words(schema: dict[str, Any]) -> str:
    return " or ".join(_kinds(schema)) or "any"


def _check_type(value: Any, schema: dict[str, Any]) -> bool:
    kinds = _kinds(schema)
    if not kinds or ("null" in kinds and value is None):
        return True
    for kind in kinds:
        python_type = _JSON_TYPES.get(kind)
        # bool is an int in Python; JSON keeps them apart.
        if python_type and isinstance(value, python_type) and not (kind in ("integer", "number") and isinstance(value, bool)):
            return True
    return not any(kind in _JSON_TYPES for kind in kinds)


def convert_word(word: str, schema: dict[str, Any]) -> Any:
    """A friendly-form value, read according to the parameter's JSON type.

    A typed parameter takes the first of its types the word can be (`id=123` is "123"
    for a `["string", "null"]` id); an untyped one is guessed (`3` is 3, `007` stays text).
    """
    kinds = _kinds(schema)
    if not kinds:
        return guess_scalar(word)
    lowered = word.lower()
    if "null" in kinds and lowered in ("null", "none"):
        return None
    if "boolean" in kinds and lowered in ("true", "false"):
        return lowered == "true"
    if "integer" in kinds and (number := read_int(word)) is not None:
        return number
    if "number" in kinds and (number := read_number(word)) is not None:
        return number
    if "string" in kinds:
        return word
    if ("array" in kinds or "object" in kinds) and word[:1] in ("[", "{"):
        value = guess_scalar(word)
        if isinstance(value, (list, dict)):
            return value
    if "array" in kinds:
        items = schema.get("items")
        return [convert_word(word, items) if isinstance(items, dict) else guess_scalar(word)]
    return guess_scalar(word)  # the type check then names the expected type


# A shortcut: the rest of the line -> (tool name, arguments).
Shortcut = Callable[[str], tuple[str, dict[str, Any]]]


class ToolCallDomain:
    """Base of the swe, mcp and search domains; subclasses set the class attributes."""

    name = ""
    title = ""
    state_lexer = "text"
    takes_tools = True
    shows_file_system = False
    reads_keystrokes = False
    default_tools: list[dict[str, Any]] = []
    #: Friendly examples shown in errors, e.g. ["bash ls -la", "read_file path=src/app.py"].
    friendly_examples: list[str] = []

    def __init__(self, tools: list[dict[str, Any]] | None = None) -> None:
        self.specs = normalize_tools(tools or self.default_tools)
        self._by_name = {spec.name: spec for spec in self.specs}

    def tools(self) -> list[dict[str, Any]]:
        return [spec.definition() for spec in self.specs]

    def tool_definitions(self) -> str:
        """What fills a template's `{tool_definitions}`: the session's tools as JSON."""
        return tools_json(self.specs)

    def system_prompt(self) -> str:
        return fill_template(builtin_template(self.name), tool_definitions=self.tool_definitions())

    def shortcuts(self) -> dict[str, Shortcut]:
        return {}

    def action_words(self) -> list[str]:
        """The words an action may start with: the session's tool names and the shortcuts."""
        return [*self._by_name, *self.shortcuts()]

    def example_actions(self) -> list[str]:
        """Friendly examples for the tools this session has (a scenario may bring its own
        server): the domain's own where they fit, else one per tool, from its required arguments."""
        words = set(self.action_words())
        examples = [e for e in self.friendly_examples if e.split(" ", 1)[0] in words]
        return examples or [" ".join([spec.name, *(f"{key}=<{key}>" for key in spec.required)]) for spec in self.specs[:2]]

    def action_help(self) -> str:
        first = self.specs[0]
        example_args = {key: f"<{key}>" for key in first.required}
        raw = json.dumps({"name": first.name, "arguments": example_args})
        friendly = ", ".join(f"`{example}`" for example in self.example_actions())
        return (
            f"Accepted forms: a tool name with key=value arguments or with free text for its main "
            f"argument ({friendly}), or a JSON tool call (`{raw}`). "
            f"Tools: {', '.join(spec.signature() for spec in self.specs)}."
        )

    # -- parsing ------------------------------------------------------------------

    def parse_action(self, text: str) -> Action:
        stripped = begin_action(text, self.action_help())
        body = unfence(stripped, self.action_help())
        if body.startswith("{"):
            name, arguments = self._from_json(load_json(body, self.action_help()))
        elif body.startswith("["):
            raise ActionError("Send one tool call per turn: a JSON object, not an array.", self.action_help())
        else:
            name, arguments = self._from_friendly(body)
        payload = self.check_call(name, arguments)
        return Action(text=stripped, payload=payload, prompt_text=tool_call_text(payload))

    def _from_json(self, raw: Any) -> tuple[Any, Any]:
        call = raw.get("function", raw) if isinstance(raw, dict) and isinstance(raw.get("function"), dict) else raw
        if not isinstance(call, dict) or "name" not in call:
            raise ActionError('A JSON tool call needs a "name" and an "arguments" object.', self.action_help())
        arguments = call.get("arguments", call.get("parameters", {}))
        if isinstance(arguments, str):  # OpenAI sends arguments as a JSON string
            arguments = load_json(arguments or "{}", self.action_help())
        return call["name"], arguments

    def _from_friendly(self, text: str) -> tuple[str, dict[str, Any]]:
        word, *more = text.split(None, 1)
        rest = more[0].strip() if more else ""
        if word in self._by_name:
            return word, self.friendly_arguments(self._by_name[word], rest)
        shortcut = self.shortcuts().get(word.lower())
        if shortcut is not None:
            return shortcut(rest)
        return word, {}  # check_call names the tools

    def friendly_arguments(self, spec: ToolSpec, rest: str) -> dict[str, Any]:
        """`key=value` words, or free text for the main parameter, or both (text first).

        Free text reaches the tool as it was typed (quotes and spacing matter in a shell
        command), unless it is one quoted string: `search "ramen in Osaka"`.
        """
        if not rest:
            return {}
        primary = spec.primary
        try:
            words = split_spans(rest, self.action_help())
        except ActionError:
            if primary is None:
                raise
            words = [Word(rest, 0, len(rest))]  # an apostrophe in free text (`bash echo it's`)
        properties = spec.properties

        def is_pair(word: Word) -> bool:
            key = word.value.partition("=")[0]
            return "=" in word.value and (key in properties or (not properties and key.isidentifier()))

        pairs = [word for word in words if is_pair(word)]
        free = [word for word in words if not is_pair(word)]
        arguments: dict[str, Any] = {}
        if free:
            in_order = words[: len(free)] == free  # the text first, then the key=value pairs
            if primary is None or not in_order or primary in [p.value.partition("=")[0] for p in pairs]:
                arguments_hint = " ".join(f"{key}=..." for key in properties) or "key=value"
                raise ActionError(
                    f"Cannot read the arguments of `{spec.name}`; write them as `{spec.name} {arguments_hint}`.",
                    self.action_help(),
                )
            typed = rest[free[0].start : free[-1].end]
            one_quoted = len(free) == 1 and len(typed) >= 2 and typed[0] in "\"'" and typed[-1] == typed[0]
            arguments[primary] = convert_word(free[0].value if one_quoted else typed, properties.get(primary, {}))
        for pair in pairs:
            key, _, value = pair.value.partition("=")
            arguments[key] = convert_word(value, properties.get(key, {}))
        return arguments

    def check_call(self, name: Any, arguments: Any) -> dict[str, Any]:
        if not isinstance(name, str) or name not in self._by_name:
            shown = value_text(name)
            parts = (f"Unknown tool `{shown}`.", did_you_mean(shown, self._by_name),
                     f"Available tools: {', '.join(self._by_name)}.")
            raise ActionError(" ".join(part for part in parts if part), self.action_help())
        spec = self._by_name[name]
        if not isinstance(arguments, dict):
            raise ActionError(f'The "arguments" of `{name}` must be a JSON object.', self.action_help())
        missing = [key for key in spec.required if key not in arguments]
        if missing:
            raise ActionError(
                f"Tool `{name}` needs the argument{'s' if len(missing) > 1 else ''} "
                f"{', '.join(f'`{key}`' for key in missing)}: {spec.signature()}.",
                self.action_help(),
            )
        if spec.schema.get("additionalProperties") is False:
            unknown = [key for key in arguments if key not in spec.properties]
            if unknown:
                raise ActionError(
                    f"Tool `{name}` has no argument {', '.join(f'`{key}`' for key in unknown)}: {spec.signature()}.",
                    self.action_help(),
                )
        for key, value in arguments.items():
            schema = spec.properties.get(key)
            if isinstance(schema, dict) and not _check_type(value, schema):
                raise ActionError(
                    f"Argument `{key}` of `{name}` must be of type {_type_words(schema)}, "
                    f"not {value_text(json.dumps(value, ensure_ascii=False))}.",
                    self.action_help(),
                )
            if isinstance(schema, dict) and isinstance(schema.get("enum"), list) and value not in schema["enum"]:
                raise ActionError(
                    f"Argument `{key}` of `{name}` must be one of "
                    f"{value_text(', '.join(json.dumps(item, ensure_ascii=False) for item in schema['enum']), 200)}.",
                    self.action_help(),
                )
        return {"name": name, "arguments": arguments}
