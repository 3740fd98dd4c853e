"""One rule for a scenario a client names, on every face that takes one: `awl serve`'s REST app,
`awl serve --openenv` (HTTP and WebSocket), `awl mcp`'s `reset`, the TRL adapter's dataset rows
and Gymnasium's reset options. A path, a name with a separator, `.`/`..`, a drive or a file of
the working directory answers exactly as a name nobody has, before and after such files exist,
and no answer quotes what a file holds. Real servers on 127.0.0.1, real clients."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import httpx2
import pytest
from websockets.sync.client import connect

from agentworld_local.env.gym import AgentWorldEnv
from agentworld_local.env.trl import environment_factory
from agentworld_local.errors import InputError
from agentworld_local.scenarios import list_scenarios, scenario_by_name
from agentworld_local.testing import ScriptedBackend
from agentworld_local.testing.answers import ANSWERS, answer, write_answer_file
from tests.serve.helpers import served
from tests.serve.test_openenv import openenv_served

pytest.importorskip("openenv")
pytest.importorskip("mcp")
from mcp import Client  # noqa: E402

from tests.serve.test_mcp import server as mcp_server  # noqa: E402
from tests.serve.test_mcp import text  # noqa: E402

#: A body as JSON text in ASCII (a lone surrogate travels as its `\\ud800` escape).
JSON = {"content-type": "application/json"}
SHOWN = [item for item in ANSWERS if not item.several_blocks]
#: What a client may try instead of a scenario's name.
HOSTILE = [".env", "notes", "notes.toml", "sub/notes.toml", "..", ".", "C:notes", "zz-no-such-scenario",
           "/etc/passwd", "~/notes.toml", "..\\notes.toml", " notes ", "\ud800"]
#: A scenario-shaped file: what a face that opened files of the working directory would load.
PLANTED = ('version = 1\nname = "notes"\ndomain = "terminal"\ntitle = "x"\ntask = "sk-SECRET-TASK"\n'
           'initial_state = "sk-SECRET-STATE"\n')


def scripted() -> ScriptedBackend:
    return ScriptedBackend([item.scripted(3) for item in SHOWN])


def plant(cwd: Path) -> None:
    (cwd / "sub").mkdir()
    for name in ("zz-no-such-scenario", "notes", "notes.toml", "sub/notes.toml", "C:notes"):
        (cwd / name).write_text(PLANTED)
    (cwd / ".env").write_text("API_KEY = 'sk-SECRET-ENV'\n")
    (cwd.parent / "notes.toml").write_text(PLANTED)


@pytest.fixture
def cwd(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cwd"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def rest_line(client: httpx2.Client, name: str) -> str:
    response = client.post("/sessions", content=json.dumps({"scenario": name}), headers=JSON)
    assert response.status_code == 400, response.text
    body = response.json()
    return f"{body['error']} {body['hint']}"


def openenv_http_line(url: str, name: str) -> str:
    response = httpx2.post(f"{url}/reset", content=json.dumps({"scenario": name}), headers=JSON, timeout=None)
    assert response.status_code == 400, response.text
    return response.json()["detail"]


def openenv_ws_line(socket, name: str) -> str:
    socket.send(json.dumps({"type": "reset", "data": {"scenario": name}}))
    said = json.loads(socket.recv())
    assert said["type"] == "error", said
    return said["data"]["message"]


def raised_line(call) -> str:
    with pytest.raises(InputError) as refused:
        call()
    return refused.value.one_line()


def test_every_face_refuses_a_path_or_a_file_with_the_same_line_and_never_a_files_content(cwd, tmp_path):
    trl = environment_factory("terminal", base_url="http://127.0.0.1:9")()  # refused before any request
    gym = AgentWorldEnv("agentworld/Terminal-v0", backend=scripted(), out_dir=tmp_path / "gym")
    try:
        with served(tmp_path / "rest", scripted()) as client, \
                openenv_served(tmp_path / "openenv", scripted()) as url, \
                connect(url.replace("http", "ws", 1) + "/ws", open_timeout=None) as socket:
            def lines() -> dict[str, list[str]]:
                said: dict[str, list[str]] = {}
                for name in HOSTILE:
                    said[name] = [rest_line(client, name), openenv_http_line(url, name), openenv_ws_line(socket, name),
                                  raised_line(lambda: trl.reset(scenario=name)),
                                  raised_line(lambda: gym.reset(options={"scenario": name}))]
                return said

            before = lines()
            plant(cwd)
            after = lines()
            assert httpx2.get(f"{url}/health", timeout=None).status_code == 200
    finally:
        gym.close()
    assert after == before  # whether a file exists changes nothing
    for name, said in after.items():
        assert len(set(said)) == 1, (name, said)  # the same line on every face
        line = said[0]
        assert line.startswith("Unknown scenario `") and "by name" in line and "\n" not in line, line
        assert "SECRET" not in line and ".toml file" not in line
        line.encode("utf-8")  # a lone surrogate is shown as U+FFFD, never sent back
    assert list((tmp_path / "rest").glob("*.jsonl")) == [] and list((tmp_path / "openenv").glob("*.jsonl")) == []


def test_awl_mcp_reset_refuses_the_same_way_and_a_known_name_still_opens(cwd, tmp_path):
    answers = write_answer_file(tmp_path / "answers.json", [answer("thinking_then_tags")])
    known = next(item.name for item in list_scenarios() if item.domain == "terminal")
    expected = {name: raised_line(lambda: scenario_by_name(name)) for name in HOSTILE if name != "\ud800"}

    async def session() -> dict[str, str]:
        said = {}
        parameters = mcp_server(tmp_path, "--model", f"scripted:{answers}")
        parameters.cwd = str(cwd)  # the server's working directory holds the planted files
        async with Client(parameters) as client:
            for name in expected:
                result = await client.call_tool("reset", {"scenario": name})
                assert result.is_error, name
                said[name] = text(result)
            opened = await client.call_tool("reset", {"scenario": known})
            said["known"] = "" if opened.is_error else opened.structured_content["task"]
        return said

    plant(cwd)
    said = anyio.run(session)
    for name, line in expected.items():
        assert said[name].endswith(line) and "SECRET" not in said[name], (name, said[name])
    assert said["known"] == scenario_by_name(known).task


def test_a_user_scenario_is_found_by_name_and_a_damaged_one_is_never_quoted(tmp_path):
    scenarios = Path(os.environ["AWL_HOME"]) / "config" / "scenarios"
    scenarios.mkdir(parents=True, exist_ok=True)
    (scenarios / "mine.toml").write_text(PLANTED.replace('"notes"', '"mine"'))
    (scenarios / "broken.toml").write_text('version = 1\nname = "broken"\ndomain = "sk-SECRET-DOMAIN"\n')
    try:
        assert scenario_by_name("mine").task == "sk-SECRET-TASK"  # the user's own: by name
        refused = raised_line(lambda: scenario_by_name("broken"))
        assert "SECRET" not in refused and refused.startswith("Unknown scenario `broken`")
    finally:
        (scenarios / "mine.toml").unlink()
        (scenarios / "broken.toml").unlink()
