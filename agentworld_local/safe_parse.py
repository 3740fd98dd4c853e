"""JSON and TOML from people and programs we do not control.

The standard parsers raise RecursionError on deep nesting and ValueError on integers past
Python's digit limit; both must become a plain reason, never a traceback. Values nested
deeper than MAX_DEPTH are refused too: later steps (printing, re-encoding, rendering)
recurse over them.
"""

from __future__ import annotations

import json
import tomllib
from typing import Any

#: Deeper than any action, tool schema or trajectory line a person writes.
MAX_DEPTH = 100


class SyntaxProblem(ValueError):
    """Text that is not valid JSON/TOML, or too deep or too large to accept.

    `reason` is one human sentence fragment ("nested deeper than 100 levels"); the caller
    wraps it in its own AwlError with the file or action it came from and a next step.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _too_deep(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _checked(value: Any) -> Any:
    if _too_deep(value):
        raise SyntaxProblem(f"nested deeper than {MAX_DEPTH} levels")
    return value


def load_json(text: str | bytes) -> Any:
    """`json.loads` that raises only SyntaxProblem."""
    try:
        value = json.loads(text)
        # Each level of nesting opens with a bracket: text with few of them needs no walk (a
        # trajectory line is read in a fraction of the walk's time).
        opening = (b"[", b"{") if isinstance(text, bytes) else ("[", "{")
        return value if text.count(opening[0]) + text.count(opening[1]) <= MAX_DEPTH else _checked(value)
    except json.JSONDecodeError as error:
        raise SyntaxProblem(f"{error.msg} at line {error.lineno} column {error.colno}") from None
    except RecursionError:
        raise SyntaxProblem(f"nested deeper than {MAX_DEPTH} levels") from None
    except UnicodeDecodeError:
        raise SyntaxProblem("not valid UTF-8") from None
    except ValueError as error:  # "Exceeds the limit (4300 digits) for integer string conversion"
        raise SyntaxProblem(_value_reason(error)) from None


def load_toml(text: str) -> dict[str, Any]:
    """`tomllib.loads` that raises only SyntaxProblem."""
    try:
        return _checked(tomllib.loads(text))
    except tomllib.TOMLDecodeError as error:
        raise SyntaxProblem(str(error)) from None
    except RecursionError:
        raise SyntaxProblem(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:
        raise SyntaxProblem(_value_reason(error)) from None


def _value_reason(error: ValueError) -> str:
    if "digits" in str(error):
        return "a number with more than 4,300 digits"
    return str(error) or "a value that cannot be read"
