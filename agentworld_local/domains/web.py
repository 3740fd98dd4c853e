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
from agentworld_local.domains.prompting import PromptSpec, compose_prompt
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
ACTIONS: dict[str, list[Param]] = {
    "click": [_BID_PARAM, _BUTTON_PARAM, Param("modifiers", "list", [])],
    "dblclick": [_BID_PARAM, _BUTTON_PARAM, Param("modifiers", "list", [])],
    "hover": [_BID_PARAM],
    "fill": [_BID_PARAM, Param("value", "str")],
    "select_option": [_BID_PARAM, Param("options", "options")],
    "clear": [_BID_PARAM],
    "focus": [_BID_PARAM],
    "press": [_BID_PARAM, Param("key_comb", "str")],
    "goto": [Param("url", "str")],
    "scroll": [Param("delta_x", "number"), Param("delta_y", "number")],
    "keyboard_type": [Param("text", "str")],
    "keyboard_press": [Param("key", "str")],
    "go_back": [],
    "go_forward": [],
    "new_tab": [],
    "tab_close": [],
    "tab_focus": [Param("index", "int")],
    "noop": [Param("wait_ms", "number", 1000)],
    "send_msg_to_user": [Param("text", "str")],
    "report_infeasible": [Param("reason", "str")],
}
# Friendly words for actions (WebArena-style names included).
ALIASES = {
    "type": "fill", "select": "select_option", "open": "goto", "go": "goto", "back": "go_back",
    "forward": "go_forward", "wait": "noop", "send": "send_msg_to_user", "say": "send_msg_to_user",
    "answer": "send_msg_to_user", "stop": "send_msg_to_user", "double_click": "dblclick",
    "dblclick": "dblclick", "tab": "tab_focus", "infeasible": "report_infeasible",
}

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

_STATE_WORDS = {
    "axtree": (
        "an accessibility tree, one element per line as `[bid] role 'name'` with properties, indented "
        "by nesting, under the open tabs and the URL",
        "text",
        AXTREE_STATE,
    ),
    "html": ("the page's HTML, where interactive elements carry `bid` attributes, after the URL", "html", HTML_STATE),
}


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
    if word == "press" and not (len(words) >= 2 and _BID.match(words[0])):
        return "keyboard_press", [" ".join(words)]
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
        self._state_words, self.state_lexer, self.DEFAULT_INITIAL_STATE = _STATE_WORDS[state_format]

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
        reference = "\n".join(
            f"- `{name}({', '.join(p.name if p.default is _REQUIRED else f'{p.name}={p.default!r}' for p in params)})`"
            for name, params in ACTIONS.items()
        )
        return compose_prompt(
            PromptSpec(
                role="Web Browser World Model",
                objective="You simulate a web browser and the websites it visits, driven by a web agent.",
                state=f"the current page as {self._state_words}.",
                action=(
                    "one BrowserGym action written as a Python call, e.g. `click('12')`, "
                    "`fill('5', 'hello')` or `goto('https://example.com')`; element ids (`bid`) "
                    "refer to the current page."
                ),
                responsibilities=[
                    "**Page prediction**: produce the whole page after the action, in the same "
                    "representation as the current state.",
                    "**Continuity**: form values, cart contents, logins, open tabs and history persist; "
                    "`go_back` returns to the previous page as it was.",
                    "**Faithful behaviour**: links navigate, buttons submit, menus expand, validation "
                    "errors appear; an action on an id that is not on the page changes nothing.",
                ],
                sections=[("Action Reference", reference)],
                state_rules=[
                    "Keep the representation of the current state: an accessibility tree stays an "
                    "accessibility tree, HTML stays HTML.",
                    "Elements that did not change keep their ids, names and order; new elements get new "
                    "ids that do not collide with existing ones.",
                    "Show the URL and the tab titles the browser would show.",
                ],
                action_rules=[
                    "The action is given; simulate it exactly, including its failure when it is invalid.",
                    "`send_msg_to_user` and `noop` leave the page as it is unless something loads meanwhile.",
                ],
            )
        )
