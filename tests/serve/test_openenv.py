"""`awl serve --openenv`: openenv-core's own server over awl's runner, checked with OpenEnv's own
validator and client (GenericEnvClient over the WebSocket) on a real uvicorn on 127.0.0.1,
over scripted models with realistic answers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openenv")
import httpx2  # noqa: E402
import uvicorn  # noqa: E402
from openenv import GenericEnvClient  # noqa: E402
from websockets.asyncio.client import connect as ws_connect  # noqa: E402
from websockets.exceptions import InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from agentworld_local.serve.limits import ServeLimits  # noqa: E402
from agentworld_local.serve.openenv import make_openenv_app  # noqa: E402
from agentworld_local.serve.server import bind  # noqa: E402
from agentworld_local.session.spec import SessionSpec  # noqa: E402
from agentworld_local.testing import ScriptedBackend  # noqa: E402
from agentworld_local.testing.answers import ANSWERS, answer, write_answer_file  # noqa: E402
from agentworld_local.trajectory.reader import read_trajectory  # noqa: E402
from bench.serve_load import free_port, wait_ready  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHOWN = [item for item in ANSWERS if not item.several_blocks]
#: Connections to the test's own server never go through a proxy.
LOCAL = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


@contextlib.contextmanager
def openenv_served(folder: Path, backend: Any, **options: Any) -> Iterator[str]:
    """The server's base URL; on exit it stops as on Ctrl+C (its shutdown closes every session).
    The socket listens from `bind()` on: a client that comes before uvicorn has started waits in
    its backlog, so nobody waits for the start."""
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(make_openenv_app(folder=folder, backend=backend, **options),
                                           log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


class MeetingBackend(ScriptedBackend):
    """Scripted answers for `parallel` sessions at once (one view each, as a llama model's
    sequences); the first `parallel` generations wait until all of them are in flight, so the
    episodes end only if their turns run side by side (a server that ran one at a time would
    break the meeting instead)."""

    def __init__(self, answers: list[Any], parallel: int) -> None:
        super().__init__(answers, parallel=parallel)
        self.meeting = threading.Barrier(parallel)
        self.met = False

    def _generate(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        if not self.met:
            self.meeting.wait()
            self.met = True
        yield from super()._generate(*args, **kwargs)


def episode(url: str, actions: list[Any], **reset: Any) -> tuple[Any, list[Any], Any]:
    """One episode over OpenEnv's WebSocket client: (the reset's result, each step's, the state)."""
    async def run() -> tuple[Any, list[Any], Any]:
        async with GenericEnvClient(base_url=url, message_timeout_s=1800) as env:
            started = await env.reset(**reset)
            steps = [await env.step(action if isinstance(action, dict) else {"action": action}) for action in actions]
            return started, steps, await env.state()

    return asyncio.run(run())


def test_openenvs_own_validator_passes_against_the_running_server(tmp_path):
    openenv = shutil.which("openenv", path=str(Path(sys.executable).parent))
    command = [openenv] if openenv else [sys.executable, "-m", "openenv.cli"]
    with openenv_served(tmp_path, ScriptedBackend([answer("marker_form").scripted()])) as url:
        done = subprocess.run([*command, "validate", "--url", url], capture_output=True, text=True,
                              env=LOCAL)
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["passed"], report
    assert report["mode"] == "simulation" and report["summary"]["failed_criteria"] == []
    assert {item["id"] for item in report["criteria"]} >= {"openapi_version_available", "health_endpoint",
                                                          "metadata_endpoint", "schema_endpoint", "mcp_endpoint",
                                                          "mode_endpoint_consistency"}


def test_four_episodes_at_once_each_to_done_each_in_its_own_file(tmp_path):
    backend = MeetingBackend([item.scripted(2) for item in SHOWN], parallel=4)
    model_says = {item.observation for item in SHOWN}
    with openenv_served(tmp_path, backend, limits=ServeLimits(max_sessions=4), reveal_simulator=True) as url:
        async def agent(index: int) -> tuple[list[str], Any, list[Any], Any]:
            actions = [f"echo s{index}-t{turn}" for turn in range(3)] + ["[]"]
            async with GenericEnvClient(base_url=url, message_timeout_s=1800) as env:
                started = await env.reset(task=f"agent {index}'s task")
                steps = [await env.step({"action": action}) for action in actions]
                return actions, started, steps, await env.state()

        async def agents() -> list[Any]:
            return await asyncio.gather(*(agent(index) for index in range(4)))

        results = asyncio.run(agents())
    assert backend.calls == 16  # every turn reached the model, and no more
    files = set()
    for actions, started, steps, state in results:
        assert started.observation["turn"] == 0 and started.done is False
        assert started.observation["observation"] == "user@sandbox:~$ "  # the terminal's starting state
        assert [step.done for step in steps] == [False, False, False, True]  # `[]` ends the task
        assert [step.observation["turn"] for step in steps] == [1, 2, 3, 4]
        assert all(step.observation["observation"] in model_says for step in steps)
        path = Path(started.observation["trajectory"])
        assert path.parent == tmp_path and path.stem == started.observation["session_id"] == state["episode_id"]
        saved = read_trajectory(path)
        assert [turn.action for turn in saved.turns] == actions  # exactly its own turns, in order
        assert [turn.observation for turn in saved.turns] == [step.observation["observation"] for step in steps]
        assert saved.header.task == state["task"] == started.observation["task"]
        files.add(path)
    assert len(files) == 4 and set(tmp_path.iterdir()) == files


def test_an_unreadable_action_is_an_observation_with_its_reason_and_no_turn(tmp_path):
    with openenv_served(tmp_path, ScriptedBackend([answer("marker_form").scripted()]), reveal_simulator=True) as url:
        _, (bad, good), state = episode(url, ['[{"keystrokes": 3}]', "pwd"])
    assert bad.done is False and bad.reward == 0.0 and bad.observation["turn"] == 0
    reason = bad.observation["invalid_action"]
    assert bad.observation["observation"] == reason and reason.startswith("Invalid action: Keystroke object 1")
    assert "[]` declares the task done" in reason  # the domain's help: the agent can correct itself
    assert good.observation["observation"] == answer("marker_form").observation and good.observation["turn"] == 1
    assert [turn.action for turn in read_trajectory(Path(state["trajectory"])).turns] == ["pwd"]


def turns_then_endings(episode: Any) -> float:
    """A reward of the user's: the turns so far, +10 when the task ended, +100 on the last step."""
    return len(episode.turns) + (10.0 if episode.terminated else 0.0) + (100.0 if episode.final else 0.0)


def broken_on_the_first_turn(episode: Any) -> float:
    if len(episode.turns) == 1:
        raise ValueError("no score yet")
    return 1.0


def test_a_python_reward_reaches_the_client_and_the_file(tmp_path):
    backend = ScriptedBackend([item.scripted() for item in SHOWN])
    with openenv_served(tmp_path, backend, reward=turns_then_endings, reveal_simulator=True) as url:
        _, steps, state = episode(url, ["ls", {"action": "pwd", "final": True}, "[]"])
        _, unrewarded, _ = episode(url, ["ls"], reward=False)
    with openenv_served(tmp_path / "broken", backend, reward=broken_on_the_first_turn, reveal_simulator=True) as url:
        async def broken() -> Any:
            async with GenericEnvClient(base_url=url, message_timeout_s=1800) as env:
                await env.reset()
                with pytest.raises(RuntimeError, match="broken_on_the_first_turn failed on turn 1: ValueError"):
                    await env.step({"action": "ls"})  # loudly: never a silent 0.0
                return await env.step({"action": "pwd"})

        after = asyncio.run(broken())
    assert after.observation["turn"] == 2 and after.reward == 1.0  # the first turn was saved all the same
    assert [step.reward for step in steps] == [1.0, 102.0, 13.0]
    assert [step.done for step in steps] == [False, False, True]
    assert all(step.observation["reward_source"].endswith("test_openenv.turns_then_endings") for step in steps)
    assert [line["value"] for line in read_trajectory(Path(state["trajectory"])).rewards] == [1.0, 102.0, 13.0]
    assert unrewarded[0].reward == 0.0 and unrewarded[0].observation["reward_source"] is None


def test_an_action_that_would_touch_the_host_is_only_predicted(tmp_path):
    """The sandbox never executes an agent action: what would create, change or delete files
    leaves the host as it was; each observation is the world model's answer."""
    host = tmp_path / "host"
    host.mkdir()
    victim = host / "keep.txt"
    victim.write_text("kept", encoding="utf-8")
    marker = host / "marker"
    actions = [f"touch {marker}", f"rm -f {victim}", f"echo changed > {victim}", f"mkdir {marker}.d",
               json.dumps([{"keystrokes": f"python3 -c \"open('{marker}.py', 'w')\"\n", "duration": 1}])]
    with openenv_served(tmp_path / "sessions", ScriptedBackend([answer("marker_form").scripted()]), reveal_simulator=True) as url:
        _, steps, _ = episode(url, actions)
    assert [step.observation["observation"] for step in steps] == [answer("marker_form").observation] * len(actions)
    assert sorted(path.name for path in host.iterdir()) == ["keep.txt"]
    assert victim.read_text(encoding="utf-8") == "kept"


def test_reset_options_name_the_world_and_a_bad_one_is_one_line(tmp_path):
    with openenv_served(tmp_path, ScriptedBackend([answer("marker_form").scripted()]), reveal_simulator=True) as url:
        started, _, state = episode(url, ["pwd"], episode_id="my-episode", seed=7, initial_state="me@box:/srv$ ",
                                    controls="the disk is full")
        with pytest.raises(RuntimeError, match="Unknown reset option `taks`. reset\\(\\) takes seed"):
            episode(url, [], taks="typo")
        with pytest.raises(RuntimeError, match="The reset option `task` cannot be 3."):
            episode(url, [], task=3)
        with pytest.raises(RuntimeError, match="Unknown domain `nope`"):
            episode(url, [], domain="nope")
        with pytest.raises(RuntimeError, match="Unknown scenario `../secret.toml`: scenarios are opened by name"):
            episode(url, [], scenario="../secret.toml")
        stateless = httpx2.post(f"{url}/step", json={"action": {"action": "ls"}}, timeout=None).json()
        reset = httpx2.post(f"{url}/reset", json={"domain": "nope"}, timeout=None)
    assert started.observation["observation"] == "me@box:/srv$ " and state["seed"] == 7
    assert state["episode_id"] == "my-episode" and Path(state["trajectory"]) == tmp_path / "my-episode.jsonl"
    assert read_trajectory(tmp_path / "my-episode.jsonl").header.controls == ["the disk is full"]
    # OpenEnv's HTTP /step builds a fresh environment per request: no episode, said as an observation.
    assert stateless["done"] is True and "Use the WebSocket /ws" in stateless["observation"]["invalid_action"]
    assert reset.status_code == 400 and reset.json()["detail"].startswith("Unknown domain `nope`.")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["my-episode.jsonl"]


class TokenEnvClient(GenericEnvClient):
    """docs/openenv.md's recipe: GenericEnvClient 0.3 sends no headers, this one sends the token."""

    def __init__(self, base_url: str, token: str, **options: Any) -> None:
        super().__init__(base_url, **options)
        self._headers = {"Authorization": f"Bearer {token}"}

    async def connect(self) -> TokenEnvClient:
        if self._ws is None:
            self._ws = await ws_connect(self._ws_url, open_timeout=self._connect_timeout,
                                        max_size=self._max_message_size, additional_headers=self._headers)
        return self


def test_the_docs_sync_client_runs_an_episode_to_done(tmp_path):
    backend = ScriptedBackend([answer("thinking_then_tags").scripted(), answer("marker_form").scripted()])
    with openenv_served(tmp_path, backend, world=SessionSpec(scenario="disk-full-server"), reveal_simulator=True) as url:
        seen = []
        with GenericEnvClient(base_url=url).sync() as env:
            result = env.reset(task="Find out why the disk is full", seed=7)
            seen.append(result.observation["observation"])
            while not result.done:
                action = "df -h" if result.observation["turn"] == 0 else "[]"
                result = env.step({"action": action})
                seen.append(result.observation["observation"])
            trajectory = Path(env.state()["trajectory"])
    saved = read_trajectory(trajectory)
    assert saved.header.scenario["name"] == "disk-full-server" and saved.header.task == "Find out why the disk is full"
    assert seen == [saved.header.initial_state, *(turn.observation for turn in saved.turns)]
    assert [turn.action for turn in saved.turns] == ["df -h", "[]"]


def test_a_token_guards_every_request_and_the_websocket(tmp_path):
    with openenv_served(tmp_path, ScriptedBackend([answer("marker_form").scripted()]), token="t0ken", reveal_simulator=True) as url:
        assert httpx2.get(f"{url}/health", timeout=None).status_code == 401
        assert httpx2.get(f"{url}/health", headers={"Authorization": "Bearer wrong"}, timeout=None).status_code == 401
        assert httpx2.get(f"{url}/health", headers={"Authorization": "Bearer t0ken"}, timeout=None).json() == {"status": "healthy"}
        ws = url.replace("http", "ws") + "/ws"
        with pytest.raises(InvalidStatus):
            connect(ws).close()
        with connect(ws, additional_headers={"Authorization": "Bearer t0ken"}) as socket:
            socket.send(json.dumps({"type": "reset", "data": {}}))
            assert json.loads(socket.recv())["data"]["observation"]["turn"] == 0
            socket.send(json.dumps({"type": "step", "data": {"action": "pwd"}}))
            said = json.loads(socket.recv())["data"]

        async def with_the_token() -> Any:
            async with TokenEnvClient(url, "t0ken") as env:
                await env.reset()
                return await env.step({"action": "ls"})

        stepped = asyncio.run(with_the_token())
        with pytest.raises(ConnectionError):
            asyncio.run(GenericEnvClient(base_url=url).connect())
    assert said["observation"]["observation"] == answer("marker_form").observation
    assert [turn.action for turn in read_trajectory(Path(said["observation"]["trajectory"])).turns] == ["pwd"]
    assert stepped.observation["turn"] == 1 and stepped.observation["observation"] == answer("marker_form").observation


def test_a_web_page_cannot_drive_the_websocket_nor_a_rebound_host(tmp_path):
    """Browsers apply no CORS to WebSockets: a foreign Origin (a page the user visits) and a
    foreign Host (DNS rebinding) are refused before the socket opens, as on awl serve's REST app."""
    with openenv_served(tmp_path, ScriptedBackend([answer("marker_form").scripted()]), reveal_simulator=True) as url:
        ws = url.replace("http", "ws") + "/ws"
        for headers in ({"Origin": "https://evil.example"}, {"Origin": "null"}):
            with pytest.raises(InvalidStatus) as refused:
                connect(ws, additional_headers=headers).close()
            assert refused.value.response.status_code == 403
        assert httpx2.get(f"{url}/health", headers={"Host": "evil.example"}, timeout=None).status_code == 421
        with connect(ws, additional_headers={"Origin": url}) as socket:  # the server's own page may
            socket.send(json.dumps({"type": "reset", "data": {}}))
            assert json.loads(socket.recv())["data"]["observation"]["turn"] == 0
    assert list((tmp_path).rglob("*.jsonl")) == []  # no refused socket opened a session (nor the reset without a turn)


# -- the command line --------------------------------------------------------------------------

def awl(tmp_path: Path, *args: str, prelude: str = "", env: dict | None = None, **options: Any) -> subprocess.Popen:
    """`awl serve ...` in a process of its own; `prelude`: Python run before the CLI (e.g. to hide a package)."""
    answers = write_answer_file(tmp_path / "answers.json", [answer("marker_form")])
    code = f"import sys\n{prelude}\nfrom agentworld_local.cli.main import main\nsys.exit(main(sys.argv[1:]))"
    command = [sys.executable, "-c", code, "serve", "--model", f"scripted:{answers}",
               "--dir", str(tmp_path / "sessions"), "--port", str(free_port()), *args]
    return subprocess.Popen(command, cwd=ROOT, env={**LOCAL, "PYTHONPATH": str(ROOT), **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options)


@pytest.mark.parametrize("prelude, args, said", [
    ("sys.modules['openenv'] = None", ["--openenv"],
     "awl: error: `awl serve --openenv` needs openenv-core. Install it: pip install 'agentworld-local[openenv]'."),
    ("", ["--domain", "web"], "awl: error: --domain and --scenario choose the world of --openenv sessions."),
    ("", ["--openenv", "--scenario", "no-such-scenario"], "no-such-scenario"),
    ("", ["--openenv", "--max-waiting", "2"], "--max-waiting and --max-tokens-per-turn are limits of awl's REST API"),
])
def test_a_bad_start_is_one_line(tmp_path, prelude, args, said):
    done = awl(tmp_path, *args, prelude=prelude)
    _, err = done.communicate()
    assert done.returncode == 2 and err.strip().count("\n") == 0 and "Traceback" not in err
    assert said in err
    assert not (tmp_path / "sessions").exists() or not any((tmp_path / "sessions").iterdir())


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM")
def test_awl_serve_openenv_serves_episodes_and_sigterm_keeps_every_turn(tmp_path):
    server = awl(tmp_path, "--openenv", "--reveal-simulator", "--domain", "terminal", "--token-env", "MY_TOKEN", env={"MY_TOKEN": "t0ken"})
    try:
        port = server.args[server.args.index("--port") + 1]
        base = f"http://127.0.0.1:{port}"
        wait_ready(base, server, timeout=float("inf"))  # no deadline: pytest-timeout stops a hang
        auth = {"Authorization": "Bearer t0ken"}
        assert httpx2.get(f"{base}/metadata", timeout=None).status_code == 401
        assert httpx2.get(f"{base}/metadata", headers=auth, timeout=None).json()["name"] == "agentworld-local"
        with connect(f"ws://127.0.0.1:{port}/ws", additional_headers=auth) as socket:
            socket.send(json.dumps({"type": "reset", "data": {"task": "print the directory"}}))
            started = json.loads(socket.recv())["data"]["observation"]
            socket.send(json.dumps({"type": "step", "data": {"action": "pwd"}}))
            step = json.loads(socket.recv())["data"]
    finally:
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate()
    assert "the OpenEnv protocol on http://127.0.0.1:" in err and "every session's turns are saved" in err
    assert "Traceback" not in err
    assert step["observation"]["observation"] == answer("marker_form").observation and step["done"] is False
    path = tmp_path / "sessions" / f"{started['session_id']}.jsonl"
    assert [turn.action for turn in read_trajectory(path).turns] == ["pwd"]
    assert list((tmp_path / "sessions").iterdir()) == [path]


def test_an_action_sent_as_json_is_read_as_its_text(tmp_path):
    """A client that decodes the policy's reply as JSON (verifiers does) sends the terminal's
    `[]` as a list: it still ends the task, as the text `[]` does."""
    with openenv_served(tmp_path, ScriptedBackend([answer("marker_form").scripted()]), reveal_simulator=True) as url:
        with connect(url.replace("http", "ws") + "/ws") as socket:
            socket.send(json.dumps({"type": "reset", "data": {}}))
            socket.recv()
            socket.send(json.dumps({"type": "step", "data": {"action": []}}))
            said = json.loads(socket.recv())["data"]
    assert said["done"] is True
    assert [turn.action for turn in read_trajectory(Path(said["observation"]["trajectory"])).turns] == ["[]"]
