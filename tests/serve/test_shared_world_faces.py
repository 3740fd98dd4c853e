"""Shared worlds on every served face: `awl serve`'s REST API, `awl serve --openenv` (HTTP and
WebSocket), MCP's `reset`. Sessions that join one world by name meet byte-identical observations
for the same actions while the scripted model would answer otherwise on every call; a session
outside the world gets the model's own. A bad name is refused with the one line every face says
(worlds/names.py), in the protocol's error shape, and never opens a path. Where an answer came
from is the simulator's side: hidden from the agent's view unless the server reveals it. Two
`awl serve` processes that share one worlds folder agree too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from agentworld_local.defaults import DEFAULT_SEED
from agentworld_local.engine.world import WORLD_KEY
from agentworld_local.testing import ScriptedBackend
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.worlds.names import NAME_RULE
from bench.serve_load import free_port, wait_ready
from tests.serve.helpers import served, sse_events

ROOT = Path(__file__).resolve().parents[2]
#: What every face says of a value that is no world name (worlds/names.py), whatever the value.
NOT_A_NAME = f"is not a shared world name: a name is {NAME_RULE}."
#: Values a hostile client sends as a world's name: paths of every kind, a huge one, no text at all.
HOSTILE = ["../x", "../../etc/passwd", "/etc", "C:x", "C:\\Windows", "a/b", ".hidden", "x" * 10_240, "", " ", 5, 1.5,
           True, ["w"], {"name": "w"}]
#: The same, as JSON a client writes by hand: a lone surrogate (no JSON library would write one).
SURROGATE_BODY = b'{"shared_world": "w\\ud800"}'


def said(text: str) -> str:
    """The raw answer a world model writes for an observation."""
    return f"<think>\nThe agent looks at {text}.\n</think>\n<predicted_observation>\n{text}\n</predicted_observation>"


def backend(prefix: str, n: int = 12, name: str = "world-model") -> ScriptedBackend:
    """A model that answers differently on every call: `prefix-0`, `prefix-1`..."""
    return ScriptedBackend([said(f"{prefix}-{index}") for index in range(n)], name=name)


@pytest.fixture
def worlds(monkeypatch, tmp_path) -> Path:
    folder = tmp_path / "worlds"
    monkeypatch.setenv("AWL_WORLDS_DIR", str(folder))
    return folder


def assert_nothing_opened(tmp_path: Path, worlds: Path) -> None:
    """A refused name made no world and touched no path it spells."""
    assert not worlds.exists() or sorted(path.name for path in worlds.iterdir()) == []
    assert not (tmp_path / "x").exists() and not (tmp_path.parent / "x").exists()


# -- awl serve's REST API ------------------------------------------------------------------------


@pytest.mark.parametrize("reveal", [False, True])
def test_rest_sessions_of_one_world_meet_the_same_observations(tmp_path, worlds, reveal):
    model = backend("M")
    actions = ["ls -la", "cat README.md", "pwd"]
    with served(tmp_path / "sessions", model, reveal_simulator=reveal) as client:
        first = client.post("/sessions", json={"shared_world": "grpo-1"}).json()
        second = client.post("/sessions", json={"shared_world": "grpo-1", "seed": DEFAULT_SEED}).json()  # the default
        outside = client.post("/sessions", json={}).json()
        assert first["shared_world"] == second["shared_world"] == "grpo-1" and outside["shared_world"] is None
        seen: dict[str, list[str]] = {"first": [], "second": [], "outside": []}
        streams = []
        for action in actions:
            for name, session in (("first", first), ("second", second), ("outside", outside)):
                if name == "second":  # the stream: what an agent's client reads as the turn comes
                    with client.stream("POST", f"/sessions/{session['id']}/step/stream", json={"action": action}) as answer:
                        stream = list(sse_events(answer.iter_lines()))
                    streams.append(stream)
                    done = next(data for event, data in stream if event == "turn_done")
                    seen[name].append((done["record"] if reveal else done)["observation"])
                else:
                    step = client.post(f"/sessions/{session['id']}/step", json={"action": action}).json()
                    seen[name].append(step["observation"])
                    if reveal:
                        assert (step["record"].get(WORLD_KEY) or {}).get("name") == (
                            None if name == "outside" else "grpo-1")
                    else:
                        assert "record" not in step and "world" not in json.dumps(step)
    # Byte-identical in the world (one model call per turn); the model's own answers outside it.
    assert seen["first"] == seen["second"] == ["M-0", "M-2", "M-4"]
    assert seen["outside"] == ["M-1", "M-3", "M-5"] and model.calls == 6
    names = [[event for event, _ in stream] for stream in streams]
    if reveal:  # the simulator's side: the answer came from the world's store
        assert all(stream[1] == "from_world" for stream in names)
        shown = [data for stream in streams for event, data in stream if event == "from_world"]
        assert {(item["world"], item["source"]) for item in shown} == {("grpo-1", "store")}
    else:  # the agent's view: an observation like any other, no trace of the world
        assert all("from_world" not in stream for stream in names)
        assert "grpo-1" not in json.dumps(streams)
    second_file = next(path for path in (tmp_path / "sessions").glob("*.jsonl") if path.stem == second["id"])
    records = read_trajectory(second_file).current_branch()
    assert [record.extra[WORLD_KEY] for record in records] == [{"name": "grpo-1", "from": "store"}] * 3
    assert all(record.tokens["generated"] == 0 for record in records)  # the trajectory keeps it either way


def test_rest_the_servers_world_is_the_default_and_a_session_may_name_another(tmp_path, worlds):
    model = backend("M")
    with served(tmp_path / "sessions", model, shared_world="default-world") as client:
        opened = [client.post("/sessions", json=body).json() for body in
                  ({}, {"shared_world": None}, {"shared_world": "other"})]
        assert [item["shared_world"] for item in opened] == ["default-world", "default-world", "other"]
        observed = [client.post(f"/sessions/{item['id']}/step", json={"action": "ls"}).json()["observation"]
                    for item in opened]
    assert observed == ["M-0", "M-0", "M-1"] and model.calls == 2
    assert sorted(path.name for path in worlds.iterdir()) == ["default-world", "other"]


def test_rest_refuses_a_bad_name_in_one_line_and_opens_no_path(tmp_path, worlds):
    model = backend("M")
    with served(tmp_path / "sessions", model) as client:
        answers = [client.post("/sessions", json={"domain": "terminal", "shared_world": value}) for value in HOSTILE]
        answers.append(client.post("/sessions", content=SURROGATE_BODY, headers={"content-type": "application/json"}))
        sessions = client.get("/sessions").json()
    for value, answer in zip([*HOSTILE, "w\ud800"], answers):
        assert answer.status_code == 422, (value, answer.text)
        body = answer.json()
        assert set(body) == {"error", "hint"} and body["error"].endswith(NOT_A_NAME), body
        assert "Traceback" not in answer.text and len(body["error"]) < 300  # a 10 KB name is shown cut
        assert body["hint"].startswith('Name the world, e.g. `shared_world: "grpo-run-1"`')
    assert "\ufffd" in answers[-1].json()["error"]  # the surrogate is shown as a replacement, never sent back
    assert sessions == [] and model.calls == 0
    assert_nothing_opened(tmp_path, worlds)


def test_a_served_turn_comes_from_the_store_and_nothing_runs_on_the_host(tmp_path, worlds):
    """The sandbox never executes an agent action, a turn its world serves included: the
    store's answer comes back, and the host is as it was."""
    def forbidden(*args, **kwargs):
        raise AssertionError(f"the sandbox tried to execute something on the host: {args!r}")

    host = tmp_path / "host"
    host.mkdir()
    victim = host / "keep.txt"
    victim.write_text("kept", encoding="utf-8")
    marker = host / "marker"
    actions = [f"touch {marker}", f"rm -f {victim}", f"echo changed > {victim}",
               json.dumps([{"keystrokes": f"python3 -c \"open('{marker}.py', 'w')\"\n", "duration": 1}])]
    model = backend("M")
    with served(tmp_path / "sessions", model) as client, pytest.MonkeyPatch.context() as patch:
        for name in ("system", "popen", "execv", "execve", "execvp", "spawnv", "posix_spawn", "fork"):
            if hasattr(os, name):
                patch.setattr(os, name, forbidden)
        patch.setattr(subprocess, "Popen", forbidden)
        runs = []
        for _ in range(2):
            sid = client.post("/sessions", json={"shared_world": "host-safety"}).json()["id"]
            runs.append([client.post(f"/sessions/{sid}/step", json={"action": action}).json() for action in actions])
    first, second = ([step["observation"] for step in run] for run in runs)
    assert first == second == [f"M-{index}" for index in range(len(actions))] and model.calls == len(actions)
    assert all(step["record"][WORLD_KEY]["from"] == "store" for step in runs[1])
    assert sorted(path.name for path in host.iterdir()) == ["keep.txt"]
    assert victim.read_text(encoding="utf-8") == "kept"


# -- awl serve --openenv -----------------------------------------------------------------------


def openenv_tools():
    pytest.importorskip("openenv")
    from tests.serve.test_openenv import episode, openenv_served

    return episode, openenv_served


def test_openenv_episodes_of_one_world_with_one_seed_meet_the_same_observations(tmp_path, worlds):
    episode, openenv_served = openenv_tools()
    model = backend("M")
    actions = ["ls -la", "cat notes.txt", "pwd"]
    with openenv_served(tmp_path / "sessions", model) as url:
        first = episode(url, actions, shared_world="rl-1", seed=7)
        second = episode(url, actions, shared_world="rl-1", seed=7)
        outside = episode(url, actions, seed=7)
    observed = [[step.observation["observation"] for step in run[1]] for run in (first, second, outside)]
    assert observed[0] == observed[1] == ["M-0", "M-1", "M-2"]
    assert observed[2] == ["M-3", "M-4", "M-5"] and model.calls == 6
    # The agent's view: no field says the world served the turn (the trajectory keeps it).
    assert "rl-1" not in json.dumps([step.observation for run in (first, second) for step in run[1]])


def test_openenv_the_servers_world_is_a_resets_default(tmp_path, worlds):
    episode, openenv_served = openenv_tools()
    from agentworld_local.session.spec import SessionSpec

    model = backend("M")
    with openenv_served(tmp_path / "sessions", model, world=SessionSpec(shared_world="served")) as url:
        runs = [episode(url, ["ls"], seed=1), episode(url, ["ls"], seed=1, shared_world=None)]
    assert [run[1][0].observation["observation"] for run in runs] == ["M-0", "M-0"] and model.calls == 1
    assert sorted(path.name for path in worlds.iterdir()) == ["served"]


def test_openenv_refuses_a_bad_name_over_http_and_the_websocket(tmp_path, worlds):
    _, openenv_served = openenv_tools()
    from websockets.sync.client import connect

    model = backend("M")
    with openenv_served(tmp_path / "sessions", model) as url:
        answers = [httpx2.post(f"{url}/reset", json={"shared_world": value}, timeout=None) for value in HOSTILE]
        answers.append(httpx2.post(f"{url}/reset", content=SURROGATE_BODY, headers={"content-type": "application/json"},
                                   timeout=None))
        over_ws = []
        with connect(url.replace("http://", "ws://") + "/ws", open_timeout=None) as socket:
            for value in HOSTILE:
                socket.send(json.dumps({"type": "reset", "data": {"shared_world": value}}))
                over_ws.append(json.loads(socket.recv()))
            socket.send('{"type": "reset", "data": {"shared_world": "w\\ud800"}}')
            over_ws.append(json.loads(socket.recv()))
            socket.send(json.dumps({"type": "reset", "data": {"seed": 1}}))  # the session goes on
            after = json.loads(socket.recv())
    for answer in answers:
        assert answer.status_code == 400, answer.text
        detail = answer.json()["detail"]
        assert NOT_A_NAME in detail and "Traceback" not in detail and detail.count("\n") == 0
    for message in over_ws:
        assert message["type"] == "error" and NOT_A_NAME in message["data"]["message"], message
    assert after["type"] == "observation" and model.calls == 0
    assert_nothing_opened(tmp_path, worlds)


def test_openenv_schema_documents_the_option_in_step_with_the_resets_own_list():
    pytest.importorskip("openenv")
    from agentworld_local.serve.openenv import RESET_OPTIONS
    from agentworld_local.serve.openenv_routes import RESET_FIELDS

    assert "shared_world" in RESET_OPTIONS
    assert set(RESET_FIELDS) == {"seed", "episode_id", *RESET_OPTIONS}


# -- MCP -----------------------------------------------------------------------------------------


def test_mcp_reset_joins_a_world_and_refuses_a_bad_name_as_a_tool_error(tmp_path, worlds):
    anyio = pytest.importorskip("anyio")
    pytest.importorskip("mcp")
    from mcp import Client

    from agentworld_local.env import make
    from agentworld_local.serve.mcp import build_server

    model = backend("M")
    env = make("terminal", backend=model, out_dir=tmp_path / "out")
    env.reset(seed=3)

    async def session() -> dict:
        seen: dict = {"refused": []}
        async with Client(build_server(env)) as client:
            schema = {tool.name: tool for tool in (await client.list_tools()).tools}["reset"].input_schema
            seen["schema"] = schema["properties"]["shared_world"]
            for value in [*HOSTILE, "w\ud800"]:
                seen["refused"].append(await client.call_tool("reset", {"shared_world": value}))
            observed = []
            for world in ("mcp-world", "mcp-world", None):
                await client.call_tool("reset", {"seed": 3, **({"shared_world": world} if world else {})})
                observed.append([_text(await client.call_tool("act", {"action": action})) for action in ("ls", "pwd")])
            seen["observed"] = observed
        return seen

    try:
        seen = anyio.run(session)
    finally:
        env.close()
    assert seen["schema"]["type"] == "string" and "never a path" in seen["schema"]["description"]
    for result in seen["refused"]:
        assert result.is_error and NOT_A_NAME in _text(result) and "Traceback" not in _text(result), _text(result)
    assert seen["observed"] == [["M-0", "M-1"], ["M-0", "M-1"], ["M-2", "M-3"]] and model.calls == 4
    assert sorted(path.name for path in worlds.iterdir()) == ["mcp-world"]


def _text(result) -> str:
    return "".join(block.text for block in result.content)


# -- two awl serve processes, one worlds folder ----------------------------------------------------


def _answer_file(folder: Path, prefix: str) -> Path:
    """`FOLDER/answers.json`: both servers' models are `scripted:answers.json`, one world model
    by name, whose answers differ (each file its own)."""
    folder.mkdir(parents=True)
    path = folder / "answers.json"
    path.write_text(json.dumps({"version": 1, "answers": [{"raw": said(f"{prefix}-{index}"), "chunk": 5}
                                                          for index in range(12)]}), encoding="utf-8")
    return path


def _awl_serve(tmp_path: Path, name: str, answers: Path, port: int, *args: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "agentworld_local.cli.main", "serve", "--model", f"scripted:{answers}",
               "--dir", str(tmp_path / name), "--port", str(port), *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AWL_HOME": str(tmp_path / f"home-{name}"),
           "AWL_WORLDS_DIR": str(tmp_path / "worlds"), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM")
def test_two_awl_serve_processes_sharing_a_worlds_folder_agree(tmp_path):
    # One joins its world with --shared-world (every session's default); the other by the session's field.
    ports = [free_port()]
    while len(ports) < 2:
        ports = [*ports, port] if (port := free_port()) != ports[0] else ports
    servers = [_awl_serve(tmp_path, "one", _answer_file(tmp_path / "a", "P"), ports[0], "--shared-world", "fleet"),
               _awl_serve(tmp_path, "two", _answer_file(tmp_path / "b", "Q"), ports[1])]
    one, two = (f"http://127.0.0.1:{port}" for port in ports)
    try:
        for base, server in zip((one, two), servers):
            wait_ready(base, server, timeout=float("inf"))  # no deadline: pytest-timeout stops a hang

        def session(base: str, **body) -> str:
            return httpx2.post(f"{base}/sessions", json=body, timeout=None).json()["id"]

        def step(base: str, sid: str, action: str) -> str:
            return httpx2.post(f"{base}/sessions/{sid}/step", json={"action": action}, timeout=None).json()["observation"]

        first, second, outside = session(one), session(two, shared_world="fleet"), session(two)
        prefix = ["ls -la", "cat README.md"]
        seen_one = [step(one, first, action) for action in prefix]
        seen_two = [step(two, second, action) for action in prefix]
        own = [step(two, outside, action) for action in prefix]
        # Acting differently on the second server meets its model's answer, which the first then meets too.
        branched = step(two, second, "whoami")
        followed = step(one, first, "whoami")
    finally:
        for server in servers:
            server.send_signal(signal.SIGTERM)
        errors = [server.communicate()[1] for server in servers]
    assert seen_one == seen_two == ["P-0", "P-1"]
    assert own == ["Q-0", "Q-1"] and branched == followed == "Q-2"
    assert "sessions join the shared world fleet unless they name another" in errors[0]
    assert all("Traceback" not in text for text in errors)
    assert sorted(path.name for path in (tmp_path / "worlds").iterdir()) == ["fleet"]


def test_awl_serve_refuses_a_bad_name_before_the_model_loads(tmp_path):
    done = _awl_serve(tmp_path, "bad", tmp_path / "no-such-answers.json", free_port(), "--shared-world", "../x")
    _, err = done.communicate()
    assert done.returncode == 2 and "Traceback" not in err and err.strip().count("\n") == 0
    assert err.startswith("awl: error: `../x` is not a shared world name") and not (tmp_path / "worlds").exists()
