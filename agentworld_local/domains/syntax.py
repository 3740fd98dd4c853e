"""Small parsing helpers shared by the domains' action parsers.

Friendly forms are shell-like (`fill 5 "hello world"`, `read_file path=README.md`), raw
forms are JSON or a Python call. Python is only ever *parsed* (`ast`), never evaluated.
Every helper here is linear in the length of the action and raises only ActionError:
actions come from people and programs we do not control.
"""

from __future__ import annotations

import ast
import gc
import math
import re
import warnings
from typing import Any, NamedTuple

from agentworld_local import safe_parse
from agentworld_local.errors import ActionError
from agentworld_local.terminal_text import shorten

#: Far more than any model's context holds (262,144 tokens is about 1 MiB of text).
MAX_ACTION_CHARS = 4 * 1024 * 1024
#: Friendly numbers longer than this stay text: they are identifiers, not quantities.
MAX_NUMBER_DIGITS = 100

_FENCE_INFO = re.compile(r"[A-Za-z0-9_-]*[ \t]*")
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")  # a leading zero makes text (`007` is an id)
_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)?\.[0-9]+(?:[eE][-+]?[0-9]+)?|-?(?:0|[1-9][0-9]*)[eE][-+]?[0-9]+")
_ASCII_INT = re.compile(r"[-+]?[0-9]+")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# One piece of a shell-like word: plain run, '...', "..." (\" and \\ escaped), \x, or a lone quote.
_PIECE = re.compile(r"""[^\s'"\\]+|\s+|'[^']*'|"(?:[^"\\]|\\.)*"|\\.|\\|['"]""", re.DOTALL)
_DQ_ESCAPE = re.compile(r'\\(["\\])')


def value_text(value: Any, limit: int = 60) -> str:
    """A user's value inside an error message: one line, at most about `limit` characters."""
    return shorten(value if isinstance(value, str) else repr(value), limit)


def begin_action(text: str, help_text: str) -> str:
    """The action without surrounding whitespace; refuses empty, oversized or non-Unicode text."""
    if len(text) > MAX_ACTION_CHARS:
        raise ActionError(
            f"The action is {len(text):,} characters long; awl accepts at most {MAX_ACTION_CHARS:,}.",
            "Shorten it: no model context holds more.",
        )
    bad = _SURROGATE.search(text)
    if bad:
        raise ActionError(
            f"The action contains a lone surrogate (U+{ord(bad.group()):04X}, at character {bad.start() + 1}), "
            "which is not valid Unicode text.",
            "Retype that part, or paste it again from a UTF-8 source.",
        )
    stripped = text.strip()
    if not stripped:
        raise ActionError("The action is empty.", help_text)
    return stripped


def fenced_body(text: str) -> str | None:
    """The body of a ```lang ... ``` block (stripped), or None when `text` is not one block."""
    text = text.strip()
    if len(text) < 6 or not (text.startswith("```") and text.endswith("```")):
        return None
    info, newline, body = text[3:-3].partition("\n")
    if not _FENCE_INFO.fullmatch(info):
        return None
    return body.strip() if newline else ""


def strip_fence(text: str) -> str:
    """The body of a ```lang ... ``` block, or the text unchanged."""
    body = fenced_body(text)
    return text if body is None else body


def unfence(text: str, help_text: str) -> str:
    """Like strip_fence, but an empty code block is refused with a clear message."""
    body = fenced_body(text)
    if body is None:
        return text
    if not body:
        raise ActionError("The code block is empty; put the action between the ``` lines.", help_text)
    return body


def load_json(text: str, help_text: str) -> Any:
    """JSON from an action; deep nesting, huge numbers and bad syntax become ActionError."""
    try:
        return safe_parse.load_json(text)
    except safe_parse.SyntaxProblem as problem:
        raise ActionError(f"Invalid JSON action ({problem.reason}).", help_text) from None


class Word(NamedTuple):
    """A shell-like word and where it was in the text (`text[start:end]` is what was typed)."""

    value: str
    start: int
    end: int


def split_spans(text: str, help_text: str) -> list[Word]:
    """Shell-like words (POSIX `shlex.split` rules, no comments), in linear time.

    `shlex` builds each word one character at a time, which is quadratic: a 1 MiB
    argument took 15 s. Quotes group words with spaces and are removed.
    """
    words: list[Word] = []
    parts: list[str] = []
    start = -1
    position = 0
    for match in _PIECE.finditer(text):
        piece = match.group()
        first = piece[0]
        if first.isspace():
            if start >= 0:
                words.append(Word("".join(parts), start, match.start()))
                parts, start = [], -1
            continue
        if start < 0:
            start = match.start()
        if len(piece) == 1 and first in "'\"":
            raise ActionError("Cannot read the action: No closing quotation.", help_text)
        if piece == "\\":
            raise ActionError("Cannot read the action: No escaped character (a `\\` at the end).", help_text)
        if first == "'":
            parts.append(piece[1:-1])
        elif first == '"':
            parts.append(_DQ_ESCAPE.sub(r"\1", piece[1:-1]))
        elif first == "\\":
            parts.append(piece[1])
        else:
            parts.append(piece)
        position = match.end()
    if start >= 0:
        words.append(Word("".join(parts), start, position))
    return words


def split_words(text: str, help_text: str) -> list[str]:
    """Shell-like words: quotes group words with spaces and are removed."""
    return [word.value for word in split_spans(text, help_text)]


def read_int(word: str) -> int | None:
    """A whole number written in ASCII digits (leading zeros allowed), or None."""
    if len(word) > MAX_NUMBER_DIGITS + 1 or not _ASCII_INT.fullmatch(word):
        return None
    return int(word)


def read_number(word: str) -> int | float | None:
    """A whole or decimal number (finite), or None."""
    whole = read_int(word)
    if whole is not None:
        return whole
    if len(word) > MAX_NUMBER_DIGITS or not re.fullmatch(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?", word):
        return None
    value = float(word)
    return value if math.isfinite(value) else None


def guess_scalar(value: str) -> Any:
    """`3` -> 3, `2.5` -> 2.5, `true` -> True, `null` -> None, JSON lists/objects; else the text.

    Only plain numbers become numbers: `007` (a leading zero) and very long digit strings
    are identifiers and stay text.
    """
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "none"):
        return None
    if len(value) <= MAX_NUMBER_DIGITS:
        if _INTEGER.fullmatch(value):
            return int(value)
        if _DECIMAL.fullmatch(value):
            number = float(value)
            if math.isfinite(number):
                return number
    if value[:1] in ("[", "{"):
        try:
            return safe_parse.load_json(value)
        except safe_parse.SyntaxProblem:
            return value
    return value


def parse_int(word: str, what: str, help_text: str) -> int:
    number = read_int(word)
    if number is None:
        raise ActionError(f"{what} must be a whole number, not `{value_text(word)}`.", help_text)
    return number


def parse_python(code: str, help_text: str, mode: str = "exec") -> ast.AST:
    """`ast.parse` whose every failure (syntax, depth, size, NUL) is one ActionError."""
    try:
        return _parse(code, mode)
    except SyntaxError as error:
        raise _syntax_error(error, help_text) from None
    except _NOT_PARSED:
        raise _not_parsed(code, help_text) from None


def check_python_module(code: str, help_text: str) -> bool:
    """Whether `code` parses as a module (ActionError if not); True when it holds a statement.

    Long code is parsed a piece at a time, each piece ending where a top-level statement may
    start: a whole 4 MiB module's syntax tree took 500 MB and 12 s. A piece that does not
    parse may have been cut inside a bracket or a string: it grows (doubling, so the work
    stays linear) until it parses or reaches the end, where the error is Python's own for
    the whole code.
    """
    has_statement, start, line, size = False, 0, 1, PIECE_CHARS
    while True:
        end = _statement_start(code, start + size)
        piece = code[start:end]
        try:
            tree = _parse(piece, "exec")
        except SyntaxError as error:
            if end < len(code):
                size *= 2
                continue
            raise _syntax_error(error, help_text, line - 1) from None
        except _NOT_PARSED:
            raise _not_parsed(piece, help_text) from None
        has_statement = has_statement or bool(tree.body)  # type: ignore[attr-defined]
        if end >= len(code):
            return has_statement
        start, line, size = end, line + piece.count("\n"), PIECE_CHARS


#: Pieces of long code checked at a time (see check_python_module).
PIECE_CHARS = 64 * 1024
_NOT_PARSED = (RecursionError, MemoryError, ValueError)
# A line that may start a top-level statement: not indented, not a comment or a closing
# bracket, not a clause that continues the statement above.
_TOP_LEVEL = re.compile(r"^(?![\s#)\]}])(?!(?:else|elif|except|finally)\b)", re.MULTILINE)


def _statement_start(code: str, position: int) -> int:
    """The first place at or after `position` where a top-level statement may begin: a line
    start (not after a backslash continuation or a decorator), or within a long line, after a
    `;` of a top-level line that holds no `:` or `#` (no compound statement, no comment);
    len(code) when there is none."""
    if position >= len(code):
        return len(code)
    line_start = code.rfind("\n", 0, position) + 1
    line_end = len(code) if (end := code.find("\n", position)) < 0 else end
    if line_end - position > PIECE_CHARS and _TOP_LEVEL.match(code, line_start) and \
            code.find(":", line_start, line_end) < 0 and code.find("#", line_start, line_end) < 0:
        after = code.find(";", position, line_end) + 1
        if after:
            while after < line_end and code[after] in " \t":  # a piece must not start indented
                after += 1
            return after
    for match in _TOP_LEVEL.finditer(code, line_start):
        at = match.start()
        if at < position or at == 0:
            continue
        previous = code[code.rfind("\n", 0, at - 1) + 1: at]
        if not previous.rstrip("\r\n").endswith("\\") and not previous.startswith("@"):
            return at
    return len(code)


def _parse(code: str, mode: str) -> ast.AST:
    if "\0" in code:
        raise ValueError("NUL")
    enabled = gc.isenabled()
    gc.disable()  # the collector rescans the growing tree: building a large one became superlinear
    try:
        with warnings.catch_warnings():  # `"\,"` warns (SyntaxWarning in 3.12): noise on the user's terminal
            warnings.simplefilter("ignore")
            return ast.parse(code, mode=mode)
    finally:
        if enabled:
            gc.enable()


def _syntax_error(error: SyntaxError, help_text: str, lines_before: int = 0) -> ActionError:
    reason = error.msg
    if "digits" in reason:  # Python's limit on decimal integer literals
        reason = "a number with more than 4,300 digits"
    where = f" on line {error.lineno + lines_before}" if error.lineno else ""
    line = (error.text or "").strip()
    shown = f" (`{shorten(line, 80)}`)" if line else ""
    return ActionError(f"Python syntax error{where}: {reason}{shown}.", help_text)


def _not_parsed(code: str, help_text: str) -> ActionError:
    if "\0" in code:  # "source code string cannot contain null bytes" (Python 3.11)
        return ActionError("The code contains a NUL character, which Python code cannot hold.", help_text)
    return ActionError("The code is nested too deeply for Python's parser.", help_text)


def _argument(node: ast.AST) -> str:
    """`Argument `x + 1`` for messages; just "An argument" when it cannot be written back."""
    try:
        return f"Argument `{shorten(ast.unparse(node), 60)}`"
    except (RecursionError, MemoryError, ValueError):  # e.g. a hex literal too long to print
        return "An argument"


#: Literals Python can write but a session file (JSON) cannot hold, named for the message.
_NOT_STORABLE = {set: "a set", frozenset: "a set", bytes: "bytes", complex: "a complex number", type(...): "`...`"}


def _check_printable(value: Any, node: ast.AST, help_text: str) -> None:
    """Refuse literals that cannot be written back into the prompt (huge ints, inf, NaN) or
    saved in the session file (sets, bytes, complex numbers, `...`, keys that are not text):
    the action is refused now, not after the model has run the turn."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, bool) or item is None:
            continue
        if type(item) in _NOT_STORABLE:
            raise ActionError(
                f"{_argument(node)} holds {_NOT_STORABLE[type(item)]}, which a session file cannot store.",
                f"Use text, numbers and lists. {help_text}",
            )
        if isinstance(item, dict) and not all(isinstance(key, str) for key in item):
            raise ActionError(f"{_argument(node)} has a dictionary key that is not text.", f"Quote the keys. {help_text}")
        if isinstance(item, int) and item.bit_length() > 4 * MAX_NUMBER_DIGITS:
            raise ActionError(f"{_argument(node)} is a number too large to use; write it as text.", help_text)
        if isinstance(item, float) and not math.isfinite(item):
            raise ActionError(f"{_argument(node)} is not a finite number.", help_text)
        if isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())


def python_literal(node: ast.expr, help_text: str) -> Any:
    """The value of a literal argument (`'12'`, `-3`, `['a', 'b']`); anything else is refused."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        raise ActionError(
            f"{_argument(node)} is not a literal value (use quoted text or a number).", help_text
        ) from None
    _check_printable(value, node, help_text)
    return value


def python_call(text: str, help_text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """Parse `name(arg, key=value)` into its parts, without evaluating anything."""
    try:
        tree = parse_python(text.strip(), help_text, mode="eval")
    except ActionError as error:
        message = error.message.replace("Python syntax error", "Invalid call syntax", 1)
        raise ActionError(message, help_text) from None
    call = tree.body  # type: ignore[attr-defined]
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
