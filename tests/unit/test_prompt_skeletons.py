"""Our prompts against the structure of the official templates, and friendly forms against
the official raw forms (issue 11)."""

from __future__ import annotations

import json
import re

import pytest

from agentworld_local.domains import domain_names, get_domain
from agentworld_local.domains.packs import builtin_template
from agentworld_local.domains.search import MEMORY_OPERATIONS
from agentworld_local.domains.skeletons import JUDGE_DIMENSIONS, SKELETONS, headings, skeleton_problems
from agentworld_local.domains.web import ACTIONS


def test_every_domain_has_a_skeleton():
    assert sorted(SKELETONS) == domain_names()


@pytest.mark.parametrize("name", sorted(SKELETONS))
def test_the_template_keeps_its_placeholders_and_the_prompt_fills_them(name):
    assert skeleton_problems(name, builtin_template(name), template=True) == []
    assert skeleton_problems(name, get_domain(name).system_prompt()) == []


def test_the_checker_sees_a_missing_or_moved_section():
    prompt = get_domain("terminal").system_prompt()
    moved = prompt.replace("# Key Principles", "# Principles")
    assert "missing or out of order: # Key Principles" in skeleton_problems("terminal", moved)
    without_tags = get_domain("os").system_prompt().replace("<predicted_observation>", "<obs>")
    assert "the output tags are not named" in skeleton_problems("os", without_tags)
    assert "placeholder not filled: {tool_definitions}" in skeleton_problems("mcp", builtin_template("mcp"))


@pytest.mark.parametrize("name", [n for n, s in SKELETONS.items() if "# Key Principles" in s.headings])
def test_key_principles_name_the_five_judge_dimensions_in_order(name):
    found = [h[3:] for h in headings(get_domain(name).system_prompt()) if h[3:] in JUDGE_DIMENSIONS]
    assert found == list(JUDGE_DIMENSIONS)


def test_web_action_space_is_the_official_21_with_their_signatures():
    prompt = get_domain("web").system_prompt()
    listed = re.findall(r"^([a-z_]+)\(", prompt, re.MULTILINE)
    assert listed == list(ACTIONS) and len(listed) == 21
    for name, params in ACTIONS.items():
        line = next(line for line in prompt.splitlines() if line.startswith(f"{name}("))
        assert [p.name for p in params] == re.findall(r"(\w+)(?::|\s*=|\))", line[len(name) + 1:])[: len(params)]
    assert "enable_autocomplete_menu: bool = False" in prompt


def test_terminal_action_space_is_complete():
    prompt = get_domain("terminal").system_prompt()
    for item in ('"keystrokes"', '"duration"', "`C-c`", "`C-d`", "`C-z`", "`C-l`", "`[]`", "Empty keystrokes"):
        assert item in prompt
    assert "Task Instruction" not in prompt  # the official terminal template has no task input


def test_os_action_space_lists_pyautogui_and_the_application_helpers():
    prompt = get_domain("os").system_prompt()
    for item in ("pyautogui.click(", "pyautogui.write(", "pyautogui.hotkey(", "BrowserTools", "CalcTools",
                 "WriterTools", "ImpressTools", "VLCTools", "subprocess.run("):
        assert item in prompt
    assert "WAIT" not in prompt  # OSWorld's control words are not in the official template


def test_search_contracts_are_the_official_ones():
    search = get_domain("search")
    prompt = search.system_prompt()
    tools = {tool["name"]: tool["inputSchema"] for tool in search.tools()}
    assert set(tools["web_search"]["properties"]) == {"query", "queries"}
    assert tools["web_extractor"]["required"] == ["url"] and set(tools["web_extractor"]["properties"]) == {"url"}
    assert tools["dict_memory"]["properties"]["operation"]["enum"] == list(MEMORY_OPERATIONS)
    for operation in MEMORY_OPERATIONS:
        assert f"| `{operation}` |" in prompt
    assert "[1] https://" in prompt and "**Simulation Instruction**" in prompt


@pytest.mark.parametrize("name", ["web", "android"])
def test_web_and_android_ask_for_exactly_one_block_and_nothing_else(name):
    prompt = get_domain(name).system_prompt()
    assert prompt.rstrip().endswith("block and nothing else.")
    assert "exactly one complete, closed <predicted_observation></predicted_observation> block" in prompt


def test_os_asks_for_reasoning_first_then_the_block():
    prompt = get_domain("os").system_prompt()
    assert prompt.index("reason step by step") < prompt.index("<predicted_observation>")


# -- friendly forms give the official raw forms ------------------------------------------


def fenced(call) -> str:
    return f"```json\n{json.dumps(call, ensure_ascii=False)}\n```"


def keystrokes(items) -> str:
    return "```json\n" + json.dumps(items, indent=2) + "\n```"


OFFICIAL_RAW = [
    ("terminal", "ls -la", keystrokes([{"keystrokes": "ls -la\n", "duration": 1.0}])),
    ("terminal", "C-c", keystrokes([{"keystrokes": "C-c", "duration": 0.5}])),
    ("terminal", "[]", "```json\n[]\n```"),
    ("swe", "bash pytest -q", fenced({"name": "run_shell_command", "arguments": {"command": "pytest -q"}})),
    ("mcp", "read_file path=README.md", fenced({"name": "read_file", "arguments": {"path": "README.md"}})),
    ("search", 'search "tram lines"', fenced({"name": "web_search", "arguments": {"query": "tram lines"}})),
    ("search", "open example.org/a", fenced({"name": "web_extractor", "arguments": {"url": "https://example.org/a"}})),
    ("search", "memory add k v", fenced({"name": "dict_memory", "arguments": {"operation": "add", "dict": {"k": "v"}}})),
    ("search", "memory remove k", fenced({"name": "dict_memory", "arguments": {"operation": "remove", "key_list": ["k"]}})),
    ("web", "click 12", "click('12')"),
    ("web", 'fill 5 "hi there"', "fill('5', 'hi there')"),
    ("web", "click 100 200", "mouse_click(100, 200)"),
    ("web", "double_click 100 200", "mouse_dblclick(100, 200)"),
    ("web", "press Enter", "keyboard_press('Enter')"),
    ("web", 'type "abc"', "keyboard_type('abc')"),
    ("web", "back", "go_back()"),
    ("os", 'type "hello"', 'pyautogui.write("hello")'),
    ("os", "hotkey ctrl s", 'pyautogui.hotkey("ctrl", "s")'),
    ("android", "tap 540 1200", '{"action_type": "click", "x": 540, "y": 1200}'),
]


@pytest.mark.parametrize("name, friendly, raw", OFFICIAL_RAW)
def test_each_friendly_form_produces_the_official_raw_form(name, friendly, raw):
    domain = get_domain(name)
    assert domain.parse_action(friendly).prompt_text == raw
    assert domain.parse_action(raw).prompt_text == raw  # and the raw form reads back as itself
