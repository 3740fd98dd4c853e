"""A `\\ud800` escape that a domain's parser reads becomes a lone surrogate in the action
(web `click('\\ud800')`, an android `input_text`, a tool call's argument or name): the turn is
saved, and every face answers it, as text that encodes (a lone surrogate written as its escape,
as the session file writes it), never a server error, a dead server or a retry that adds the
turn twice. Through `awl serve` (JSON and stream), `awl serve --openenv`, `awl mcp`,
Gymnasium and the TRL adapter, on real servers and clients."""

from __future__ import annotations

import asyncio
import json

import anyio
import httpx2
import pytest

from agentworld_local.env.gym import AgentWorldEnv
from agentworld_local.env.trl import environment_factory
from agentworld_local.testing import ScriptedBackend
from agentworld_local.testing.answers import ANSWERS, answer, write_answer_file
from agentworld_local.trajectory.reader import read_trajectory
from tests.serve.helpers import served, sse_events

pytest.importorskip("openenv")
pytest.importorskip("mcp")
from mcp import Client  # noqa: E402
from openenv import GenericEnvClient  # noqa: E402

from tests.serve.test_mcp import server as mcp_server  # noqa: E402
from tests.serve.test_mcp import text  # noqa: E402
from tests.serve.test_openenv import openenv_served  # noqa: E402

SHOWN = [item for item in ANSWERS if not item.several_blocks]
#: Per domain: actions (ASCII text) whose parsed form holds a lone surrogate, or whose refusal quotes one.
ACTIONS = {
    "terminal": ['[{"keystrokes": "echo \\ud800\\n", "duration": 1}]'],
    "web": ["click('\\ud800')", "fill('12', '\\udc00x')"],
    "android": ['{"action_type": "input_text", "text": "\\ud800"}'],
    "mcp": ['{"name": "list_directory", "arguments": {"path": "\\ud800"}}', '{"name": "\\ud800", "arguments": {}}'],
    "swe": ['{"name": "\\udfff", "arguments": {}}'],
    "search": ['{"name": "web_search", "arguments": {"query": "\\ud800"}}'],
    "os": ["pyautogui.write('\\ud800')"],
}


def scripted() -> ScriptedBackend:
    return ScriptedBackend([item.scripted(3) for item in SHOWN] * 4)


def encodes(value) -> None:
    """What a face answered: text UTF-8 can encode, wherever it sits."""
    json.dumps(value, ensure_ascii=False).encode("utf-8")


def test_awl_serve_answers_and_streams_every_such_turn_and_saves_it_once(tmp_path):
    with served(tmp_path, scripted()) as client:
        for domain, actions in ACTIONS.items():
            sid = client.post("/sessions", json={"domain": domain}).json()["id"]
            saved = 0
            for action in actions:
                response = client.post(f"/sessions/{sid}/step", json={"action": action})
                assert response.status_code in (200, 422), (domain, action, response.status_code, response.text)
                body = response.json()  # JSON that parses: a lone surrogate travels as its escape
                if response.status_code == 422:
                    assert body["invalid_action"] is True and "\\ud" in body["error"], body
                    continue
                saved += 1
                assert body["turn"] == saved and body["record"]["action"] == action
                with client.stream("POST", f"/sessions/{sid}/step/stream", json={"action": action}) as stream:
                    assert stream.status_code == 200
                    names = [name for name, _ in sse_events(stream.iter_lines())]
                saved += 1
                assert "turn_done" in names, names
            assert client.get(f"/sessions/{sid}").json()["turns"] == saved  # each turn once, none lost
            client.delete(f"/sessions/{sid}")
    for path in tmp_path.glob("*.jsonl"):
        read_trajectory(path)  # the files read back


def test_awl_serve_openenv_answers_every_such_turn_and_the_session_goes_on(tmp_path):
    async def run(url: str) -> list:
        said = []
        for domain, actions in ACTIONS.items():
            async with GenericEnvClient(base_url=url, message_timeout_s=1800) as env:
                await env.reset(domain=domain)
                for action in actions:
                    result = await env.step({"action": action})
                    said.append((domain, action, result.observation))
                said.append((domain, "state", await env.state()))
        return said

    with openenv_served(tmp_path, scripted()) as url:
        said = asyncio.run(run(url))
    for domain, action, observation in said:
        encodes(observation)
        if action != "state" and observation.get("invalid_action"):
            assert "\\ud" in observation["invalid_action"], (domain, action, observation)


@pytest.mark.parametrize("domain", ["web", "mcp", "android"])
def test_awl_mcp_answers_every_such_act_and_lives_on(tmp_path, domain):
    answers = write_answer_file(tmp_path / "answers.json", [answer("thinking_then_tags")] * 4)

    async def session() -> list:
        said = []
        async with Client(mcp_server(tmp_path, "--model", f"scripted:{answers}", "--domain", domain)) as client:
            for action in ACTIONS[domain]:
                result = await client.call_tool("act", {"action": action})
                said.append((result.is_error, text(result)))
            said.append((False, text(await client.call_tool("state", {}))))
        return said

    said = anyio.run(session)
    for is_error, shown in said:
        encodes(shown)
        assert not is_error or "\\ud800" in shown, shown
    assert said[-1][1] == said[-2][1] or said[-2][0]  # the state after the last act is its answer


def test_gymnasium_answers_every_such_step(tmp_path):
    for domain, actions in ACTIONS.items():
        env = AgentWorldEnv(f"agentworld/{ {'mcp': 'MCP', 'swe': 'SWE', 'os': 'OS'}.get(domain, domain.title())}-v0",
                            backend=scripted(), out_dir=tmp_path / domain)
        try:
            env.reset(seed=1)
            for action in actions:
                observation, reward, terminated, truncated, info = env.step(action)
                encodes(observation)
                json.dumps(info)  # serialisable (a lone surrogate as its ASCII escape)
                if "invalid_action" in info:
                    encodes(info["invalid_action"])
        finally:
            env.close()


def test_the_trl_adapter_answers_every_such_tool_call_without_a_failure(tmp_path):
    with served(tmp_path, scripted()) as client:
        def env(world: str):
            made = environment_factory(world, base_url=str(client.base_url))()
            made.reset(prompt="x")
            return made

        web, android, mcp = env("web"), env("android"), env("mcp")
        said = [web.click(bid="\ud800"), web.fill("12", "\udc00x"), android.input_text(text="\ud800"),
                mcp.list_directory(path="\ud800")]
        for shown in said:
            encodes(shown)
        # BrowserGym's calls are Python: the surrogate is written as its escape, read back by the
        # parser, saved. A JSON action holds it as it is: the domain refuses it (no turn), said.
        assert (web.turns, android.turns, mcp.turns) == (2, 0, 0)
        assert all("lone surrogate" in shown for shown in said[2:]), said
        assert web.failure is None and android.failure is None and mcp.failure is None
        sessions = httpx2.get(f"{client.base_url}/sessions", timeout=None).json()
        assert sorted(item["turns"] for item in sessions) == [0, 0, 2]  # each turn saved once
