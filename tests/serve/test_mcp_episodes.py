"""`awl mcp` for clients that read more than text: output schemas and structured content, tool
annotations, episodes (`reset`, the end of a task), the trajectory resource, strict arguments.

Driven like tests/serve/test_mcp.py: the SDK's own client spawns `awl mcp --model scripted:FILE`.
"""

from __future__ import annotations

import json

import pytest

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp")
jsonschema = pytest.importorskip("jsonschema")
from mcp import Client  # noqa: E402

from agentworld_local.testing.answers import answer  # noqa: E402
from agentworld_local.trajectory.reader import read_trajectory  # noqa: E402
from tests.serve.test_mcp import answer_file, server, text  # noqa: E402

LS = answer("thinking_then_tags").observation


def session_files(tmp_path) -> list:
    return sorted((tmp_path / "out").glob("*.jsonl"))


def test_the_tools_declare_their_output_schemas_and_honest_annotations(tmp_path):
    answers = answer_file(tmp_path, ["thinking_then_tags"])

    async def session() -> tuple:
        async with Client(server(tmp_path, "--reveal-simulator", "--model", f"scripted:{answers}")) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            return tools, await client.call_tool("act", {"action": "ls -la"})

    tools, result = anyio.run(session)
    act, state, undo, reset = (tools[name] for name in ("act", "state", "undo", "reset"))
    assert set(act.output_schema["properties"]) == {"observation", "turn", "terminated", "truncated", "cut_short", "reward", "trajectory"}
    assert set(reset.output_schema["properties"]) >= {"observation", "turn", "trajectory"}
    assert set(state.output_schema["properties"]) == set(undo.output_schema["properties"]) == {
        "observation", "turn", "ended", "trajectory"}
    # What act returns is what its schema promises (the SDK's client checks it too).
    jsonschema.validate(result.structured_content, act.output_schema)
    (path,) = session_files(tmp_path)
    (turn,) = read_trajectory(path).turns
    assert result.structured_content == {"observation": turn.observation, "turn": 1, "terminated": False,
                                         "truncated": False, "cut_short": False, "reward": 0.0, "trajectory": str(path)}
    assert text(result) == LS == turn.observation  # a text-only client reads what it read before
    hints = {name: tool.annotations.model_dump(by_alias=True, exclude_none=True) for name, tool in tools.items()}
    assert hints["state"]["readOnlyHint"] is True
    assert {key: hints["act"][key] for key in ("readOnlyHint", "destructiveHint", "idempotentHint")} == {
        "readOnlyHint": False, "destructiveHint": False, "idempotentHint": False}
    assert hints["undo"]["destructiveHint"] is hints["reset"]["destructiveHint"] is True
    assert all(hint["openWorldHint"] is False for hint in hints.values())  # nothing outside the server is reached
    assert all(tool.input_schema.get("additionalProperties") is False for tool in tools.values())


def test_an_unknown_argument_is_refused_and_reaches_no_model(tmp_path):
    answers = answer_file(tmp_path, ["thinking_then_tags"])

    async def session() -> tuple:
        async with Client(server(tmp_path, "--reveal-simulator", "--model", f"scripted:{answers}")) as client:
            misspelt = await client.call_tool("act", {"actoin": "ls"})
            extra = await client.call_tool("act", {"action": "ls", "timeout": 5})
            on_state = await client.call_tool("state", {"verbose": True})
            on_reset = await client.call_tool("reset", {"scenarios": "disk-full-server"})
            return misspelt, extra, on_state, on_reset, text(await client.call_tool("state", {}))

    misspelt, extra, on_state, on_reset, state = anyio.run(session)
    assert misspelt.is_error and "unknown argument `actoin`; `act` takes `action`" in text(misspelt)
    assert extra.is_error and "unknown argument `timeout`" in text(extra)
    assert on_state.is_error and "`state` takes no arguments" in text(on_state)
    assert on_reset.is_error and "unknown argument `scenarios`" in text(on_reset) and "`scenario`" in text(on_reset)
    assert state == "user@sandbox:~$ "  # nothing was run, nothing was reset
    assert session_files(tmp_path) == []  # no turn, so no file


def test_after_the_end_of_the_task_act_is_refused_until_reset_starts_a_new_file(tmp_path):
    answers = answer_file(tmp_path, ["thinking_then_tags", "marker_form"])

    async def session() -> dict:
        seen = {}
        async with Client(server(tmp_path, "--reveal-simulator", "--model", f"scripted:{answers}", "--seed", "3")) as client:
            seen["first"] = await client.call_tool("act", {"action": "ls -la"})
            seen["end"] = await client.call_tool("act", {"action": "[]"})
            seen["after"] = await client.call_tool("act", {"action": "pwd"})
            seen["state"] = text(await client.call_tool("state", {}))  # reading is still fine
            seen["undo"] = await client.call_tool("undo", {})  # takes the ending back: the episode goes on
            seen["again"] = await client.call_tool("act", {"action": "[]"})
            seen["reset"] = await client.call_tool("reset", {"task": "free some disk space", "seed": 11})
            seen["new"] = await client.call_tool("act", {"action": "df -h"})
            seen["scenario"] = await client.call_tool("reset", {"scenario": "disk-full-server"})
        return seen

    seen = anyio.run(session)
    first, end, after = seen["first"].structured_content, seen["end"].structured_content, seen["after"]
    assert end["terminated"] is True and end["turn"] == 2 and end["trajectory"] == first["trajectory"]
    assert text(seen["end"]).endswith("[the task was declared finished]")
    assert after.is_error and after.structured_content is None
    assert "The episode is over: turn 2 ended the task. Call `reset`" in text(after)
    assert seen["state"] == seen["end"].structured_content["observation"]
    assert not seen["undo"].is_error and seen["again"].structured_content["terminated"] is True
    episode, new = seen["reset"].structured_content, seen["new"].structured_content
    assert episode["turn"] == 0 and episode["task"] == "free some disk space" and episode["seed"] == 11
    assert episode["observation"] == "user@sandbox:~$ " == text(seen["reset"])
    assert episode["trajectory"] != first["trajectory"] and new["trajectory"] == episode["trajectory"]
    assert new["turn"] == 1 and new["terminated"] is False
    old, fresh = read_trajectory(first["trajectory"]), read_trajectory(episode["trajectory"])
    assert [turn.action for turn in old.turns] == ["ls -la", "[]", "[]"]  # the refused `pwd` is no turn
    assert [turn.action for turn in fresh.turns] == ["df -h"]
    assert fresh.header.task == "free some disk space" and fresh.header.seed == 11 and old.header.seed == 3
    assert [turn.observation for turn in fresh.turns] == [new["observation"]]  # still the model's answer
    other = seen["scenario"].structured_content  # another world of the same domain: its task and state
    assert other["task"].startswith("The API returns 500 errors") and other["observation"] != episode["observation"]


def test_the_trajectory_is_a_resource_the_client_lists_and_reads(tmp_path):
    answers = answer_file(tmp_path, ["thinking_then_tags"])

    async def session() -> dict:
        seen = {}
        async with Client(server(tmp_path, "--reveal-simulator", "--model", f"scripted:{answers}")) as client:
            seen["listed"] = (await client.list_resources()).resources
            seen["start"] = await client.read_resource("awl://trajectory")
            seen["act"] = (await client.call_tool("act", {"action": "ls -la"})).structured_content
            seen["after"] = await client.read_resource("awl://trajectory")
            seen["on_disk"] = open(seen["act"]["trajectory"], encoding="utf-8").read()  # before the server closes it
            seen["episode"] = (await client.call_tool("reset", {})).structured_content
            seen["reset"] = await client.read_resource("awl://trajectory")
        return seen

    seen = anyio.run(session)
    (listed,) = seen["listed"]
    assert str(listed.uri) == "awl://trajectory" and listed.mime_type == "application/jsonl"

    def lines(read) -> list[dict]:
        (content,) = read.contents
        assert content.mime_type == "application/jsonl"
        return [json.loads(line) for line in content.text.splitlines()]

    assert [line["type"] for line in lines(seen["start"])] == ["header"]
    (after,) = seen["after"].contents
    assert after.text == seen["on_disk"]
    assert [line.get("action") for line in lines(seen["after"])][1:] == ["ls -la"]
    assert lines(seen["after"])[1]["observation"] == LS
    assert [line["type"] for line in lines(seen["reset"])] == ["header"]  # the new episode's file
    assert lines(seen["reset"])[0]["seed"] == seen["episode"]["seed"]
