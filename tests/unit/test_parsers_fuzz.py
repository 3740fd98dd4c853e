"""Property tests over the action parsers and the scenario loader (issue 8).

The property: whatever the text, parsing gives a value or an AwlError, never another
exception, and never hangs. Example counts follow the profile in tests/conftest.py
(bounded by default; `pytest --hypothesis-profile=long` for a long local run).
"""

from __future__ import annotations

import json
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentworld_local.domains import domain_names, get_domain
from agentworld_local.domains.base import Action
from agentworld_local.errors import ActionError, AwlError
from agentworld_local.scenarios import Scenario, read_scenario_file

# A hang guard, not a benchmark: each example is a few hundred characters and parses in
# microseconds; only an endless or quadratic loop comes near this.
HANG_GUARD = settings(deadline=timedelta(seconds=10))

DOMAINS = {name: get_domain(name) for name in domain_names()}
# First words each domain's friendly forms know, so generated text reaches the deep paths.
FRIENDLY_WORDS = [
    "bash", "read_file", "write_file", "str_replace", "search", "run_tests", "list_directory", "open", "visit",
    "memory", "web_search", "click", "fill", "type", "press", "scroll", "goto", "select", "back", "send", "tab_focus",
    "dblclick", "hover", "noop", "double_click", "right_click", "move", "drag", "hotkey", "wait", "done", "fail",
    "tap", "long_press", "swipe", "home", "enter", "answer", "C-c", "[", "[[", "{", "```", "```json\n",
]
PIECES = st.sampled_from([
    " ", "  ", "\n", "\t", "'", '"', "\\", "=", "(", ")", "[", "]", "{", "}", ",", ":", ".", "-", "0", "007", "12",
    "1e999", "0x" + "f" * 40, "9" * 120, "right", "up", "down", "path=", "command=", "text=", "x=", "null", "true",
    "\ud800", "\0", "```", "pyautogui.", "é", "🙂",
])
FRIENDLY = st.builds(
    lambda word, parts: word + " " + "".join(parts),
    st.sampled_from(FRIENDLY_WORDS),
    st.lists(st.one_of(PIECES, st.text(max_size=8)), max_size=12),
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["name", "arguments", "keystrokes", "duration", "action_type", "x", "y", "index", "text",
                         "direction", "path", "command", "function", "parameters"]) | st.text(max_size=5),
        children, max_size=4),
    max_leaves=12,
)
JSON_TEXT = st.builds(
    lambda value, fenced: f"```json\n{value}\n```" if fenced else value,
    JSON_VALUES.map(lambda value: json.dumps(value, allow_nan=True)),
    st.booleans(),
)
CALL_NAMES = st.sampled_from(["click", "fill", "scroll", "goto", "select_option", "noop", "pyautogui.click", "print",
                              "type", "press", "tab_focus", "keyboard_type", "open", "x"])
PY_ARGS = st.lists(
    st.one_of(PIECES, st.sampled_from(["'12'", "'a b'", "1", "-3", "2.5", "[1, 2]", "button='right'", "x", "**k",
                                       "1 +", "not x", "lambda: 0", "f'{x}'", "b'x'", "...", "None",
                                       "modifiers=[{1, 2}]", "modifiers=[b'x', 1j]", "[...]", "[{(1,): 2}]"])),
    max_size=6,
)
PYTHON_TEXT = st.builds(lambda name, args: f"{name}({', '.join(args)})", CALL_NAMES, PY_ARGS)


def _parse(name: str, text: str) -> None:
    try:
        action = DOMAINS[name].parse_action(text)
    except ActionError as error:
        assert error.message and "\n" not in error.one_line()
        return
    assert isinstance(action, Action) and isinstance(action.prompt_text, str)
    json.dumps(action.payload, ensure_ascii=False).encode("utf-8")  # what the trajectory writer does


@pytest.mark.parametrize("name", domain_names())
@HANG_GUARD
@given(text=st.text())
def test_any_text_is_an_action_or_an_action_error(name, text):
    _parse(name, text)


@pytest.mark.parametrize("name", domain_names())
@HANG_GUARD
@given(text=FRIENDLY)
def test_friendly_looking_text_is_an_action_or_an_action_error(name, text):
    _parse(name, text)


@pytest.mark.parametrize("name", domain_names())
@HANG_GUARD
@given(text=JSON_TEXT)
def test_json_text_is_an_action_or_an_action_error(name, text):
    _parse(name, text)


@pytest.mark.parametrize("name", ["web", "os"])
@HANG_GUARD
@given(text=PYTHON_TEXT)
def test_python_calls_are_an_action_or_an_action_error(name, text):
    _parse(name, text)


# -- the scenario loader ------------------------------------------------------------

SCENARIO_HEAD = 'version = 1\nname = "fuzz"\ndomain = "mcp"\ntitle = "t"\ntask = "t"\ninitial_state = "s"\n'
TOML_KEYS = st.sampled_from(["version", "name", "domain", "title", "task", "initial_state", "tools", "controls",
                             "world", "description", "type", "required", "properties", "inputSchema",
                             "input_schema", "parameters", "function", "x"])
TOML_VALUES = st.sampled_from([
    "1", "0", "-1", "5", "9" * 5000, "1.5", "inf", "nan", "true", '""', '"  "', '"mcp"', '"terminal"', '"a-b"',
    "1979-05-27", "1979-05-27T07:32:00Z", "07:32:00", "[]", "[1, 2]", '["path"]', "{}", '{type = "object"}',
    '{type = "object", required = 5}', '{type = "object", properties = {p = "string"}}', "[[[[[[1]]]]]]",
    "'[{\"name\": \"x\"}]'", "'[" + "[" * 300 + "'", '"""\nmulti\n"""',
])
TOML_LINES = st.one_of(
    st.builds(lambda key, value: f"{key} = {value}", TOML_KEYS, TOML_VALUES),
    st.builds(lambda key: f"[{key}]", st.sampled_from(["tools", "tools.inputSchema", "tools.inputSchema.properties.p", "x"])),
    st.just("[[tools]]"),
    st.text(max_size=30),
)


def _load(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.toml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            scenario = read_scenario_file(path)
        except AwlError as error:
            assert "\n" not in error.one_line()
            return
        assert isinstance(scenario, Scenario)
        json.dumps(scenario.to_dict(), ensure_ascii=False)  # what `awl scenarios show --json` prints


@HANG_GUARD
@given(lines=st.lists(TOML_LINES, max_size=12))
def test_toml_ish_scenarios_load_or_are_refused_clearly(lines):
    _load("\n".join(lines) + "\n")


@HANG_GUARD
@given(lines=st.lists(TOML_LINES, max_size=8), bom=st.booleans())
def test_a_valid_head_with_random_additions_loads_or_is_refused_clearly(lines, bom):
    _load(("\ufeff" if bom else "") + SCENARIO_HEAD + "\n".join(lines) + "\n")


@HANG_GUARD
@given(text=st.text())
def test_any_text_as_a_scenario_file_loads_or_is_refused_clearly(text):
    _load(text)
