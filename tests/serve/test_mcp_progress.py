"""`awl mcp` for clients that wait on long turns and read structure: progress notifications while
a turn streams, structured `state` and `undo`, and bad arguments said in one clean line.

Driven like tests/serve/test_mcp.py: the SDK's own client spawns `awl mcp --model scripted:FILE`;
a slow turn is a scripted answer cut into one-character chunks with a pause after each.
"""

from __future__ import annotations

import pytest

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp")
jsonschema = pytest.importorskip("jsonschema")
from mcp import Client  # noqa: E402

from agentworld_local.testing.answers import answer, write_answer_file  # noqa: E402
from agentworld_local.trajectory.reader import read_trajectory  # noqa: E402
from tests.serve.test_mcp import server, text  # noqa: E402

SLOW = answer("thinking_then_tags")
PROMPT = "user@sandbox:~$ "


def slow_answers(tmp_path, count: int = 1):
    """A turn of len(SLOW.raw) one-character chunks, 10 ms apart: seconds, like a (fast) real model."""
    return write_answer_file(tmp_path / "answers.json", [SLOW] * count, chunk=1, delay_s=0.01)


def test_a_streaming_turn_sends_rate_limited_progress_before_its_result(tmp_path):
    answers = slow_answers(tmp_path)
    heard: list[tuple] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        heard.append(("progress", value, total, message))

    async def session():
        async with Client(server(tmp_path, "--model", f"scripted:{answers}", "--think", "full")) as client:
            result = await client.call_tool("act", {"action": "ls -la"}, progress_callback=progress)
            heard.append(("result",))
            return result

    result = anyio.run(session)
    assert not result.is_error and text(result) == SLOW.observation
    assert heard[-1] == ("result",)  # every notification came while the turn was still running
    notes = heard[:-1]
    messages = [message for *_, message in notes]
    phases = list(dict.fromkeys(message.split(": ", 1)[1].split("…")[0] for message in messages))
    assert phases == ["reading the prompt", "thinking", "observation"], messages
    assert all(message.startswith("turn 1: ") for message in messages)
    values = [value for _, value, _, _ in notes]
    assert values == sorted(set(values)), values  # each larger than the last, as the spec asks
    assert all(total is None for _, _, total, _ in notes)
    assert len([m for m in messages if "thinking" in m]) >= 2  # a long phase is heard more than once...
    assert len(notes) < len(SLOW.raw) / 4  # ...but not once a chunk: a fast stream does not flood
    assert "The agent lists /app" not in " ".join(messages)  # the phase, never the thinking itself


def test_a_client_that_cancels_on_progress_stops_the_turn_and_nothing_is_saved(tmp_path):
    answers = slow_answers(tmp_path, count=2)

    async def session():
        async with Client(server(tmp_path, "--reveal-simulator", "--model", f"scripted:{answers}",
                                 "--think", "full")) as client:
            with anyio.CancelScope() as scope:
                async def thinking(value: float, total: float | None, message: str | None) -> None:
                    if "thinking" in (message or ""):
                        scope.cancel()  # the turn is streaming now: give up on it, as a client's timeout would

                await client.call_tool("act", {"action": "sleep 600"}, progress_callback=thinking)
            assert scope.cancel_called
            after = await client.call_tool("state", {})
            again = await client.call_tool("act", {"action": "ls -la"})  # the session goes on
            return after, again

    after, again = anyio.run(session)
    assert after.structured_content["turn"] == 0 and text(after) == PROMPT
    assert again.structured_content["turn"] == 1 and text(again) == SLOW.observation
    (turn,) = read_trajectory(again.structured_content["trajectory"]).turns  # the cancelled turn left no line
    assert turn.action == "ls -la"


def test_state_and_undo_return_structured_content(tmp_path):
    answers = write_answer_file(tmp_path / "answers.json", [answer("thinking_then_tags"), answer("marker_form")])

    async def session():
        async with Client(server(tmp_path, "--reveal-simulator", "--model", f"scripted:{answers}")) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            seen = {"start": await client.call_tool("state", {})}
            seen["act"] = await client.call_tool("act", {"action": "ls -la"})
            seen["state"] = await client.call_tool("state", {})
            seen["undo"] = await client.call_tool("undo", {})
            await client.call_tool("act", {"action": "[]"})
            seen["ended"] = await client.call_tool("state", {})
            return tools, seen

    tools, seen = anyio.run(session)
    path = seen["act"].structured_content["trajectory"]
    assert seen["start"].structured_content == {"observation": PROMPT, "turn": 0, "ended": False, "trajectory": path}
    assert seen["state"].structured_content == {"observation": SLOW.observation, "turn": 1, "ended": False,
                                                "trajectory": path}
    assert seen["undo"].structured_content == {"observation": PROMPT, "turn": 0, "ended": False, "trajectory": path}
    assert seen["ended"].structured_content["ended"] is True and seen["ended"].structured_content["turn"] == 1
    for name in ("state", "undo"):
        jsonschema.validate(seen[name].structured_content, tools[name].output_schema)
        assert text(seen[name]) == seen[name].structured_content["observation"]  # text-only clients read the same


def test_without_reveal_simulator_state_names_no_file(tmp_path):
    answers = write_answer_file(tmp_path / "answers.json", [answer("thinking_then_tags")])

    async def session():
        async with Client(server(tmp_path, "--model", f"scripted:{answers}")) as client:
            return await client.call_tool("state", {})

    assert anyio.run(session).structured_content == {"observation": PROMPT, "turn": 0, "ended": False}


def test_a_bad_argument_is_one_clean_line_without_pydantic_s_url(tmp_path):
    answers = write_answer_file(tmp_path / "answers.json", [answer("thinking_then_tags")])

    async def session():
        async with Client(server(tmp_path, "--model", f"scripted:{answers}")) as client:
            return (await client.call_tool("act", {"action": 3}), await client.call_tool("act", {}),
                    await client.call_tool("reset", {"seed": "soon", "controls": "not a list"}),
                    text(await client.call_tool("state", {})))

    number, missing, reset, state = anyio.run(session)
    for result in (number, missing, reset):
        said = text(result)
        assert result.is_error and "\n" not in said.strip(), said
        assert "pydantic" not in said and "http" not in said and "validation error for" not in said, said
    assert "`action`: Input should be a valid string (got 3); `act` takes `action`." in text(number)
    assert "`action` is missing" in text(missing)
    assert "`seed`: Input should be a valid integer" in text(reset) and "`controls`" in text(reset)
    assert state == PROMPT  # nothing ran
    assert list((tmp_path / "out").glob("*.jsonl")) == []


def test_within_a_phase_one_notification_per_interval_and_a_new_phase_at_once():
    from agentworld_local.engine import events
    from agentworld_local.serve.mcp_progress import TurnProgress

    now = [100.0]
    progress = TurnProgress(interval_s=0.5, clock=lambda: now[0])
    said = [progress.update(events.TurnStarted(4, "ls"))]
    said += [progress.update(events.ThinkingDelta(4, "x")) for _ in range(50)]  # all at one instant
    now[0] += 0.6
    said += [progress.update(events.ThinkingDelta(4, "y")), progress.update(events.ThinkingDelta(4, "z"))]
    said += [progress.update(events.AnswerDelta(4, "<")), progress.update(events.ObservationDelta(4, "a"))]
    said += [progress.update(events.Ready("step"))]
    heard = [item for item in said if item is not None]
    assert [item.message.split(" (")[0] for item in heard] == [
        "turn 4: reading the prompt…", "turn 4: thinking…", "turn 4: thinking…", "turn 4: observation…"]
    assert [item.progress for item in heard] == [0.0, 1.0, 51.0, 53.0]
    assert heard[2].message == "turn 4: thinking… (51 chunks, 1s)"
