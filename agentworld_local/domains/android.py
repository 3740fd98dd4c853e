"""The android domain: UI actions (AndroidWorld-style JSON) in, the UI hierarchy XML out."""

from __future__ import annotations

import json
from typing import Any

from agentworld_local.domains.base import Action, ToollessDomain, action_json
from agentworld_local.domains.packs import builtin_template, fill_template
from agentworld_local.domains.syntax import begin_action, load_json, parse_int, read_int, split_words, unfence, value_text
from agentworld_local.errors import ActionError, did_you_mean

DIRECTIONS = ("up", "down", "left", "right")
GOAL_STATUSES = ("complete", "infeasible")
_TARGET = ("index", "x", "y")
# action_type -> (required fields, optional fields); a target is index, or x and y.
ACTION_TYPES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "click": ((), _TARGET),
    "double_tap": ((), _TARGET),
    "long_press": ((), _TARGET),
    "input_text": (("text",), _TARGET),
    "swipe": (("direction",), _TARGET),
    "scroll": (("direction",), _TARGET),
    "navigate_back": ((), ()),
    "navigate_home": ((), ()),
    "keyboard_enter": ((), ()),
    "open_app": (("app_name",), ()),
    "wait": ((), ()),
    "status": (("goal_status",), ()),
    "answer": (("text",), ()),
}
_TARGETED = ("click", "double_tap", "long_press")
# Other names for action types, accepted in JSON as well (normalized in the payload).
TYPE_ALIASES = {"type": "input_text", "tap": "click", "back": "navigate_back", "home": "navigate_home"}
_FIELD_ORDER = ("action_type", "text", "direction", "app_name", "goal_status", "index", "x", "y")

ACTION_HELP = (
    "Accepted forms: a shortcut (`tap 540 1200`, `tap 5` for element 5, `long_press X Y`, `type \"hi\"`, "
    "`type 5 \"hi\"`, `swipe up`, `scroll down`, `back`, `home`, `enter`, `open Settings`, `wait`, "
    "`done`, `answer \"...\"`) or a JSON action (`{\"action_type\": \"click\", \"x\": 540, \"y\": 1200}`). "
    f"Action types: {', '.join(ACTION_TYPES)}."
)

DEFAULT_INITIAL_STATE = """\
<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<hierarchy rotation="0">
  <node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.android.settings" content-desc="" clickable="false" bounds="[0,0][1080,2400]">
    <node index="0" text="Settings" resource-id="com.android.settings:id/homepage_title" class="android.widget.TextView" package="com.android.settings" content-desc="" clickable="false" bounds="[63,271][1017,427]" />
    <node index="1" text="Search settings" resource-id="com.android.settings:id/search_action_bar" class="android.widget.TextView" package="com.android.settings" content-desc="" clickable="true" bounds="[42,490][1038,637]" />
    <node index="2" text="" resource-id="com.android.settings:id/recycler_view" class="androidx.recyclerview.widget.RecyclerView" package="com.android.settings" content-desc="" clickable="false" bounds="[0,679][1080,2337]">
      <node index="0" text="Network &amp; internet" resource-id="android:id/title" class="android.widget.TextView" package="com.android.settings" content-desc="" clickable="true" bounds="[189,721][640,779]" />
      <node index="1" text="Connected devices" resource-id="android:id/title" class="android.widget.TextView" package="com.android.settings" content-desc="" clickable="true" bounds="[189,931][598,989]" />
      <node index="2" text="Apps" resource-id="android:id/title" class="android.widget.TextView" package="com.android.settings" content-desc="" clickable="true" bounds="[189,1141][301,1199]" />
      <node index="3" text="Notifications" resource-id="android:id/title" class="android.widget.TextView" package="com.android.settings" content-desc="" clickable="true" bounds="[189,1351][478,1409]" />
      <node index="4" text="Battery" resource-id="android:id/title" class="android.widget.TextView" package="com.android.settings" content-desc="" clickable="true" bounds="[189,1561][357,1619]" />
      <node index="5" text="Display" resource-id="android:id/title" class="android.widget.TextView" package="com.android.settings" content-desc="" clickable="true" bounds="[189,1771][352,1829]" />
    </node>
  </node>
</hierarchy>
"""


def _error(message: str) -> ActionError:
    return ActionError(message, ACTION_HELP)


def _non_negative_int(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _error(f"`{field}` must be a whole number >= 0, not {value_text(json.dumps(value, ensure_ascii=False))}.")
    return value


def validate(raw: Any) -> dict[str, Any]:
    """Check one action object and put it in canonical form (field order, alias names)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("action_type"), str):
        raise _error('A JSON action needs an "action_type", e.g. {"action_type": "navigate_back"}.')
    kind = TYPE_ALIASES.get(raw["action_type"], raw["action_type"])
    if kind not in ACTION_TYPES:
        shown = value_text(kind)
        raise _error(f"Unknown action_type `{shown}`. {did_you_mean(shown, [*ACTION_TYPES, *TYPE_ALIASES])}".rstrip())
    required, optional = ACTION_TYPES[kind]
    fields = {key: value for key, value in raw.items() if key != "action_type"}
    unknown = [key for key in fields if key not in required + optional]
    if unknown:
        allowed = ", ".join(required + optional) or "no other fields"
        named = value_text(", ".join(f"`{k}`" for k in unknown), 120)
        raise _error(f"`{kind}` does not take {named} (it takes: {allowed}).")
    missing = [key for key in required if key not in fields]
    if missing:
        raise _error(f"`{kind}` needs {', '.join(f'`{k}`' for k in missing)}.")
    for key in ("index", "x", "y"):
        if key in fields:
            fields[key] = _non_negative_int(fields[key], key)
    if ("x" in fields) != ("y" in fields):
        raise _error(f"`{kind}`: give both `x` and `y`, or an element `index`.")
    if "index" in fields and "x" in fields:
        raise _error(f"`{kind}`: give either an element `index` or `x` and `y`, not both.")
    if kind in _TARGETED and not fields:
        raise _error(f"`{kind}` needs a target: an element `index`, or `x` and `y`.")
    for key in ("text", "app_name"):
        if key in fields and not isinstance(fields[key], str):
            raise _error(f"`{key}` must be text.")
    if "direction" in fields and (not isinstance(fields["direction"], str) or fields["direction"] not in DIRECTIONS):
        raise _error(f"`direction` must be one of {', '.join(DIRECTIONS)}.")
    if "goal_status" in fields and (not isinstance(fields["goal_status"], str) or fields["goal_status"] not in GOAL_STATUSES):
        raise _error(f"`goal_status` must be one of {', '.join(GOAL_STATUSES)}.")
    fields["action_type"] = kind
    return {key: fields[key] for key in _FIELD_ORDER if key in fields}


def _target(words: list[str], name: str) -> dict[str, Any]:
    numbers = [parse_int(word, "A position or element index", ACTION_HELP) for word in words]
    if len(numbers) == 1:
        return {"index": numbers[0]}
    if len(numbers) == 2:
        return {"x": numbers[0], "y": numbers[1]}
    if not numbers:
        return {}
    raise _error(f"`{name}` takes `X Y` or an element index.")


def _friendly(text: str) -> dict[str, Any]:
    word, _, rest = text.partition(" ")
    word, rest = word.lower(), rest.strip()
    words = split_words(rest, ACTION_HELP) if rest else []
    simple = {"back": "navigate_back", "home": "navigate_home", "enter": "keyboard_enter", "wait": "wait"}
    if word in simple and not words:
        return {"action_type": simple[word]}
    if word in ("tap", "click", "double_tap", "long_press", "long"):
        kind = {"tap": "click", "long": "long_press"}.get(word, word)
        return {"action_type": kind, **_target(words, word)}
    if word == "type":
        index = read_int(words[0]) if len(words) >= 2 else None
        if index is not None and index >= 0:
            return {"action_type": "input_text", "index": index, "text": " ".join(words[1:])}
        return {"action_type": "input_text", "text": " ".join(words)}
    if word in ("swipe", "scroll"):
        if not words:
            raise _error(f"`{word}` needs a direction: `{word} up`.")
        return {"action_type": word, "direction": words[0].lower(), **_target(words[1:], word)}
    if word == "open":
        return {"action_type": "open_app", "app_name": " ".join(words)} if words else {"action_type": "open_app"}
    if word in ("done", "infeasible") and not words:
        return {"action_type": "status", "goal_status": "complete" if word == "done" else "infeasible"}
    if word == "answer":
        return {"action_type": "answer", "text": " ".join(words)}
    friendly = ["tap", "long_press", "type", "swipe", "scroll", "back", "home", "open", "wait"]
    shown = value_text(word)
    raise _error(f"Unknown android action `{shown}`. {did_you_mean(shown, friendly)}".rstrip())


class AndroidDomain(ToollessDomain):
    name = "android"
    title = "Android phone"
    state_lexer = "xml"

    ACTION_HELP = ACTION_HELP
    DEFAULT_INITIAL_STATE = DEFAULT_INITIAL_STATE

    def parse_action(self, text: str) -> Action:
        stripped = begin_action(text, ACTION_HELP)
        body = unfence(stripped, ACTION_HELP)
        raw = load_json(body, ACTION_HELP) if body.startswith(("{", "[")) else _friendly(body)
        payload = validate(raw)
        return Action(text=stripped, payload=payload, prompt_text=action_json(payload))

    def system_prompt(self) -> str:
        # The official template lists no action space: the JSON action speaks for itself.
        return fill_template(builtin_template(self.name))
