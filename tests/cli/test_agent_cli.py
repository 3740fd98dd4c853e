"""`awl run --agent`: an agent model proposes, the world model answers, the file holds both.

Through the real entry point: the world model is scripted (realistic raw answers in small
chunks), the agent model is scripted, a GGUF fixture on the real llama.cpp path, or an
OpenAI-compatible server on 127.0.0.1 (tests/remote/fake_openai.py) through the official client.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from agentworld_local.testing.answers import ANSWERS
from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import REPO, assert_one_line_error, awl, awl_env, scripted_model
from tests.remote.fake_openai import FakeOpenAI, Reply

WORLD = [item for item in ANSWERS if not item.several_blocks and item.finish == "stop"]
AGENT = ["I'll look around first.\n\n```bash\nls -la\n```", '[{"keystrokes": "cat README.md\\n", "duration": 1.0}]',
         "pwd", "make test"]


def world(tmp_path):
    return scripted_model(tmp_path, *(item.raw for item in WORLD), name="world.json")


def agent(tmp_path, *answers: str):
    return scripted_model(tmp_path, *answers, chunk=2, name="agent.json")


def test_agent_steps_records_that_many_agent_turns(tmp_path):
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", world(tmp_path), "--agent", agent(tmp_path, *AGENT), "--agent-steps", "3",
                 "--task", "Build the project", "--think", "full", "--out", str(out), home=tmp_path)
    assert result.returncode == 0, result.stderr
    saved = read_trajectory(out)
    assert [turn.action for turn in saved.turns] == ["ls -la", AGENT[1], "pwd"]
    assert [turn.observation for turn in saved.turns] == [item.observation for item in WORLD[:3]]
    assert [turn.agent["proposal"] for turn in saved.turns] == AGENT[:3]
    assert {turn.agent["decision"] for turn in saved.turns} == {"auto"}
    assert saved.header.agent["name"] == "scripted:agent.json" and saved.header.task == "Build the project"
    assert "agent: The agent took 3 steps, the episode's limit." in result.stderr
    assert f"saved 3 turns to {out}" in result.stderr
    replayed = awl("replay", str(out), "--plain", home=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert "agent: scripted:agent.json" in replayed.stdout and "agent proposed" in replayed.stdout


def test_the_domains_stop_condition_ends_the_episode_earlier(tmp_path):
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", world(tmp_path), "--agent", agent(tmp_path, "pwd", "```json\n[]\n```", "ls"),
                 "--agent-steps", "5", "--out", str(out), home=tmp_path)
    assert result.returncode == 0, result.stderr
    saved = read_trajectory(out)
    assert [turn.action_payload for turn in saved.turns] == [[{"keystrokes": "pwd\n", "duration": 1.0}], []]
    assert "agent: The agent ended its task ([])." in result.stderr


def test_a_proposal_that_never_parses_ends_with_one_clear_line(tmp_path):
    result = awl("run", "-m", world(tmp_path), "--agent", agent(tmp_path, "I would click the login button."),
                 "--domain", "web", "--json", home=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("awl: error:")]
    assert len(errors) == 1, result.stderr
    assert "not a web action, even when asked again (Unknown web action" in errors[0]
    assert "Try another --agent model" in errors[0] and "No turn was completed" in errors[0]
    assert not list(tmp_path.glob("sessions/*.jsonl"))


def test_json_events_carry_the_agent_side(tmp_path):
    result = awl("run", "-m", world(tmp_path), "--agent", agent(tmp_path, *AGENT), "--agent-steps", "2", "--json",
                 home=tmp_path)
    assert result.returncode == 0, result.stderr
    done = [json.loads(line) for line in result.stdout.splitlines() if '"turn_done"' in line]
    assert [event["record"]["agent"]["proposal"] for event in done] == AGENT[:2]


@pytest.mark.parametrize(("args", "fragments"), [
    (["--agent-steps", "3"], ("--agent-steps only works with --agent",)),
    (["--approve"], ("--approve only works with --agent",)),
    (["--agent", "scripted:x.json", "--agent-steps", "0"], ("--agent-steps 0 must be at least 1",)),
    (["--agent", "scripted:x.json", "--approve"], ("--approve asks about each proposal at a terminal", "drop --approve")),
    (["--agent", "scripted:x.json", "--resume", "last"], ("--resume cannot go with it",)),
    (["--agent", "scripted:x.json"], ("--agent: The agent's answer file x.json does not exist",)),
    (["--agent", "openai:qwen3"], ("--agent: `openai:qwen3` is not a server model", "openai:MODEL@URL")),
    (["--agent", "no/such/agent.gguf"], ("--agent:", "agent.gguf")),
])
def test_agent_options_are_checked_before_any_model_loads(tmp_path, args, fragments):
    # The world model's own file is missing too: an agent mistake must be said first.
    assert_one_line_error(awl("run", "-m", "scripted:missing.json", *args, home=tmp_path, stdin=""), *fragments)


def test_an_agent_on_an_openai_compatible_server(tmp_path):
    server = FakeOpenAI(replies=[Reply("<think>\nStart by listing.\n</think>\n```\nls -la\n```", separate=True),
                                 Reply("cat README.md")], models=["agent-model"])
    out = tmp_path / "s.jsonl"
    try:
        result = awl("run", "-m", world(tmp_path), "--agent", f"openai:agent-model@{server.base_url}",
                     "--agent-steps", "2", "--out", str(out), home=tmp_path)
    finally:
        server.close()
    assert result.returncode == 0, result.stderr
    saved = read_trajectory(out)
    assert [turn.action for turn in saved.turns] == ["ls -la", "cat README.md"]
    assert saved.header.agent["backend"] == "openai" and saved.header.agent["endpoint"] == server.base_url
    # The agent read the world's first observation before its second action.
    second = server.requests[-1]["messages"]
    assert WORLD[0].observation.strip().splitlines()[0] in second[-1]["content"]
    assert second[-2] == {"role": "assistant", "content": "ls -la"}


def test_a_second_gguf_as_the_agent_on_the_real_llama_path(tmp_path, qwen_gguf):
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", world(tmp_path), "--agent", str(qwen_gguf), "--agent-steps", "2", "--out", str(out),
                 home=tmp_path)
    assert result.returncode == 0, result.stderr  # seeded: the fixture's random weights write 2 "commands"
    saved = read_trajectory(out)
    assert saved.header.agent["architecture"] == "qwen35moe" and saved.header.agent["sha256"]
    assert saved.header.agent["path"] == str(qwen_gguf) and saved.header.model.name == "scripted:world.json"
    assert len(saved.turns) == 2 and all(turn.agent["proposal"].strip() for turn in saved.turns)
    assert "the agent is tiny-qwen35moe" in result.stderr


def test_approve_asks_about_each_proposal_and_records_the_answer():
    from agentworld_local.agent import Proposal
    from agentworld_local.cli.agent_run import TerminalReview
    from agentworld_local.domains import get_domain

    domain = get_domain("terminal")
    proposal = Proposal("```\nls -la\n```", domain.parse_action("ls -la"))
    choices = iter(["", "e", "r", "x", "e", "e", "a", "q"])
    edits = iter(["ls -la /tmp", "make test", '[{"keys": 1}]', "ls -la src"])
    asked_with: list[str] = []

    def edit(prompt: str, text: str) -> str:
        asked_with.append(text)
        return next(edits)

    review = TerminalReview(domain, ask=lambda prompt: next(choices), edit=edit)
    decisions = [review(proposal) for _ in range(4)]
    assert [(d.kind, d.action.text) for d in decisions] == [
        ("approved", "ls -la"), ("edited", "ls -la /tmp"), ("replaced", "make test"), ("edited", "ls -la src")]
    assert asked_with == ["ls -la", "", "ls -la", "ls -la"]  # an edit starts from the proposal, a replacement empty
    assert review(proposal).kind == "approved"  # `a`: this one runs, and the agent runs on its own from here
    assert review(proposal).kind == "auto"
    stopping = TerminalReview(domain, ask=lambda prompt: "q")
    assert stopping(proposal).kind == "stop"
    assert TerminalReview(domain, ask=lambda prompt: (_ for _ in ()).throw(EOFError())).__call__(proposal).kind == "stop"


def test_play_checks_the_agent_options_before_the_screen_opens(tmp_path):
    assert_one_line_error(awl("play", "-m", "scripted:missing.json", "--agent-steps", "2", home=tmp_path),
                          "--agent-steps only works with --agent")


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_the_agent_proposes_keeps_the_finished_turns(tmp_path, signum, code):
    slow = Reply("I am going to look at every file in the tree, one by one, carefully. " * 6 + "\n```\nls -laR /\n```",
                 chunks=(2,), delay_s=0.05)
    server = FakeOpenAI(replies=[Reply("pwd"), slow], models=["agent-model"])
    out = tmp_path / "s.jsonl"
    args = ["run", "-m", world(tmp_path), "--agent", f"openai:agent-model@{server.base_url}", "--agent-steps", "3",
            "--out", str(out)]
    process = subprocess.Popen([sys.executable, "-m", "agentworld_local.cli.main", *args], env=awl_env(tmp_path),
                               cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Until the second proposal streams (its ~10 s of chunks): no deadline, pytest-timeout stops a hang.
        while len(server.requests) < 2 or not server.active or not out.exists() or out.read_text().count("\n") < 2:
            assert process.poll() is None, process.communicate()
            time.sleep(0.02)
        process.send_signal(signum)
        _, stderr = process.communicate()
    finally:
        server.close()
        if process.poll() is None:
            process.kill()
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    saved = read_trajectory(out)
    assert [(turn.action, turn.agent["proposal"]) for turn in saved.turns] == [("pwd", "pwd")]
    assert out.read_text().endswith("\n")  # no half-written line


def test_an_agent_server_that_cannot_be_reached_is_one_line(tmp_path):
    from tests.remote.conftest import free_port

    result = awl("run", "-m", world(tmp_path), "--agent", f"openai:agent-model@http://127.0.0.1:{free_port()}/v1",
                 "--out", str(tmp_path / "s.jsonl"), home=tmp_path)
    assert_one_line_error(result, "127.0.0.1")
    assert not (tmp_path / "s.jsonl").exists()


def test_the_agent_servers_key_comes_from_the_named_variable_and_is_never_written(tmp_path):
    server = FakeOpenAI(replies=[Reply("pwd")], models=["agent-model"], key="agent-secret-1234")
    out = tmp_path / "s.jsonl"
    spec = f"openai:agent-model@{server.base_url}"
    try:
        missing = awl("run", "-m", world(tmp_path), "--agent", spec, "--agent-key-env", "AGENT_KEY", home=tmp_path)
        result = awl("run", "-m", world(tmp_path), "--agent", spec, "--agent-key-env", "AGENT_KEY", "--agent-steps", "1",
                     "--out", str(out), home=tmp_path, env=awl_env(tmp_path, AGENT_KEY="agent-secret-1234"))
    finally:
        server.close()
    assert_one_line_error(missing, "AGENT_KEY", "is not set")
    assert result.returncode == 0, result.stderr
    assert [turn.action for turn in read_trajectory(out).turns] == ["pwd"]
    assert "agent-secret-1234" not in out.read_text() and "agent-secret-1234" not in result.stderr


def test_an_agent_run_with_a_reward_gives_each_turn_its_reward_line_and_event(tmp_path):
    """`awl run --agent ... --reward SPEC`: each agent turn is rewarded as a typed one is."""
    (tmp_path / "halfway.py").write_text("def reward(episode):\n    return 0.5 * len(episode.turns)\n")
    out = tmp_path / "s.jsonl"
    env = {**awl_env(tmp_path), "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    result = awl("run", "-m", world(tmp_path), "--agent", agent(tmp_path, *AGENT), "--agent-steps", "2",
                 "--reward", "halfway:reward", "--json", "--out", str(out), home=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    said = [json.loads(line) for line in result.stdout.splitlines()]
    assert [event["value"] for event in said if event["event"] == "reward"] == [0.5, 1.0]
    assert [line["value"] for line in map(json.loads, out.read_text().splitlines()) if line.get("type") == "reward"] \
        == [0.5, 1.0]
