"""`awl mcp`: a simulated machine over MCP, driven by the official SDK's own client over stdio.

The server is spawned as a user's MCP client config would spawn it (`awl mcp --model
scripted:FILE`), with realistic raw answers; every `act` must be a turn of the session file.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

anyio = pytest.importorskip("anyio")
mcp = pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters  # noqa: E402

from agentworld_local.testing.answers import answer, write_answer_file  # noqa: E402
from agentworld_local.trajectory.reader import read_trajectory  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def answer_file(tmp_path: Path, names: list[str], chunk: int = 2) -> Path:
    return write_answer_file(tmp_path / "answers.json", [answer(name) for name in names], chunk=chunk)


def server(tmp_path: Path, *args: str) -> StdioServerParameters:
    """`awl mcp ...` as an MCP client's config starts it: the installed `awl` script."""
    awl = shutil.which("awl", path=str(Path(sys.executable).parent))
    command, first = (awl, []) if awl else (sys.executable, ["-m", "agentworld_local.cli.main"])
    return StdioServerParameters(command=command, args=[*first, "mcp", *args, "--out-dir", str(tmp_path / "out")],
                                 env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=str(ROOT))


def text(result) -> str:
    return "".join(block.text for block in result.content)


def test_an_agent_drives_the_simulated_terminal_and_every_call_is_a_turn(tmp_path):
    answers = answer_file(tmp_path, ["thinking_then_tags", "marker_form"])
    created = tmp_path / "made-by-the-agent"

    async def session() -> dict:
        seen = {}
        async with Client(server(tmp_path, "--model", f"scripted:{answers}", "--think", "full", "--seed", "7")) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            seen["tools"] = sorted(tools)
            seen["act_help"] = tools["act"].description
            seen["start"] = text(await client.call_tool("state", {}))
            seen["first"] = await client.call_tool("act", {"action": "ls -la"})
            seen["state"] = text(await client.call_tool("state", {}))
            seen["host"] = await client.call_tool("act", {"action": f"touch {created}"})
            seen["bad"] = await client.call_tool("act", {"action": '[{"keystrokes": 3}]'})
            seen["undo"] = await client.call_tool("undo", {})
            seen["end"] = await client.call_tool("act", {"action": "[]"})
        return seen

    seen = anyio.run(session)
    assert seen["tools"] == ["act", "reset", "state", "undo"] and "keystrokes" in seen["act_help"]
    assert seen["start"] == "user@sandbox:~$ "
    assert not seen["first"].is_error and text(seen["first"]) == answer("thinking_then_tags").observation
    assert seen["state"] == answer("thinking_then_tags").observation
    assert text(seen["host"]) == answer("marker_form").observation and not created.exists()  # predicted, never run
    assert seen["bad"].is_error and "Keystroke object 1 needs a string" in text(seen["bad"])
    assert not seen["undo"].is_error and text(seen["undo"]) == answer("thinking_then_tags").observation
    assert text(seen["end"]).endswith("[the task was declared finished]")
    (path,) = (tmp_path / "out").glob("*.jsonl")
    saved = read_trajectory(path)
    assert [turn.action for turn in saved.turns] == ["ls -la", f"touch {created}", "[]"]
    assert [turn.turn for turn in saved.turns] == [1, 2, 2]  # the undone turn stays in the file, off the branch
    assert saved.header.seed == 7 and saved.header.domain == "terminal"


def test_a_scenario_s_tools_and_an_undo_with_nothing_to_undo(tmp_path):
    answers = answer_file(tmp_path, ["tags_split_across_chunks"])

    async def session() -> tuple:
        async with Client(server(tmp_path, "--model", f"scripted:{answers}", "--scenario", "notes-mcp-server")) as client:
            nothing = await client.call_tool("undo", {})
            call = await client.call_tool("act", {"action": '{"name": "list_notes", "arguments": {}}'})
            prose = await client.call_tool("act", {"action": "please list my notes"})
            return nothing, call, prose

    nothing, call, prose = anyio.run(session)
    assert nothing.is_error and text(nothing).endswith("There is no action to undo.")
    assert not call.is_error and text(call) == answer("tags_split_across_chunks").observation
    assert prose.is_error and "Invalid action" in text(prose)
    (path,) = (tmp_path / "out").glob("*.jsonl")
    saved = read_trajectory(path)
    assert saved.header.scenario["name"] == "notes-mcp-server" and len(saved.turns) == 1


@pytest.mark.parametrize(("args", "message"), [
    ([], "`awl mcp` needs a model."),
    (["--model", "scripted:missing.json"], "does not exist"),
    (["--model", "scripted:x.json", "--scenario", "no-such-world"], "no-such-world"),
    (["--model", "scripted:x.json", "--think", "sometimes"], "Invalid thinking budget"),
])
def test_a_bad_option_is_one_line_and_no_file(tmp_path, args, message):
    result = subprocess.run([sys.executable, "-m", "agentworld_local.cli.main", "mcp", *args, "--out-dir", str(tmp_path)],
                            cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert result.returncode == 2 and result.stdout == ""
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_concurrent_calls_queue_one_turn_at_a_time(tmp_path):
    """An MCP client may send calls at once; each becomes a whole turn, one after another
    (never refused, never two on the model together). Raced in several rounds."""
    answers = answer_file(tmp_path, ["thinking_then_tags"], chunk=1)
    rounds, width = 3, 4

    async def session() -> list:
        results = []
        async with Client(server(tmp_path, "--model", f"scripted:{answers}", "--think", "full")) as client:
            for number in range(rounds):
                async def call(index: int) -> None:
                    results.append(await client.call_tool("act", {"action": f"echo {number}-{index}"}))

                async with anyio.create_task_group() as group:
                    for index in range(width):
                        group.start_soon(call, index)
                    group.start_soon(client.call_tool, "state", {})
        return results

    results = anyio.run(session)
    assert len(results) == rounds * width
    assert all(not result.is_error and text(result) == answer("thinking_then_tags").observation for result in results)
    (path,) = (tmp_path / "out").glob("*.jsonl")
    saved = read_trajectory(path)
    assert [turn.turn for turn in saved.turns] == list(range(1, rounds * width + 1))
    assert sorted(turn.action for turn in saved.turns) == sorted(f"echo {n}-{i}" for n in range(rounds) for i in range(width))


def awl_mcp_command(tmp_path: Path, *args: str) -> list[str]:
    params = server(tmp_path, *args)
    return [params.command, *params.args]


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_ends_the_server_at_once_even_while_the_client_keeps_stdin_open(tmp_path, signum, code):
    answers = answer_file(tmp_path, ["thinking_then_tags"])
    process = subprocess.Popen(awl_mcp_command(tmp_path, "--model", f"scripted:{answers}"), cwd=ROOT,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert "serving a simulated Linux terminal" in process.stderr.readline()
        process.send_signal(signum)
        assert process.wait() == code  # stdin is still open: the server does not wait for it
        assert "interrupted; no action came in this episode, so it left no file" in process.stderr.read()
    finally:
        process.kill()
        process.wait()
        process.stdin.close()
    assert list((tmp_path / "out").glob("*.jsonl")) == []


def test_a_signal_after_a_turn_keeps_it(tmp_path):
    answers = answer_file(tmp_path, ["thinking_then_tags"])
    pid_file = tmp_path / "pid"
    command = " ".join(shlex.quote(word) for word in awl_mcp_command(tmp_path, "--model", f"scripted:{answers}"))
    params = StdioServerParameters(command="sh", args=["-c", f"echo $$ > {shlex.quote(str(pid_file))}; exec {command}"],
                                   env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=str(ROOT))

    async def session() -> str:
        async with Client(params) as client:
            observation = text(await client.call_tool("act", {"action": "ls -la"}))
            pid = int(pid_file.read_text())
            os.kill(pid, signal.SIGTERM)
            for _ in range(200):  # gone at once, though the client still holds its stdin
                await anyio.sleep(0.05)
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return observation
            raise AssertionError("awl mcp was still running 10 s after SIGTERM")

    try:
        assert anyio.run(session) == answer("thinking_then_tags").observation
    except BaseExceptionGroup as group:  # the client may notice the server left; that is all
        assert not group.subgroup(AssertionError), group
    (path,) = (tmp_path / "out").glob("*.jsonl")
    assert [turn.action for turn in read_trajectory(path).turns] == ["ls -la"]


def test_awl_mcp_on_the_real_llama_path(tmp_path, qwen_gguf):
    created = tmp_path / "made-by-the-agent"

    async def session() -> str:
        async with Client(server(tmp_path, "--model", str(qwen_gguf), "--think", "off", "--max-tokens", "8",
                                 "--ctx", "4096")) as client:
            result = await client.call_tool("act", {"action": f"touch {created}"})
            assert not result.is_error
            return text(await client.call_tool("state", {}))

    state = anyio.run(session)
    (path,) = (tmp_path / "out").glob("*.jsonl")
    (turn,) = read_trajectory(path).turns
    assert turn.action == f"touch {created}" and turn.observation == state and turn.token_count("generated") > 0
    assert not created.exists()
