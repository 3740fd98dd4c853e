"""The TRL adapter (env/trl.py): a world as a class for `GRPOTrainer(environment_factory=...)`,
each instance a session on a real `awl serve` on 127.0.0.1 (scripted model).

TRL itself is not a dependency: the tests check the contract it relies on (TRL 1.16's
grpo_trainer.py): the tools are the class's public functions but `reset` and `get_reward`
(TRL before 1.10: the instance's public bound methods but `reset`), each found by its
`__name__` and turned into a schema by transformers' `get_json_schema`, which reads
`inspect.signature`, `typing.get_type_hints` and a Google-style docstring with every argument
under `Args:`; `reset(**row)` gets the whole dataset row and returns a string (appended to the
prompt) or None; reward functions read the instances after the rollout.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from concurrent.futures import ThreadPoolExecutor

import pytest

from agentworld_local.domains.android import ACTION_TYPES
from agentworld_local.domains.mcp import WORKSPACE_TOOLS
from agentworld_local.domains.web import ACTIONS as WEB_ACTIONS
from agentworld_local.env.trl import EPISODE_OVER, close_environments, environment_factory, episode_reward
from agentworld_local.errors import InputError
from agentworld_local.scenarios import load_scenario
from agentworld_local.testing import ScriptedBackend
from agentworld_local.testing.answers import ANSWERS
from agentworld_local.trajectory.reader import read_trajectory
from tests.serve.helpers import served

SHOWN = [item for item in ANSWERS if not item.several_blocks]
# What transformers' get_json_schema takes for an argument's description (one `name: text` line each).
ARG_LINE = re.compile(r"^\s+(\w+): (\S.*)$", re.MULTILINE)


def backend(**options) -> ScriptedBackend:
    return ScriptedBackend([item.scripted(3) for item in SHOWN], **options)


def env_class(client, world: str = "terminal", **options):
    return environment_factory(world, base_url=str(client.base_url), think="full", **options)


def tools_trl_sees(env) -> dict[str, typing.Callable]:
    """The tools as TRL finds them, the same in both ways it has had (and none of them hidden)."""
    now = {name: getattr(env, name) for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
           if name not in ("reset", "get_reward") and not name.startswith("_")}
    before = {name for name, _ in inspect.getmembers(env, predicate=inspect.ismethod)
              if name != "reset" and not name.startswith("_")}
    assert set(now) == before - {"get_reward"}
    return now


def schema_of(method) -> dict:
    """What get_json_schema would read, checked as it checks it (transformers is no dependency)."""
    signature = inspect.signature(method)  # bound: no `self`
    hints = typing.get_type_hints(method)
    doc = inspect.getdoc(method)
    assert doc and hints.pop("return") is str and method.__name__ in (method.__func__.__qualname__.split(".")[-1],)
    described = dict(ARG_LINE.findall(doc.split("Args:\n", 1)[1].split("\n\n")[0])) if signature.parameters else {}
    for name, parameter in signature.parameters.items():
        assert parameter.annotation is not inspect.Parameter.empty and name in hints and name in described, name
    assert set(hints) == set(signature.parameters) == set(described)
    try:
        from transformers.utils import get_json_schema
    except ImportError:
        pass
    else:
        assert get_json_schema(method)["function"]["name"] == method.__name__
    return {"description": doc.split("\n\n")[0], "required": [name for name, p in signature.parameters.items()
                                                             if p.default is inspect.Parameter.empty],
            "types": hints, "described": described}


@pytest.mark.parametrize("world, names", [
    ("terminal", {"run_shell_command", "send_keystrokes", "task_complete"}),
    ("web", set(WEB_ACTIONS)),
    ("mcp", {tool["name"] for tool in WORKSPACE_TOOLS}),
    ("search", {"web_search", "web_extractor", "dict_memory"}),
    ("os", {"run_python", "click", "double_click", "right_click", "move_to", "drag_to", "type_text", "press", "hotkey",
            "scroll", "wait", "task_complete", "task_infeasible"}),
    ("android", set(ACTION_TYPES)),
    ("notes-mcp-server", {tool["name"] for tool in load_scenario("notes-mcp-server").tools}),
])
def test_each_worlds_actions_are_its_public_methods_with_types_and_google_docstrings(world, names):
    env = environment_factory(world, base_url="http://127.0.0.1:9")()  # nothing is sent before reset
    tools = tools_trl_sees(env)
    assert set(tools) == names
    schemas = {name: schema_of(method) for name, method in tools.items()}
    assert all(schema["description"] for schema in schemas.values())
    if world == "terminal":
        assert str(inspect.signature(env.run_shell_command)) == "(command: str) -> str"
        assert schemas["send_keystrokes"]["required"] == ["keystrokes"] and schemas["task_complete"]["types"] == {}
    if world == "web":
        click = schemas["click"]
        assert click["required"] == ["bid"] and click["types"]["button"] == typing.Literal["left", "middle", "right"]
        assert schemas["fill"]["required"] == ["bid", "value"] and schemas["goto"]["types"] == {"url": str}
    if world == "mcp":
        search = schemas["search_files"]
        assert search["required"] == ["pattern"] and search["described"]["path"] == "Default: the workspace root."
        assert schemas["read_file"]["description"] == "Return the complete text content of a file."
    if world == "search":
        assert typing.get_args(schemas["dict_memory"]["types"]["operation"])[:2] == ("add", "update")
        assert schemas["web_search"]["types"]["queries"] == list[str] and schemas["web_search"]["required"] == []
    if world == "android":
        assert schemas["input_text"]["required"] == ["text"] and schemas["click"]["types"]["index"] is int


def test_odd_tool_names_become_identifiers_and_the_action_keeps_the_originals(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "config" / "scenarios").mkdir(parents=True)
    monkeypatch.setenv("AWL_HOME", str(home))
    (home / "config" / "scenarios" / "odd-tools.toml").write_text('''version = 1
name = "odd-tools"
domain = "mcp"
title = "Tools whose names are no Python names"
task = "Ask for the weather."
initial_state = "{}"

[[tools]]
name = "get-weather"
description = "The weather. Returns: a forecast."
[tools.inputSchema]
type = "object"
required = ["city-name"]
[tools.inputSchema.properties.city-name]
type = "string"
[tools.inputSchema.properties.from]
type = ["string", "null"]
default = "today"
[tools.inputSchema.properties.self]
type = "boolean"

[[tools]]
name = "reset"
description = "Reset the weather station."
''', encoding="utf-8")
    with served(tmp_path / "served", backend()) as client:
        env = env_class(client, "odd-tools")()
        tools = tools_trl_sees(env)
        assert set(tools) == {"get_weather", "reset_tool"} and inspect.signature(env.reset).parameters.keys() == {"row"}
        schema = schema_of(env.get_weather)
        assert schema["required"] == ["city_name"] and schema["types"]["from_"] == str | None
        assert schema["described"] == {"city_name": "The city name.", "from_": "The from (default \"today\").",
                                       "self_tool": "The self."}
        assert "Returns -" in schema["description"]  # a section word in a description stays in it
        env.reset()
        env.get_weather(city_name="Oslo", from_="monday", self_tool=True)
        env.reset_tool()
        path = env.trajectory
    actions = [json.loads(turn.action) for turn in read_trajectory(path).turns]
    assert actions == [{"name": "get-weather", "arguments": {"city-name": "Oslo", "from": "monday", "self": True}},
                       {"name": "reset", "arguments": {}}]


def test_reset_takes_the_rows_task_and_initial_state_and_a_tool_call_is_one_turn(tmp_path):
    with served(tmp_path, backend()) as client:
        env = env_class(client)()
        row = {"prompt": [{"role": "user", "content": "Free some disk space."}], "task": "Free some disk space.",
               "initial_state": "root@box:/# ", "seed": 5, "answer": "ignored", "controls": None}
        assert env.reset(**row) == "\n\nroot@box:/# "
        observation = env.run_shell_command(command="df -h")
        assert env.turns == 1 and env.observation == observation and env.rewards == [0.0] and not env.done
        env.send_keystrokes("q")
        path = env.trajectory
        assert state(client, env.session)["turns"] == 2
    trajectory = read_trajectory(path)
    header = trajectory.header
    assert (header.task, header.initial_state, header.seed) == ("Free some disk space.", "root@box:/# ", 5)
    assert [turn.action for turn in trajectory.turns] == ["df -h", json.dumps([{"keystrokes": "q", "duration": 1.0}])]
    assert trajectory.turns[0].observation == observation


def test_web_and_tool_calls_are_written_in_the_domains_own_raw_form(tmp_path):
    with served(tmp_path, backend()) as client:
        web = env_class(client, "web")()
        assert web.reset(prompt="Buy boots").startswith("\n\nTab 0 (current)")
        web.click(bid="41")
        web.fill("23", "boots", enable_autocomplete_menu=True)
        web.select_option(bid="33", options=["Price: low to high"])
        mcp = env_class(client, "notes-mcp-server")()
        mcp.reset(prompt="Find the cabin note")
        mcp.list_notes(tag="travel", limit=5)
        paths = web.trajectory, mcp.trajectory
    assert [turn.action for turn in read_trajectory(paths[0]).turns] == [
        "click('41')", "fill('23', 'boots', enable_autocomplete_menu=True)", "select_option('33', ['Price: low to high'])"]
    assert [json.loads(turn.action) for turn in read_trajectory(paths[1]).turns] == [
        {"name": "list_notes", "arguments": {"tag": "travel", "limit": 5}}]


def test_a_row_without_a_prompt_gets_the_task_and_another_worlds_row_is_refused(tmp_path):
    scenario = load_scenario("disk-full-server")
    with served(tmp_path, backend()) as client:
        env = env_class(client, "disk-full-server")()
        assert env.reset() == f"{scenario.task}\n\n{scenario.initial_state}"
        terminal = env_class(client)()
        terminal.reset(prompt="x", scenario="disk-full-server")  # the same world's tools: taken
        assert terminal.observation == scenario.initial_state
        for row in ({"scenario": "online-shop"}, {"domain": "web"}):
            with pytest.raises(InputError, match="another world") as refused:
                terminal.reset(prompt="x", **row)
            assert "dict environment_factory" in refused.value.hint
    with pytest.raises(InputError, match="base_url"):
        environment_factory("terminal")
    with pytest.raises(InputError, match="colour"):
        environment_factory("terminal", base_url="http://127.0.0.1:9", colour="red")


def test_the_servers_reward_sums_over_the_episode_and_the_domains_ending_makes_it_done(tmp_path):
    def progress(episode):
        return 1.0 if episode.terminated else 0.25

    with served(tmp_path, backend(), reward=progress) as client:
        Env = env_class(client, owns_reward=True)
        env = Env()
        assert "get_reward" not in tools_trl_sees(env) and inspect.isfunction(Env.get_reward)
        env.reset(prompt="x")
        env.run_shell_command("ls")
        sid = env.session
        env.task_complete()  # `[]`: the terminal's own ending
        assert env.done and env.rewards == [0.25, 1.0] and env.reward == 1.25 and env.get_reward() == 1.25
        assert env.session is None and state(client, sid)["open"] is False  # closed at once, saved
        assert env.run_shell_command("pwd") == EPISODE_OVER and env.turns == 2
        assert episode_reward([env]) == [1.25]
        path = env.trajectory
        env.reset(prompt="x")
        assert (env.reward, env.rewards, env.done, env.turns) == (0.0, [], False, 0) and env.trajectory != path
    assert [turn.action for turn in read_trajectory(path).turns] == ["ls", "[]"]
    assert [line["value"] for line in read_trajectory(path).rewards] == [0.25, 1.0]


def test_an_unreadable_action_is_its_reason_and_no_turn_and_a_failed_turn_leaves_the_rollout_unscored(tmp_path):
    def broken(episode):
        raise RuntimeError("the grader is down")

    with served(tmp_path, backend()) as client:
        mcp = env_class(client, "mcp")()
        mcp.reset(prompt="x")
        assert mcp.read_file(path=3).startswith("Invalid action: Argument `path` of `read_file` must be of type string")
        android = env_class(client, "android")()
        android.reset(prompt="x")
        assert android.click().startswith("Invalid action: `click` needs a target")
        assert mcp.turns == android.turns == 0 and state(client, mcp.session)["turns"] == 0
        with pytest.raises(TypeError, match="unexpected keyword"):
            mcp.read_file(path="a", colour="red")  # TRL shows the policy {"error": ...}
    with served(tmp_path / "broken", backend(), reward=broken) as client:
        env = env_class(client)()
        env.reset(prompt="x")
        with pytest.raises(Exception, match="grader is down"):
            env.run_shell_command("ls")
        assert env.failure and "grader is down" in env.failure and episode_reward([env]) == [None]
        env.reset(prompt="x")
        assert env.failure is None


def test_several_instances_step_at_once_each_in_its_own_session_file(tmp_path):
    with served(tmp_path, backend(parallel=4)) as client:
        Env = env_class(client)
        envs = [Env() for _ in range(4)]
        for index, env in enumerate(envs):
            env.reset(prompt="x", task=f"task {index}")

        def rollout(index: int) -> None:  # as AsyncGRPOTrainer calls tools: from a pool of threads
            for step in range(2):
                envs[index].run_shell_command(f"echo e{index}-t{step}")

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(rollout, range(4)))
        paths = [env.trajectory for env in envs]
        sessions = [env.session for env in envs]
        assert len(set(paths)) == 4
        close_environments(Env)
        assert all(state(client, sid)["open"] is False for sid in sessions)
    for index, path in enumerate(paths):
        trajectory = read_trajectory(path)
        assert trajectory.header.task == f"task {index}"
        assert [turn.action for turn in trajectory.turns] == [f"echo e{index}-t{step}" for step in range(2)]


def state(client, sid: str) -> dict:
    return client.get(f"/sessions/{sid}").json()
