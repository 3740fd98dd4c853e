"""The os domain: Python (pyautogui and app helpers) in, the desktop's accessibility tree out.

The code is checked with `ast.parse` and never executed: it is text the world model reads.
Friendly shortcuts (`click 200 300`, `type "hello"`, `hotkey ctrl c`) become pyautogui code.
"""

from __future__ import annotations

import ast
import json
import textwrap
from typing import Any

from agentworld_local.domains.base import Action, ToollessDomain
from agentworld_local.domains.packs import builtin_template, fill_template
from agentworld_local.domains.syntax import begin_action, check_python_module, parse_int, parse_python, split_words
from agentworld_local.errors import ActionError

SCREEN = (1920, 1080)
SPECIAL_ACTIONS = ("WAIT", "DONE", "FAIL")  # OSWorld's control words, valid as they are
SCROLL_CLICKS = 5

ACTION_HELP = (
    "Accepted forms: Python code using pyautogui or app helpers (`pyautogui.click(200, 300)`, several "
    "lines allowed), WAIT / DONE / FAIL, or a shortcut: `click 200 300`, `double_click X Y`, "
    "`right_click X Y`, `move X Y`, `drag X Y`, `type \"hello\"`, `press enter`, `hotkey ctrl c`, "
    "`scroll down [N]`, `wait`, `done`, `fail`."
)

DEFAULT_INITIAL_STATE = """\
tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)
label\tActivities\tActivities\t\t\t(0, 0)\t(100, 32)
label\tTue 14:32\tTue 14:32\t\t\t(900, 0)\t(120, 32)
push-button\tFiles\t\t\t\t(0, 120)\t(70, 64)
push-button\tTerminal\t\t\t\t(0, 190)\t(70, 64)
push-button\tFirefox Web Browser\t\t\t\t(0, 260)\t(70, 64)
frame\tHome\t\t\t\t(360, 160)\t(1200, 760)
push-button\tBack\t\t\t\t(372, 172)\t(34, 34)
label\tHome\tHome\t\t\t(500, 176)\t(80, 24)
toggle-button\tSearch\t\t\t\t(1370, 172)\t(34, 34)
table-cell\tRecent\tRecent\t\t\t(372, 240)\t(200, 36)
table-cell\tHome\tHome\t\t\t(372, 276)\t(200, 36)
table-cell\tDocuments\tDocuments\t\t\t(372, 312)\t(200, 36)
table-cell\tDownloads\tDownloads\t\t\t(372, 348)\t(200, 36)
table-cell\tTrash\tTrash\t\t\t(372, 420)\t(200, 36)
icon\tDesktop\tDesktop\t\t\t(620, 240)\t(96, 96)
icon\tDocuments\tDocuments\t\t\t(740, 240)\t(96, 96)
icon\tDownloads\tDownloads\t\t\t(860, 240)\t(96, 96)
icon\tbudget-2025.xlsx\tbudget-2025.xlsx\t\t\t(980, 240)\t(96, 96)
icon\tnotes.txt\tnotes.txt\t\t\t(1100, 240)\t(96, 96)
"""


def py(value: Any) -> str:
    """A Python literal: strings in double quotes (`"hello"`), numbers as they are."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)


def _point(words: list[str], name: str) -> str:
    if not words:
        return ""
    if len(words) != 2:
        raise ActionError(f"`{name}` takes a screen position: `{name} X Y`.", ACTION_HELP)
    x, y = (parse_int(word, "A screen coordinate", ACTION_HELP) for word in words)
    return f"{x}, {y}"


_POINTER = {"click": "click", "double_click": "doubleClick", "doubleclick": "doubleClick",
            "right_click": "rightClick", "rightclick": "rightClick", "move": "moveTo", "drag": "dragTo"}
SHORTCUT_WORDS = frozenset({*_POINTER, "type", "press", "hotkey", "scroll", "wait", "done", "fail"})
# Nodes of an expression that does nothing (`scroll -3`, `wait`): the shortcut is meant.
_INERT = (ast.Module, ast.Expr, ast.Name, ast.Constant, ast.UnaryOp, ast.BinOp, ast.unaryop, ast.operator, ast.expr_context)


def _shortcut(word: str, words: list[str]) -> str | None:
    """The pyautogui code for a friendly shortcut, or None when `word` is not one."""
    pointer = _POINTER
    if word in pointer:
        if word in ("move", "drag") and not words:
            raise ActionError(f"`{word}` needs a screen position: `{word} X Y`.", ACTION_HELP)
        return f"pyautogui.{pointer[word]}({_point(words, word)})"
    if word == "type":
        if not words:
            raise ActionError('`type` needs the text: `type "hello"`.', ACTION_HELP)
        return f"pyautogui.write({py(' '.join(words))})"  # the official action space's name
    if word in ("press", "hotkey"):
        if not words:
            raise ActionError(f"`{word}` needs keys: `press enter`, `hotkey ctrl c`.", ACTION_HELP)
        if word == "press" and len(words) == 1:
            return f"pyautogui.press({py(words[0].lower())})"
        return f"pyautogui.hotkey({', '.join(py(key.lower()) for key in words)})"
    if word == "scroll":
        if words and words[0].lower() in ("up", "down"):
            clicks = parse_int(words[1], "The scroll amount", ACTION_HELP) if len(words) > 1 else SCROLL_CLICKS
            return f"pyautogui.scroll({clicks if words[0].lower() == 'up' else -clicks})"
        if len(words) != 1:
            raise ActionError("Use `scroll up`, `scroll down 3` or `scroll -3`.", ACTION_HELP)
        return f"pyautogui.scroll({parse_int(words[0], 'The scroll amount', ACTION_HELP)})"
    if word in ("wait", "done", "fail") and not words:
        return word.upper()
    return None


def check_python(code: str) -> None:
    """Refuse code that does not parse; never run it."""
    if not check_python_module(code, ACTION_HELP):
        raise ActionError("The code has no statement to run (only comments or blank lines).", ACTION_HELP)


def _python_or_none(code: str) -> ast.Module | None:
    try:
        tree = parse_python(code, ACTION_HELP)
    except ActionError:
        return None
    assert isinstance(tree, ast.Module)
    return tree if tree.body else None


def _means_shortcut(code: str) -> bool:
    """A one-line shortcut (`click 200 300`) rather than Python.

    Python comes first: only a line whose first word is a shortcut word and that is not
    Python doing something (a call, an assignment) is a shortcut. So `print('a b')` and
    `type(x)` stay Python, and `scroll -3` (valid Python that does nothing) scrolls.
    """
    first = code.split(None, 1)[0].lower()
    if "\n" in code or first not in SHORTCUT_WORDS:
        return False
    tree = _python_or_none(code)
    return tree is None or all(isinstance(node, _INERT) for node in ast.walk(tree))


class OSDomain(ToollessDomain):
    name = "os"
    title = "Desktop OS (pyautogui)"
    state_lexer = "text"
    shows_file_system = True

    ACTION_HELP = ACTION_HELP
    DEFAULT_INITIAL_STATE = DEFAULT_INITIAL_STATE

    def parse_action(self, text: str) -> Action:
        stripped = begin_action(text, ACTION_HELP)
        code = textwrap.dedent(text.strip("\n")).strip()
        if _means_shortcut(code):
            word, *more = code.split(None, 1)
            rest = more[0] if more else ""
            converted = _shortcut(word.lower(), split_words(rest, ACTION_HELP) if rest.strip() else [])
            if converted is not None:
                code = converted
        check_python(code)
        return Action(text=stripped, payload={"code": code}, prompt_text=code)

    def system_prompt(self) -> str:
        return fill_template(builtin_template(self.name))
