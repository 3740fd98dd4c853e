"""The agent model on llama-cpp-python's own OpenAI-compatible server over the qwen35moe
fixture (127.0.0.1), through the official client: `awl run --agent openai:NAME@URL` plays a
scripted world for its steps, and the file names the server (never a key)."""

from __future__ import annotations

from agentworld_local.testing.answers import ANSWERS
from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import awl, awl_env, scripted_model
from tests.remote.conftest import SERVED


def test_an_agent_on_llama_cpp_pythons_server_plays_its_steps(tmp_path, llama_server):
    world = scripted_model(tmp_path, *(item.raw for item in ANSWERS if not item.several_blocks), name="world.json")
    out = tmp_path / "s.jsonl"
    env = awl_env(tmp_path, OPENAI_API_KEY="sk-never-written")
    result = awl("run", "-m", world, "--agent", f"openai:{SERVED}@{llama_server.base_url}", "--agent-steps", "2",
                 "--out", str(out), home=tmp_path, env=env)
    assert "Traceback" not in result.stderr
    assert result.returncode == 0, result.stderr  # the fixture's random text reads as terminal commands
    saved = read_trajectory(out)
    assert len(saved.turns) == 2 and all(turn.agent["proposal"] for turn in saved.turns)
    assert saved.header.agent["backend"] == "openai" and saved.header.agent["endpoint"] == llama_server.base_url
    assert saved.header.agent["spec"] == f"openai:{SERVED}@{llama_server.base_url}"
    assert "sk-never-written" not in out.read_text()
