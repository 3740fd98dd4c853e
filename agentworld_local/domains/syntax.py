"""Small parsing helpers shared by the domains' action parsers.

Friendly forms are shell-like (`fill 5 "hello world"`, `read_file path=README.md`), raw
forms are JSON or a Python call. Python is only ever *parsed* (`ast`), never evaluated.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from typing import Any

from agentworld_local.errors import ActionError

# A pasted raw action often arrives inside a Markdown code fence, as the benchmark writes it.
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?```$", re.DOTALL)
_NUMBER = re.compile(r"^-?(?:\d+|\d*\.\d+)(?:[eE][-+]?\d+)?$")


def strip_fence(text: str) -> str:
    """The body of a ```lang ... ``` block, or the text unchanged."""
    match = _FENCE.match(text.strip())
    return match.group(1).strip() if match else text


def load_json(text: str, help_text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ActionError(
            f"Invalid JSON action ({error.msg} at line {error.lineno} column {error.colno}).", help_text
        ) from None


def split_words(text: str, help_text: str) -> list[str]:
    """Shell-like words: quotes group words with spaces and are removed."""
    try:
        return shlex.split(text)
    except ValueError as error:  # "No closing quotation"
        raise ActionError(f"Cannot read the action: {error}.", help_text) from None


def guess_scalar(value: str) -> Any:
    """`3` -> 3, `2.5` -> 2.5, `true` -> True, `null` -> None, JSON lists/objects; else the text."""
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "none"):
        return None
    if re.match(r"^-?\d+$", value):
        return int(value)
    if _NUMBER.match(value):
        return float(value)
    if value[:1] in "[{":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def parse_int(word: str, what: str, help_text: str) -> int:
    try:
        return int(word)
    except ValueError:
        raise ActionError(f"{what} must be a whole number, not `{word}`.", help_text) from None


def python_literal(node: ast.expr, help_text: str) -> Any:
    """The value of a literal argument (`'12'`, `-3`, `['a', 'b']`); anything else is refused."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        source = ast.unparse(node)
        raise ActionError(
            f"Argument `{source}` is not a literal value (use quoted text or a number).", help_text
        ) from None


def python_call(text: str, help_text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """Parse `name(arg, key=value)` into its parts, without evaluating anything."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as error:
        raise ActionError(f"Invalid call syntax: {error.msg} (column {error.offset}).", help_text) from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ActionError("Expected one call such as `click('12')`.", help_text)
    args = [python_literal(arg, help_text) for arg in call.args]
    kwargs = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise ActionError("`**` arguments are not accepted; write each argument out.", help_text)
        kwargs[keyword.arg] = python_literal(keyword.value, help_text)
    return call.func.id, args, kwargs


def normalize_url(text: str) -> str:
    """`example.com/a` -> `https://example.com/a`; URLs with a scheme (or about:) stay as they are."""
    url = text.strip()
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", url) and not re.match(r"^[^/:]+:\d", url):
        return url
    return "https://" + url
