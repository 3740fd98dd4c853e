"""Scenarios: every bundled one loads and starts a session; user files; one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentworld_local.domains import domain_names, get_domain
from agentworld_local.domains.base import Action
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.errors import AwlError, InputError
from agentworld_local.scenarios import bundled_dir, list_scenarios, load_scenario, read_scenario_file
from agentworld_local.trajectory.reader import read_trajectory

REPO = Path(__file__).resolve().parents[2]
BUNDLED = sorted(bundled_dir().glob("*.toml"))
SEVEN = {"terminal", "swe", "mcp", "search", "web", "os", "android"}

MINIMAL = """\
version = 1
name = "cron-debugging"
domain = "terminal"
title = "A cron job that never runs"
task = "Find out why the nightly backup does not run."
initial_state = '''
admin@backup-01:~$ '''
"""


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("AWL_HOME", str(tmp_path))
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_all_seven_domains_are_registered():
    assert set(domain_names()) == SEVEN


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_every_bundled_scenario_loads_and_starts_a_session(path):
    scenario = read_scenario_file(path, origin="bundled")
    assert scenario.name == path.stem, "the file name is how `--scenario NAME` finds it"
    assert scenario.domain in domain_names()
    assert scenario.initial_state.strip() and scenario.task and scenario.title
    # What `awl run --scenario` does: the domain (with the scenario's tools) and turn 1's prompt.
    domain = get_domain(scenario.domain, tools=scenario.tools)
    world = World(None, domain, scenario.apply(SessionSettings()))  # prompts only: no model needed
    prompt = world.turn_prompt(Action(text="noop", payload=None, prompt_text="<the agent's action>"))
    assert prompt.startswith("### Turn 1") and prompt.endswith("**Action:**\n<the agent's action>")
    assert scenario.task in prompt and scenario.initial_state.strip() in prompt
    for control in scenario.controls:
        assert f"- {control}" in prompt
    if scenario.tools:
        assert [t["name"] for t in domain.tools()] == [t["name"] for t in scenario.tools]
        for tool in scenario.tools:
            assert tool["name"] in world.system_prompt()
    if scenario.world:
        assert scenario.world in world.system_prompt()


def test_bundled_set_covers_every_domain_with_the_settings_the_issue_asks_for():
    scenarios = list_scenarios()
    by_domain: dict[str, list] = {}
    for scenario in scenarios:
        by_domain.setdefault(scenario.domain, []).append(scenario)
    assert set(by_domain) == SEVEN and all(len(items) >= 2 for items in by_domain.values())
    names = {s.name: s for s in scenarios}
    # Terminal: the machine is a fact of the world; the starting state is the raw screen (official layout).
    assert "Flask" in names["python-web-app"].world and names["python-web-app"].initial_state == "dev@laptop:~/todo-api$ "
    assert "Screen:" not in names["disk-full-server"].initial_state and "nginx" in names["disk-full-server"].world
    assert "failed" in names["failing-test-suite"].initial_state
    assert len(names["notes-mcp-server"].tools) >= 4 and all("inputSchema" in t for t in names["notes-mcp-server"].tools)
    assert "Port Veyra" in names["fictional-city"].world
    assert "Cart" in names["online-shop"].initial_state and "Files" in names["desktop-file-manager"].initial_state
    assert "com.android.settings" in names["settings-app"].initial_state


def test_the_terminal_web_app_scenario_is_the_demo_setting():
    demo = read_trajectory(REPO / "assets" / "examples" / "terminal-demo.jsonl").header
    scenario = load_scenario("python-web-app")
    assert demo.scenario == scenario.ref()
    assert (demo.domain, demo.task, demo.initial_state) == (scenario.domain, scenario.task, scenario.initial_state)


def test_a_user_file_by_path_works_like_a_bundled_one(tmp_path):
    path = write(tmp_path / "elsewhere" / "my-world.toml", MINIMAL)
    scenario = load_scenario(str(path))
    assert (scenario.name, scenario.source, scenario.path) == ("cron-debugging", "file", path.resolve())
    assert scenario.initial_state == "admin@backup-01:~$ ", "a state may end without a newline (a shell prompt)"
    assert scenario.ref() == {"name": "cron-debugging", "title": "A cron job that never runs", "path": str(path.resolve())}


def test_user_dir_scenarios_are_listed_and_replace_bundled_ones_by_name(home):
    user = home / "config" / "scenarios"
    write(user / "cron.toml", MINIMAL)
    write(user / "mine.toml", MINIMAL.replace('"cron-debugging"', '"python-web-app"').replace("A cron job", "My own app"))
    scenarios = {s.name: s for s in list_scenarios(domain="terminal")}
    assert scenarios["cron-debugging"].source == "user"
    assert scenarios["python-web-app"].source == "user" and scenarios["python-web-app"].title.startswith("My own app")
    assert load_scenario("cron-debugging").source == "user"
    assert all(s.domain == "terminal" for s in scenarios.values())


def test_a_broken_user_file_is_reported_not_hiding_the_others(home):
    write(home / "config" / "scenarios" / "broken.toml", "version = 1\nname = [\n")
    with pytest.raises(InputError, match="broken.toml: not valid TOML"):
        list_scenarios()
    problems: list[AwlError] = []
    assert len(list_scenarios(problems=problems)) == len(BUNDLED)
    assert len(problems) == 1 and "broken.toml" in problems[0].one_line()


@pytest.mark.parametrize(
    ("edit", "fragments"),
    [
        (lambda t: t.replace('task = "Find out why the nightly backup does not run."\n', ""), ["field `task` is missing", "Add `task"]),
        (lambda t: t.replace('title = "A cron job that never runs"\n', ""), ["field `title` is missing"]),
        (lambda t: t.replace("initial_state = '''\nadmin@backup-01:~$ '''\n", ""), ["field `initial_state` is missing"]),
        (lambda t: t.replace("version = 1\n", ""), ["field `version` is missing", "version = 1"]),
        (lambda t: t.replace("version = 1", "version = 2"), ["field `version` is 2", "scenario format v1", "pip install -U"]),
        (lambda t: t.replace("version = 1", 'version = "1"'), ["field `version` should be a whole number"]),
        (lambda t: t.replace('"terminal"', '"termnal"'), ["unknown domain `termnal`", "Did you mean `terminal`?"]),
        (lambda t: t.replace("initial_state =", "intial_state ="), ["unknown field `intial_state`", "Did you mean `initial_state`?"]),
        (lambda t: t.replace('task = "Find', 'task = ""\n# "Find'), ["field `task` is empty"]),
        (lambda t: t + 'controls = "the disk is full"\n', ["field `controls` should be a list"]),
        (lambda t: t + '[[tools]]\nname = "x"\n', ["field `tools` is given, but the terminal domain takes no tool definitions"]),
        (lambda t: t.replace('name = "cron-debugging"', 'name = "Cron Debugging"'), ["field `name` is `Cron Debugging`"]),
        (lambda t: t.replace("version = 1\n", "version = 1\nname = [\n"), ["not valid TOML", "at line 3"]),
    ],
)
def test_bad_scenario_files_name_the_file_and_the_field(tmp_path, edit, fragments):
    path = write(tmp_path / "bad.toml", edit(MINIMAL))
    with pytest.raises(InputError) as caught:
        load_scenario(str(path))
    line = caught.value.one_line()
    assert "\n" not in line and str(path) in line
    for fragment in fragments:
        assert fragment in line, line


def test_tool_definitions_are_checked_with_the_file_named(tmp_path):
    base = MINIMAL.replace('"terminal"', '"mcp"')
    no_name = write(tmp_path / "a.toml", base + '[[tools]]\ndescription = "no name"\n')
    with pytest.raises(InputError, match=r"a\.toml: tools\[1\]: field `name` is missing"):
        load_scenario(str(no_name))
    twice = write(tmp_path / "b.toml", base + '[[tools]]\nname = "x"\n[[tools]]\nname = "x"\n')
    with pytest.raises(InputError, match=r"b\.toml: field `tools`: Tool `x` is defined twice"):
        load_scenario(str(twice))
    as_json = write(tmp_path / "c.toml", base + 'tools = \'[{"name": "ping", "inputSchema": {"type": "object"}}]\'\n')
    assert load_scenario(str(as_json)).tools == [{"name": "ping", "inputSchema": {"type": "object"}}]


def test_unknown_scenario_suggests_close_names():
    with pytest.raises(InputError) as caught:
        load_scenario("shop")
    assert "Unknown scenario `shop`" in caught.value.one_line() and "`online-shop`" in caught.value.one_line()
    with pytest.raises(InputError) as caught:
        load_scenario("setings-app")
    assert "Did you mean `settings-app`?" in caught.value.one_line()
    with pytest.raises(InputError, match="Scenario file not found"):
        load_scenario("./missing.toml")


def test_scenario_modules_import_no_ui_library():
    code = (
        "import json, sys\n"
        "import agentworld_local.scenarios, agentworld_local.agentworldbench.rows, agentworld_local.agentworldbench.resimulate\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'typer', 'click'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert json.loads(result.stdout) == []


# -- scenario tools replace same-named defaults whole (issue 7 defect 7) -----------------

CHANGED_DEFAULTS = MINIMAL.replace('"terminal"', '"mcp"') + '''
[[tools]]
name = "list_directory"
description = "List a directory of the ACME archive, oldest entries first."
[tools.inputSchema]
type = "object"
required = ["path"]
[tools.inputSchema.properties.path]
type = "string"

[[tools]]
name = "read_file"
description = "Return the complete text content of a file."
[tools.inputSchema]
type = "object"
required = ["path", "encoding"]
[tools.inputSchema.properties.path]
type = "string"
[tools.inputSchema.properties.encoding]
type = "string"

[[tools]]
name = "write_file"
[tools.inputSchema]
type = "object"
required = ["path", "content"]
[tools.inputSchema.properties.path]
type = "string"
[tools.inputSchema.properties.content]
type = "string"

[[tools]]
name = "search_files"
[tools.inputSchema]
type = "object"
required = ["pattern"]
[tools.inputSchema.properties.pattern]
type = "string"

[[tools]]
name = "get_file_info"
[tools.inputSchema]
type = "object"
required = ["path"]
[tools.inputSchema.properties.path]
type = "string"
'''


def test_scenario_tools_with_the_default_names_still_replace_the_defaults(tmp_path):
    scenario = load_scenario(str(write(tmp_path / "acme.toml", CHANGED_DEFAULTS)))
    default = get_domain("mcp")
    assert [t["name"] for t in scenario.tools] == [t["name"] for t in default.tools()]
    world = World(None, default, scenario.apply(SessionSettings()))
    assert "oldest entries first" in world.system_prompt()
    with pytest.raises(InputError, match="needs the arguments `encoding`|needs the argument `encoding`"):
        world.domain.parse_action("read_file path=README.md")
    assert world.domain.parse_action("read_file path=README.md encoding=utf-8").payload["arguments"]["encoding"] == "utf-8"


def test_identical_session_tools_keep_the_domain():
    from agentworld_local.engine.prompt_composition import with_session_tools

    default = get_domain("mcp")
    assert with_session_tools(default, default.tools()) is default
    assert with_session_tools(default, None) is default


# -- hostile scenario files (issue 8) ---------------------------------------------------


def test_a_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + MINIMAL.encode())
    assert load_scenario(str(path)).name == "cron-debugging"


def test_a_fifo_or_a_device_is_refused_at_once(tmp_path):
    import os

    fifo = tmp_path / "world.toml"
    os.mkfifo(fifo)  # reading it would block forever
    with pytest.raises(InputError, match="not a regular file"):
        load_scenario(str(fifo))
    with pytest.raises(InputError, match="not a regular file"):
        load_scenario("/dev/zero")


def short_id(value):
    return f"{value[:20]!r}...({len(value):,} chars)" if isinstance(value, str) and len(value) > 40 else None


@pytest.mark.parametrize(
    "extra, fragment",
    [
        ("deep = " + "[" * 100_000 + "]" * 100_000 + "\n", "not valid TOML (nested deeper"),
        ("deep = " + "{a = " * 10_000 + "1" + "}" * 10_000 + "\n", "not valid TOML"),
        ("big = " + "9" * 5000 + "\n", "more than 4,300 digits"),
    ],
    ids=short_id,
)
def test_hostile_toml_is_a_clear_error(tmp_path, extra, fragment):
    path = write(tmp_path / "bad.toml", extra + MINIMAL)
    with pytest.raises(InputError) as caught:
        load_scenario(str(path))
    assert fragment in caught.value.one_line() and str(path) in caught.value.one_line()


TOOL_BASE = MINIMAL.replace('"terminal"', '"mcp"') + '[[tools]]\nname = "ping"\n'


@pytest.mark.parametrize(
    "text, fragments",
    [
        (TOOL_BASE + "[tools.inputSchema]\ntype = \"object\"\nrequired = 5\n",
         ["`required` should be a list of argument names"]),
        (TOOL_BASE + "[tools.inputSchema]\ntype = \"object\"\n[tools.inputSchema.properties.since]\ntype = \"string\"\ndefault = 1979-05-27\n",
         ["`inputSchema.properties.since.default` is a date (1979-05-27)", "write it in quotes"]),
        (TOOL_BASE + "[tools.inputSchema]\ntype = \"object\"\n[tools.inputSchema.properties.at]\nexamples = [07:32:00]\n",
         ["is a time of day (07:32:00)"]),
        (TOOL_BASE.replace('name = "ping"', 'name = "   "'), ["tools[1]: field `name` is blank"]),
        (TOOL_BASE.replace('name = "ping"', "name = 5"), ["tools[1]: field `name` should be a string, not a number"]),
        (MINIMAL.replace("version = 1", "version = 1979-05-27"), ["should be a whole number such as 1, not 1979-05-27 (a date)"]),
        (MINIMAL.replace("version = 1", "version = true"), ["not true"]),
        (MINIMAL.replace('name = "cron-debugging"', 'name = "  "'), ["field `name` is blank"]),
        (MINIMAL.replace('"terminal"', '"mcp"') + "tools = '[" + "[" * 100_000 + "'\n", ["not JSON (nested deeper"]),
        (MINIMAL.replace('"terminal"', '"mcp"') + "tools = '[" + "9" * 5000 + "]'\n", ["more than 4,300 digits"]),
    ],
    ids=short_id,
)
def test_bad_tool_schemas_and_values_are_said_in_plain_words(tmp_path, text, fragments):
    path = write(tmp_path / "tools.toml", text)
    with pytest.raises(InputError) as caught:
        load_scenario(str(path))
    line = caught.value.one_line()
    for fragment in fragments:
        assert fragment in line, line
    for python_speak in ("not True", "not None", "datetime.", "is missing", "NoneType"):
        assert python_speak not in line, line


def test_a_scenario_name_is_never_read_from_a_file_of_that_name_in_the_working_directory(tmp_path, monkeypatch):
    from agentworld_local.scenarios.loader import load_scenario

    monkeypatch.chdir(tmp_path)
    (tmp_path / "disk-full-server").write_text("not toml at all [", encoding="utf-8")
    assert load_scenario("disk-full-server").domain == "terminal"  # the bundled one, not the file
