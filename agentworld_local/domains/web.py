"""The web domain: BrowserGym actions in, the next page (accessibility tree or HTML) out.

Raw actions such as `click('12')` are read with Python's `ast` and never evaluated; the
prompt always receives the canonical BrowserGym call, whichever form the user typed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from agentworld_local.domains.base import Action, ToollessDomain
from agentworld_local.domains.packs import builtin_template, fill_template
from agentworld_local.domains.syntax import (
    begin_action,
    normalize_url,
    parse_int,
    python_call,
    read_int,
    read_number,
    split_words,
    value_text,
)
from agentworld_local.errors import ActionError, did_you_mean

_REQUIRED = object()
_BID = re.compile(r"^\[?([A-Za-z]{0,3}\d+)\]?$")  # BrowserGym element ids: "12", "a34"; `[12]` accepted
SCROLL_STEP = 500


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # str | number | int | list | options
    default: Any = _REQUIRED
    choices: tuple[str, ...] = ()


_BID_PARAM = Param("bid", "str")
_BUTTON_PARAM = Param("button", "str", "left", ("left", "middle", "right"))
_X, _Y = Param("x", "number"), Param("y", "number")
# The 21 actions of the official template, in its order.
ACTIONS: dict[str, list[Param]] = {
    "noop": [Param("wait_ms", "number", 1000)],
    "mouse_move": [_X, _Y],
    "mouse_click": [_X, _Y, _BUTTON_PARAM],
    "mouse_dblclick": [_X, _Y, _BUTTON_PARAM],
    "mouse_down": [_X, _Y, _BUTTON_PARAM],
    "mouse_up": [_X, _Y, _BUTTON_PARAM],
    "scroll": [Param("delta_x", "number"), Param("delta_y", "number")],
    "click": [_BID_PARAM, _BUTTON_PARAM, Param("modifiers", "list", [])],
    "keyboard_press": [Param("key", "str")],
    "keyboard_type": [Param("text", "str")],
    "fill": [_BID_PARAM, Param("value", "str"), Param("enable_autocomplete_menu", "bool", False)],
    "hover": [_BID_PARAM],
    "tab_focus": [Param("index", "int")],
    "new_tab": [],
    "go_back": [],
    "go_forward": [],
    "goto": [Param("url", "str")],
    "tab_close": [],
    "select_option": [_BID_PARAM, Param("options", "options")],
    "send_msg_to_user": [Param("text", "str")],
    "report_infeasible": [Param("reason", "str")],
}
# Friendly words for actions (WebArena-style names included).
ALIASES = {
    "type": "fill", "select": "select_option", "open": "goto", "go": "goto", "back": "go_back",
    "forward": "go_forward", "wait": "noop", "send": "send_msg_to_user", "say": "send_msg_to_user",
    "answer": "send_msg_to_user", "stop": "send_msg_to_user", "tab": "tab_focus", "infeasible": "report_infeasible",
    "press": "keyboard_press", "move": "mouse_move", "double_click": "mouse_dblclick", "dblclick": "mouse_dblclick",
}
# Friendly words for BrowserGym actions outside the official 21, with the form to use instead.
_OUTSIDE = {"focus": "`click 12`", "clear": "`clear 12` (one element id)"}

ACTION_HELP = (
    "Accepted forms: a friendly action (`click 12`, `fill 5 \"hello\"`, `goto example.com`, "
    "`scroll down`, `press Enter`, `select 9 \"Blue\"`, `back`, `send \"done\"`) or a BrowserGym "
    "call (`click('12')`, `fill('5', 'hello')`, `scroll(0, 300)`). Actions: "
    + ", ".join(f"{name}({', '.join(p.name for p in params)})" for name, params in ACTIONS.items())
    + "."
)

AXTREE_STATE = """\
Tab 0 (current): Trailhead Outfitters - Hiking Boots
URL: https://shop.trailhead.example/c/hiking-boots

RootWebArea 'Trailhead Outfitters - Hiking Boots', focused
	[21] link 'Trailhead Outfitters'
	[23] searchbox 'Search products'
	[24] button 'Search'
	[27] link 'Cart (0)'
	[31] heading 'Hiking Boots'
	[33] combobox 'Sort by' value='Featured'
		[34] option 'Featured', selected=True
		[35] option 'Price: low to high', selected=False
	[41] link 'Alpine Ridge Mid GTX'
	StaticText '$149.00'
	[43] button 'Add to cart'
	[51] link 'Canyon Trail Low'
	StaticText '$89.50'
	[53] button 'Add to cart'
"""

HTML_STATE = """\
<!-- URL: https://shop.trailhead.example/c/hiking-boots -->
<html><head><title>Trailhead Outfitters - Hiking Boots</title></head>
<body>
  <header><a bid="21" href="/">Trailhead Outfitters</a>
    <form role="search"><input bid="23" type="search" placeholder="Search products"><button bid="24">Search</button></form>
    <a bid="27" href="/cart">Cart (0)</a></header>
  <main><h1 bid="31">Hiking Boots</h1>
    <select bid="33" aria-label="Sort by"><option bid="34" selected>Featured</option><option bid="35">Price: low to high</option></select>
    <article><a bid="41" href="/p/alpine-ridge-mid-gtx">Alpine Ridge Mid GTX</a><span>$149.00</span><button bid="43">Add to cart</button></article>
    <article><a bid="51" href="/p/canyon-trail-low">Canyon Trail Low</a><span>$89.50</span><button bid="53">Add to cart</button></article>
  </main>
</body></html>
"""

# state format -> (lexer for the view, default starting page)
_STATE_FORMATS = {"axtree": ("text", AXTREE_STATE), "html": ("html", HTML_STATE)}


def _unknown(word: str) -> ActionError:
    shown = value_text(word)
    return ActionError(f"Unknown web action `{shown}`. {did_you_mean(shown, [*ACTIONS, *ALIASES])}".rstrip(), ACTION_HELP)


def _convert(param: Param, value: Any, action: str) -> Any:
    if param.kind == "str":
        if isinstance(value, (int, float)) and not isinstance(value, bool) and param.name == "bid":
            return str(value)
        if isinstance(value, str) and param.choices and value not in param.choices:
            raise ActionError(
                f"`{action}`: `{param.name}` must be {', '.join(param.choices[:-1])} or {param.choices[-1]}, "
                f"not `{value_text(value)}`.",
                ACTION_HELP,
            )
        if isinstance(value, str):
            return value
    elif param.kind in ("number", "int"):
        number = (read_number(value) if param.kind == "number" else read_int(value)) if isinstance(value, str) else value
        finite = isinstance(number, int) or (isinstance(number, float) and math.isfinite(number))
        if finite and not isinstance(number, bool) and (param.kind == "number" or isinstance(number, int)):
            return number
    elif param.kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
    elif param.kind == "list" and isinstance(value, list):
        return value
    elif param.kind == "options" and (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
        return value
    raise ActionError(f"`{action}`: `{param.name}` cannot be {value_text(repr(value))}.", ACTION_HELP)


def _bind(action: str, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Match arguments to the action's parameters, as a Python call would."""
    params = ACTIONS[action]
    if len(args) > len(params):
        raise ActionError(f"`{action}` takes {len(params)} argument(s), got {len(args)}.", ACTION_HELP)
    bound = {param.name: _convert(param, value, action) for param, value in zip(params, args)}
    names = {param.name: param for param in params}
    for key, value in kwargs.items():
        if key not in names:
            raise ActionError(f"`{action}` has no argument `{key}`.", ACTION_HELP)
        if key in bound:
            raise ActionError(f"`{action}` got `{key}` twice.", ACTION_HELP)
        bound[key] = _convert(names[key], value, action)
    missing = [param.name for param in params if param.default is _REQUIRED and param.name not in bound]
    if missing:
        raise ActionError(f"`{action}` needs {', '.join(f'`{name}`' for name in missing)}.", ACTION_HELP)
    return bound


def canonical_call(action: str, args: dict[str, Any]) -> str:
    """Required arguments positional, optional ones by keyword: `click('12', button='right')`."""
    parts = []
    for param in ACTIONS[action]:
        if param.name in args:
            value = repr(args[param.name])
            parts.append(value if param.default is _REQUIRED else f"{param.name}={value}")
    return f"{action}({', '.join(parts)})"


def _friendly(text: str) -> tuple[str, list[Any]]:
    word, _, rest = text.strip().partition(" ")
    word, rest = word.lower(), rest.strip()
    words = split_words(rest, ACTION_HELP) if rest else []
    if word == "scroll" and words and words[0].lower() in ("up", "down", "left", "right"):
        amount = parse_int(words[1], "The scroll amount", ACTION_HELP) if len(words) > 1 else SCROLL_STEP
        sign = -1 if words[0].lower() in ("up", "left") else 1
        horizontal = words[0].lower() in ("left", "right")
        return "scroll", [sign * amount if horizontal else 0, 0 if horizontal else sign * amount]
    if word == "type" and not (len(words) >= 2 and _BID.match(words[0])):
        return "keyboard_type", [" ".join(words)]
    if word == "press":
        if len(words) >= 2 and _BID.match(words[0]):
            raise ActionError(
                f"The official action space presses keys on the focused element only: `click {words[0]}`, then "
                f"`press {' '.join(words[1:])}`.",
                ACTION_HELP,
            )
        return "keyboard_press", [" ".join(words)]
    if word in ("click", "double_click", "dblclick") and len(words) >= 2 and all(read_number(w) is not None for w in words[:2]):
        # Two numbers are a screen position: `click 200 300` is mouse_click(200, 300).
        return ("mouse_click" if word == "click" else "mouse_dblclick"), [read_number(w) for w in words[:2]] + words[2:]
    if word == "clear" and len(words) == 1:
        return "fill", [words[0].strip("[]"), ""]  # BrowserGym clears a field by filling it with nothing
    if word in _OUTSIDE:
        raise ActionError(f"`{word}` is not in the official action space; use {_OUTSIDE[word]}.", ACTION_HELP)
    action = ALIASES.get(word, word)
    if action not in ACTIONS:
        raise _unknown(word)
    params = ACTIONS[action]
    if params and params[0].name == "bid" and words:
        match = _BID.match(words[0])
        words[0] = match.group(1) if match else words[0]
    if action == "goto" and words:
        words = [normalize_url(" ".join(words))]
    required = [param for param in params if param.default is _REQUIRED]
    if len(words) > len(required) and required and required[-1].kind == "str" and required[-1].name != "bid":
        # The last text argument takes the rest: `fill 5 hello world`. An element id never
        # does: `click 12 right` is the button, not an element called "12 right".
        cut = len(required) - 1
        words = words[:cut] + [" ".join(words[cut:])]
    return action, words


class WebDomain(ToollessDomain):
    name = "web"
    title = "Web browser (BrowserGym)"
    state_formats = ("axtree", "html")

    def __init__(self, state_format: str = "axtree") -> None:
        self.state_format = state_format
        self.state_lexer, self.DEFAULT_INITIAL_STATE = _STATE_FORMATS[state_format]

    ACTION_HELP = ACTION_HELP

    def parse_action(self, text: str) -> Action:
        stripped = begin_action(text, ACTION_HELP)
        if re.match(r"^\w+\s*\(", stripped):
            name, args, kwargs = python_call(stripped, ACTION_HELP)
            if name not in ACTIONS:
                raise _unknown(name)
        else:
            name, args = _friendly(stripped)
            kwargs = {}
        bound = _bind(name, args, kwargs)
        payload = {"action": name, "args": bound}
        return Action(text=stripped, payload=payload, prompt_text=canonical_call(name, bound))

    def system_prompt(self) -> str:
        # The official template names no representation: the current page state shows it,
        # and the model is told to keep it (axtree or HTML alike).
        return fill_template(builtin_template(self.name))
