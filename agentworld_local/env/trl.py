"""A domain or scenario as a TRL environment: `GRPOTrainer(environment_factory=...)` over `awl serve`.

    Env = environment_factory("disk-full-server", base_url="http://127.0.0.1:8760")
    GRPOTrainer(model=..., reward_funcs=episode_reward, train_dataset=rows, environment_factory=Env)

TRL makes one instance per rollout (pooled and reset between batches), calls `reset(**row)`
with the dataset row, offers the instance's public methods to the policy as tools (name, type
hints and Google-style docstring make each tool's schema, read by transformers'
`get_json_schema`) and scores rollouts with reward functions that read the instances.

Each instance is one session on a running `awl serve`: the server holds the one world model
every instance shares (a model loaded per instance would be loaded once per rollout, and
beside the policy being trained), and every tool call is one turn of that session, saved in
the server's folder. The tools are the domain's own actions, one method each: the terminal's
shell command, BrowserGym's `click(bid)` or `fill(bid, value)`, a tool server's tools from
their JSON schemas. A method writes its arguments as the domain's raw action text, so the
file reads as if an agent had typed it. `reward` sums what the server's reward hook
(`awl serve --reward ...`) gave this episode's turns; `done` is the domain's own ending, after
which a tool call changes nothing (docs/trl.md). `environment_factory(..., shared_world=NAME)`
puts every rollout in one shared world: the same seed and actions meet the same observations.
"""

from __future__ import annotations

import inspect
import json
import keyword
import math
import re
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import reduce
from operator import or_
from typing import Any, Literal

from agentworld_local.domains import get_domain
from agentworld_local.domains.android import ACTION_TYPES, DIRECTIONS, GOAL_STATUSES
from agentworld_local.domains.base import Domain
from agentworld_local.domains.os import SCREEN, py
from agentworld_local.domains.terminal import DEFAULT_DURATION
from agentworld_local.domains.tools import ToolCallDomain
from agentworld_local.domains.web import ACTIONS as WEB_ACTIONS
from agentworld_local.domains.web import Param, canonical_call
from agentworld_local.env.client import ServerClient
from agentworld_local.env.ids import EnvId, resolve_env
from agentworld_local.errors import ActionError, AwlError, InputError, refuse_unknown
from agentworld_local.scenarios import load_scenario, scenario_by_name, unknown_scenario_name
from agentworld_local.worlds.names import check_world_name

#: What every session of a class may set (the server's `POST /sessions` fields).
SESSION_OPTIONS = ("task", "initial_state", "controls", "think", "seed", "temperature", "max_tokens", "reward",
                   "shared_world")
#: What `reset(**row)` reads from a dataset row; every other field (TRL's `prompt`...) is ignored.
ROW_FIELDS = ("task", "initial_state", "controls", "seed", "scenario", "domain")
#: What a tool call answers once the episode is over (nothing is sent to the server).
EPISODE_OVER = "The episode is over: the task was ended. No further action is taken."
#: TRL's own names, and the instances' attributes: a tool by one of these names is renamed.
_TAKEN = frozenset({"reset", "get_reward", "session", "trajectory", "observation", "rewards", "reward", "done",
                    "turns", "failure"})
_WEB_REQUIRED = Param("", "str").default  # web.py's "no default" marker


@dataclass(frozen=True)
class _Arg:
    name: str  # the Python parameter
    key: str  # the argument's name in the action (a tool's may not be an identifier)
    annotation: Any
    description: str
    required: bool = True


@dataclass(frozen=True)
class _Tool:
    name: str
    description: str
    args: tuple[_Arg, ...]
    #: The arguments given (None ones left out) -> the domain's raw action text.
    action: Callable[[dict[str, Any]], str]


class AgentWorldEnv:
    """One rollout's session on `awl serve`. `environment_factory` makes the subclasses: their
    public methods are the world's tools, so this class has no other public method but reset."""

    _client: ServerClient
    _world: dict[str, str]  # {"domain": ...} or {"scenario": ...}
    _options: dict[str, Any]
    _domain: Domain
    _env_id: EnvId
    _instances: weakref.WeakSet[AgentWorldEnv]

    def __init__(self) -> None:
        # Plain attributes, never properties: TRL before 1.10 reads every attribute of an instance.
        self.session: str | None = None  # the session's id on the server
        self.trajectory: str | None = None  # its file, in the server's folder
        self.observation = ""
        self.rewards: list[float] = []  # what each turn earned, in order
        self.reward = 0.0  # their sum: the episode's return
        self.done = False
        self.turns = 0
        #: Why a turn of this episode failed on the server (a broken reward, a closed session), else None.
        self.failure: str | None = None
        self._instances.add(self)

    def reset(self, **row: Any) -> str | None:
        """Start a new episode: close the last session (saved) and open a new one on the server.

        `row`: the dataset row TRL passes; `task`, `initial_state`, `controls` and `seed` set
        this episode (None or absent: the class's), `scenario` picks another world of the same
        domain and tools, `domain` must be the class's; other fields are ignored. Returns what
        TRL appends to the row's last prompt message: the starting observation (None when the
        world starts empty); for a row without a `prompt`, the task before it.
        """
        world, episode, task = self._episode(row)
        self._close()
        self.rewards, self.reward, self.done, self.turns, self.failure = [], 0.0, False, 0, None
        opened = self._client.create(**world, **{**self._options, **episode})
        self.session, self.trajectory, self.observation = opened["id"], opened["file"], opened["observation"]
        parts = [self.observation] if "prompt" in row else [task, self.observation]
        text = "\n\n".join(part for part in parts if part and part.strip())
        if not text:
            return None
        return "\n\n" + text if "prompt" in row else text  # TRL joins it to the prompt without a space

    # -- one turn --------------------------------------------------------------------------

    def _act(self, action: str) -> str:
        """One turn with the raw action text; its observation (or why there was none) comes back."""
        if self.session is None:
            if self.done:
                return EPISODE_OVER
            raise InputError("No session is open.", "Call reset() first (TRL does before each rollout).")
        try:
            self._domain.parse_action(action)  # the server would refuse it alike: no round trip
            done = self._client.step(self.session, action)
        except ActionError as error:  # no turn: the policy reads why, as from the env
            return f"Invalid action: {error.message}"
        except AwlError as error:  # TRL shows the policy the error; episode_reward leaves the rollout unscored
            self.failure = error.message
            self._follow_the_server()  # a turn whose reward failed is saved: the episode is where the file is
            raise
        self.rewards.append(float(done.get("reward") or 0.0))
        self.reward = math.fsum(self.rewards)
        self.observation, self.turns = done["observation"], done["turn"]
        if done["terminated"]:
            self.done = True
            self._close()  # frees the server's place at once; the file keeps every turn
        return self.observation

    def _follow_the_server(self) -> None:
        """Where the session is, as the server says (its runner's view), after a step that failed."""
        if self.session is None:
            return
        try:
            state = self._client.state(self.session)
        except AwlError:
            return  # closed or unreachable: the failure is what the policy is shown
        self.observation, self.turns = state.get("observation", self.observation), state.get("turns", self.turns)

    def _close(self) -> None:
        sid, self.session = self.session, None
        if sid is not None:
            try:
                self._client.close_session(sid)
            except InputError:
                pass  # closed already (the server's idle limit): every turn is saved either way

    def _episode(self, row: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any], str]:
        """The world, the session options and the task of the episode a row asks for."""
        given = {key: row[key] for key in ROW_FIELDS if row.get(key) is not None}
        world, mine = dict(self._world), self._env_id
        if "domain" in given and given["domain"] != mine.domain:
            raise _other_world(f"domain `{given['domain']}`", mine)
        if "scenario" in given and given["scenario"] != world.get("scenario"):
            asked = scenario_by_name(given["scenario"])  # by name only, as on every face: never a file
            tools = get_domain(asked.domain, tools=asked.tools).tools() if asked.domain == mine.domain else None
            if tools != self._domain.tools():
                raise _other_world(f"scenario `{asked.name}`", mine)
            world = {"scenario": asked.name}
        episode = {key: given[key] for key in ("task", "initial_state", "controls", "seed") if key in given}
        task = episode.get("task") or self._options.get("task") or (
            load_scenario(world["scenario"]).task if "scenario" in world else "")
        return world, episode, str(task or "")


def environment_factory(world: str = "terminal", *, base_url: str | None = None, token: str | None = None,
                        timeout: float = 600.0, owns_reward: bool = False, **session: Any) -> type[AgentWorldEnv]:
    """A class for `GRPOTrainer(environment_factory=...)`: one session of `world` per instance.

    `world`: an env id, a domain or a scenario name (`agentworld/Web-v0`, `terminal`,
    `disk-full-server`). `base_url`: a running `awl serve` (its `--reward` scores the turns);
    `token`: its bearer token. `session`: every session's options (task, initial_state,
    controls, think, seed, temperature, max_tokens; `reward=False` turns the server's reward
    off; `shared_world="grpo-1"` puts every rollout in that shared world, so a group's rollouts
    that take the same actions meet the same observations). `owns_reward`: the class gets `get_reward()` (the episode's `reward`), which TRL 1.10
    and later take as a reward source of its own; leave it off when a reward function of yours
    reads `env.reward`, or the reward counts twice (and before 1.10 it would be a tool).
    """
    own = ("base_url", "token", "timeout", "owns_reward")  # first: `base_ur=` is told `base_url`
    refuse_unknown(session, SESSION_OPTIONS, "a TRL environment", also=own, shown=f"{', '.join(own)}, ")
    if not base_url:
        raise InputError("A TRL environment runs its rollouts as sessions of `awl serve`: it needs base_url.",
                         "Start `awl serve --model ... --reward ...` and pass base_url='http://127.0.0.1:8760'.")
    if session.get("shared_world") is not None:  # by name only, never a path: said before any rollout
        session["shared_world"] = check_world_name(session["shared_world"])
    if isinstance(world, str) and world.strip().endswith(".toml"):  # a server opens scenarios by name only
        raise unknown_scenario_name(world, [])
    chosen = resolve_env(world)
    domain = get_domain(chosen.domain, tools=_scenario_tools(chosen))
    owner = re.sub(r"-v\d+$", "", chosen.id.partition("/")[2]) + "Env"  # TRL names an env's reward after its class
    namespace: dict[str, Any] = {
        "__module__": __name__, "__doc__": f"The {chosen.id} world over awl serve at {base_url}: its tools are its methods.",
        "_client": ServerClient(base_url, token=token, timeout=timeout), "_domain": domain, "_env_id": chosen,
        "_world": {"scenario": chosen.scenario} if chosen.scenario else {"domain": chosen.domain},
        "_options": {key: value for key, value in session.items() if value is not None}, "_instances": weakref.WeakSet(),
    }
    taken = set(dir(AgentWorldEnv)) | _TAKEN
    for tool in _tools_of(domain):
        name = _free(_identifier(tool.name.lstrip("_"), "tool_"), taken)  # TRL hides a method named `_...`
        namespace[name] = _method(tool, name, owner)
    return type(owner, (AgentWorldEnv, _OwnsReward) if owns_reward else (AgentWorldEnv,), namespace)


def episode_reward(environments: list[AgentWorldEnv], **_: Any) -> list[float | None]:
    """A TRL reward function: each rollout's `reward`, or None (TRL leaves it unscored) for a
    rollout whose server failed during a turn, so a broken reward never trains on silent zeros."""
    return [None if env.failure else env.reward for env in environments]


def close_environments(env_class: type[AgentWorldEnv]) -> list[str]:
    """Close the open session of every instance of `env_class` (each saved) and its connections.
    TRL never closes an environment: call this when training ends, also when it fails (a
    `finally:`), or the sessions wait on the server for its idle limit. One session the server
    could not close (it is gone, or failed) does not keep the others open: their ids come back,
    and the server's idle limit closes them (every turn is saved either way)."""
    left = []
    try:
        for instance in list(env_class._instances):
            sid = instance.session
            try:
                instance._close()
            except AwlError:
                left.append(str(sid))
    finally:
        env_class._client.close()
    return left


class _OwnsReward:
    """TRL 1.10 and later score a rollout with its environment's `get_reward()`."""

    def get_reward(self) -> float | None:
        """The episode's return, or None (unscored) when its server failed during a turn."""
        return episode_reward([self])[0]  # type: ignore[list-item]


def _other_world(what: str, mine: EnvId) -> InputError:
    return InputError(f"The dataset row asks for {what}, but this class is {mine.id}: its tools are another world's.",
                      "Make one class per world and give TRL a dict environment_factory={name: class} with an "
                      "`environment` column, or drop the field.")


def _scenario_tools(chosen: EnvId) -> list[dict[str, Any]] | None:
    return load_scenario(chosen.scenario).tools if chosen.scenario else None


# -- methods with real signatures ------------------------------------------------------------


def _method(tool: _Tool, name: str, owner: str) -> Callable[..., str]:
    """A method whose signature, annotations and docstring are the tool's, as TRL reads them."""
    args = sorted(tool.args, key=lambda arg: not arg.required)  # Python puts required parameters first
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    signature = inspect.Signature(
        [inspect.Parameter("self", positional)]
        + [inspect.Parameter(arg.name, positional, annotation=arg.annotation,
                             default=inspect.Parameter.empty if arg.required else None) for arg in args],
        return_annotation=str)
    keys = {arg.name: arg.key for arg in args}

    def call(self: AgentWorldEnv, *given: Any, **named: Any) -> str:
        bound = signature.bind(self, *given, **named)  # a wrong call is a TypeError, which TRL shows the policy
        arguments = {keys[key]: value for key, value in bound.arguments.items() if key != "self" and value is not None}
        return self._act(tool.action(arguments))

    call.__name__, call.__qualname__ = name, f"{owner}.{name}"  # TRL finds a tool by its __name__
    call.__signature__ = signature  # type: ignore[attr-defined]
    call.__annotations__ = {**{arg.name: arg.annotation for arg in args}, "return": str}
    call.__doc__ = _docstring(tool.description or f"Call the `{tool.name}` tool.", args)
    return call


def _docstring(description: str, args: list[_Arg]) -> str:
    """Google style, as transformers' get_json_schema parses it: every argument under `Args:`."""
    lines = [_one_line(description), ""]
    if args:
        lines += ["Args:", *(f"    {arg.name}: {_one_line(arg.description)}" for arg in args), ""]
    return "\n".join([*lines, "Returns:", "    What the environment shows after the action."])


def _one_line(text: str) -> str:
    # A section word inside a description would end the description early when it is parsed.
    return re.sub(r"\b(Args|Returns|Raises):", r"\1 -", " ".join(text.split()))


def _identifier(name: str, prefix: str) -> str:
    """`name` as an ASCII Python identifier (after `prefix` when it is empty or starts with a digit)."""
    cleaned = re.sub(r"[^0-9A-Za-z_]", "_", name)
    cleaned = f"{prefix}{cleaned}" if not cleaned or cleaned[0].isdigit() else cleaned
    return f"{cleaned}_" if keyword.iskeyword(cleaned) else cleaned


def _free(name: str, taken: set[str]) -> str:
    """`name`, or `name_tool` (then `name_tool2`...) where it is taken already; now taken."""
    chosen, number = name, 1
    while chosen in taken:
        chosen, number = f"{name}_tool{number if number > 1 else ''}", number + 1
    taken.add(chosen)
    return chosen


# -- each domain's tools ---------------------------------------------------------------------


def _tools_of(domain: Domain) -> list[_Tool]:
    """The domain's actions as tools, each with what its arguments mean and its raw action text."""
    if isinstance(domain, ToolCallDomain):
        return [_call_tool(spec.name, spec.description, spec.properties, set(spec.required)) for spec in domain.specs]
    builders = {"terminal": _terminal_tools, "web": _web_tools, "os": _os_tools, "android": _android_tools}
    if domain.name not in builders:
        raise InputError(f"The {domain.name} domain has no TRL tools yet.", f"Use one of: {', '.join(builders)}, mcp, swe, search.")
    return builders[domain.name](domain)


def _call_tool(name: str, description: str, properties: dict[str, Any], required: set[str]) -> _Tool:
    taken = {"self"}  # the method's own first parameter
    args = tuple(_Arg(_free(_identifier(key, "arg_"), taken), key, _annotation(schema), _described(key, schema), key in required)
                 for key, schema in properties.items())
    return _Tool(name, description, args, lambda given: json.dumps({"name": name, "arguments": given}, ensure_ascii=False))


_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict,
                               "null": type(None)}


def _annotation(schema: dict[str, Any]) -> Any:
    """The Python type of a JSON schema, as get_json_schema turns it back (Literal for an enum)."""
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(value, (str, int, float, bool)) for value in enum):
        return Literal[tuple(enum)]
    kinds = schema.get("type")
    found = []
    for kind in [kinds] if isinstance(kinds, str) else list(kinds or []):
        if kind == "array":
            items = schema.get("items")
            typed = isinstance(items, dict) and bool(items.get("type") or items.get("enum"))
            found.append(list[_annotation(items)] if typed else list)  # type: ignore[arg-type]
        elif kind in _JSON_TYPES:
            found.append(_JSON_TYPES[kind])
    return reduce(or_, found) if found else Any


def _described(key: str, schema: dict[str, Any]) -> str:
    text = str(schema.get("description") or schema.get("title") or f"The {re.sub(r'[_-]+', ' ', key)}.")
    if "default" in schema:
        text = f"{text.rstrip('.')} (default {json.dumps(schema['default'], ensure_ascii=False)})."
    return text


def _terminal_tools(domain: Domain) -> list[_Tool]:
    def shell(given: dict[str, Any]) -> str:
        command = str(given["command"])
        keystrokes = [{"keystrokes": command.rstrip("\r\n") + "\n", "duration": DEFAULT_DURATION}]
        try:
            if domain.parse_action(command).payload == keystrokes:
                return command  # the plain form reads best in the file
        except ActionError:
            pass
        return json.dumps(keystrokes, ensure_ascii=False)

    def keys(given: dict[str, Any]) -> str:
        return json.dumps([{"keystrokes": given["keystrokes"], "duration": given.get("duration", DEFAULT_DURATION)}],
                          ensure_ascii=False)

    return [
        _Tool("run_shell_command", "Type a shell command in the terminal and press Enter; returns the screen after it.",
              (_Arg("command", "command", str, "The command line, e.g. `ls -la /var/log`."),), shell),
        _Tool("send_keystrokes", "Send keystrokes to the terminal as they are, for interactive programs (an editor, a "
              "pager, a question): text is typed, a newline presses Enter, tmux keys such as `C-c` are control keys. "
              "Empty keystrokes just wait for output.",
              (_Arg("keystrokes", "keystrokes", str, "What to send, e.g. `q`, `C-c` or `y` and a newline."),
               _Arg("duration", "duration", float, "Seconds to wait before the screen is read (default 1).", False)), keys),
        _Tool("task_complete", "Declare the task done. This ends the episode.", (), lambda given: "[]"),
    ]


_WEB_DOING = {
    "noop": "Do nothing and wait.", "mouse_move": "Move the mouse to a position.",
    "mouse_click": "Click at a position.", "mouse_dblclick": "Double-click at a position.",
    "mouse_down": "Press a mouse button at a position and hold it.", "mouse_up": "Release a mouse button at a position.",
    "scroll": "Scroll the page.", "click": "Click an element.",
    "keyboard_press": "Press a key or a key combination on the focused element.",
    "keyboard_type": "Type text into the focused element.", "fill": "Fill a field with a value, replacing what it held.",
    "hover": "Move the mouse over an element.", "tab_focus": "Switch to a browser tab.",
    "new_tab": "Open a new browser tab.", "go_back": "Go back to the previous page.",
    "go_forward": "Go forward to the next page.", "goto": "Open a URL in the current tab.",
    "tab_close": "Close the current tab.", "select_option": "Choose one or several options of a list or dropdown.",
    "send_msg_to_user": "Send a message to the user, such as the answer. This ends the episode.",
    "report_infeasible": "Report that the task cannot be done. This ends the episode.",
}
_WEB_MEANS = {
    "bid": "The element's id, e.g. `12` for `[12] button 'Search'`.", "x": "Horizontal position in pixels.",
    "y": "Vertical position in pixels.", "button": "The mouse button (default left).",
    "modifiers": 'Keys held during the click, e.g. ["Shift"] (default none).', "wait_ms": "Milliseconds (default 1000).",
    "delta_x": "Pixels to scroll right (negative: left).", "delta_y": "Pixels to scroll down (negative: up).",
    "key": "A key or combination, e.g. `Enter` or `Control+a`.", "text": "The text.", "value": "The text to enter.",
    "enable_autocomplete_menu": "Leave the field's suggestions open (default false).", "index": "The tab's index.",
    "url": "The address, e.g. `https://example.com`.", "options": "The option's text, or a list of them.",
    "reason": "Why the task cannot be done.",
}
_WEB_KINDS: dict[str, Any] = {"str": str, "number": float, "int": int, "bool": bool, "list": list[str],
                              "options": str | list[str]}


def _web_tools(domain: Domain) -> list[_Tool]:
    def tool(action: str, params: list[Param]) -> _Tool:
        args = tuple(_Arg(param.name, param.name, Literal[param.choices] if param.choices else _WEB_KINDS[param.kind],
                          _WEB_MEANS[param.name], param.default is _WEB_REQUIRED) for param in params)
        return _Tool(action, _WEB_DOING[action], args, lambda given: canonical_call(action, given))

    return [tool(action, params) for action, params in WEB_ACTIONS.items()]


def _os_tools(domain: Domain) -> list[_Tool]:
    width, height = SCREEN
    point = (_Arg("x", "x", int, f"Horizontal screen position in pixels (0 to {width - 1})."),
             _Arg("y", "y", int, f"Vertical screen position in pixels (0 to {height - 1})."))

    def call(function: str, *names: str) -> Callable[[dict[str, Any]], str]:
        return lambda given: f"pyautogui.{function}({', '.join(py(given[name]) for name in names)})"

    def hotkey(given: dict[str, Any]) -> str:
        keys = given["keys"] if isinstance(given["keys"], list) else str(given["keys"]).split()
        return f"pyautogui.hotkey({', '.join(py(key) for key in keys)})"

    pointer = [("click", "click", "Click"), ("double_click", "doubleClick", "Double-click"),
               ("right_click", "rightClick", "Right-click"), ("move_to", "moveTo", "Move the mouse")]
    return [
        _Tool("run_python", "Run Python code on the desktop: pyautogui calls such as `pyautogui.click(200, 300)`, "
              "several lines allowed.", (_Arg("code", "code", str, "The code."),), lambda given: str(given["code"])),
        *(_Tool(name, f"{doing} at a screen position.", point, call(function, "x", "y")) for name, function, doing in pointer),
        _Tool("drag_to", "Drag with the mouse from where it is to a screen position.", point, call("dragTo", "x", "y")),
        _Tool("type_text", "Type text with the keyboard.", (_Arg("text", "text", str, "The text to type."),),
              call("write", "text")),
        _Tool("press", "Press one key.", (_Arg("key", "key", str, "The key, e.g. `enter`, `tab` or `esc`."),),
              call("press", "key")),
        _Tool("hotkey", "Press keys together, e.g. ctrl and c.",
              (_Arg("keys", "keys", list[str], 'The keys in order, e.g. ["ctrl", "c"].'),), hotkey),
        _Tool("scroll", "Scroll the mouse wheel.", (_Arg("clicks", "clicks", int, "Clicks: positive up, negative down."),),
              call("scroll", "clicks")),
        _Tool("wait", "Wait a moment for the screen to change.", (), lambda given: "WAIT"),
        # OSWorld's DONE and FAIL, named as the terminal's ending (`done` is the instances' attribute).
        _Tool("task_complete", "Declare the task done. This ends the episode.", (), lambda given: "DONE"),
        _Tool("task_infeasible", "Declare that the task cannot be done. This ends the episode.", (), lambda given: "FAIL"),
    ]


_ANDROID_DOING = {
    "click": "Tap an element (its index) or a screen position (x and y).",
    "double_tap": "Double-tap an element (its index) or a screen position (x and y).",
    "long_press": "Press and hold an element (its index) or a screen position (x and y).",
    "input_text": "Type text into the focused field, or into the element or position given.",
    "swipe": "Swipe across the screen, or from an element or position, in a direction.",
    "scroll": "Scroll the screen, or an element or position, in a direction.",
    "navigate_back": "Press Back.", "navigate_home": "Press Home.", "keyboard_enter": "Press Enter on the keyboard.",
    "open_app": "Open an app by its name.", "wait": "Wait for the screen to change.",
    "status": "End the task: complete when it is done, infeasible when it cannot be done. This ends the episode.",
    "answer": "Answer the user's question.",
}
_ANDROID_MEANS: dict[str, tuple[Any, str]] = {
    "text": (str, "The text."), "direction": (Literal[DIRECTIONS], "The direction."),
    "app_name": (str, "The app's name, e.g. `Settings`."), "goal_status": (Literal[GOAL_STATUSES], "How the task ended."),
    "index": (int, "The element's index on the screen."), "x": (int, "Horizontal screen position in pixels."),
    "y": (int, "Vertical screen position in pixels."),
}


def _android_tools(domain: Domain) -> list[_Tool]:
    def tool(kind: str, required: Iterable[str], optional: Iterable[str]) -> _Tool:
        args = tuple(_Arg(name, name, *_ANDROID_MEANS[name], name in required) for name in (*required, *optional))
        return _Tool(kind, _ANDROID_DOING[kind], args,
                     lambda given: json.dumps({"action_type": kind, **given}, ensure_ascii=False))

    return [tool(kind, required, optional) for kind, (required, optional) in ACTION_TYPES.items()]
