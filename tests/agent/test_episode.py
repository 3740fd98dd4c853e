"""The episode loop in the core: a scripted agent model proposes, the scripted world answers.

Both sides stream realistic raw answers cut at many points; the turns go through the runner
into a real trajectory file, which must hold both sides.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from agentworld_local.agent import AgentHistory, Episode, run_episode
from agentworld_local.agent.episode import (
    APPROVED, AUTO, EDITED, REPLACED, STEPS, STOPPED, TASK, UNREADABLE, Decision, judged,
)
from agentworld_local.agent.model_agent import ModelAgent
from agentworld_local.agent.prompt import action_text, agent_messages
from agentworld_local.agent.runner_world import runner_world
from agentworld_local.domains import get_domain
from agentworld_local.engine.scripted import ScriptedAnswer
from agentworld_local.session.runner import NewSession, SessionRunner
from agentworld_local.session.spec import SessionSpec
from agentworld_local.testing import ScriptedBackend
from agentworld_local.testing.answers import ANSWERS
from agentworld_local.trajectory.reader import read_trajectory

WORLD = [item for item in ANSWERS if not item.several_blocks and item.finish == "stop"]
# What agent models write: a fenced block with words around it, thinking first, a bare command.
AGENT_LS = "I'll start by looking at what is in the working directory.\n\n```bash\nls -la\n```"
AGENT_JSON = '<think>\nThe README should say how to build.\n</think>\n\n[{"keystrokes": "cat README.md\\n", "duration": 1.0}]'
AGENT_PLAIN = "pwd"
AGENT_DONE = "```json\n[]\n```"


def agent_of(answers: list[str], chunk: int = 3, **options) -> tuple[ModelAgent, ScriptedBackend]:
    backend = ScriptedBackend([ScriptedAnswer(raw, chunk=chunk) for raw in answers], name="agent-model", **options)
    return ModelAgent("scripted:agent", backend=backend), backend


class World:
    """A session on the runner over a scripted world model, as a face opens one."""

    def __init__(self, tmp_path: Path, domain: str = "terminal", chunk: int = 3, agent: dict | None = None):
        self.runner = SessionRunner(backend=ScriptedBackend([item.scripted(chunk) for item in WORLD]))
        resolved = SessionSpec(domain=domain, task="Build the project", think="full").resolve()
        self.path = tmp_path / "episode.jsonl"
        opened = list(self.runner.open(NewSession.from_spec(resolved, self.path, agent=agent)).events())
        self.session = str(self.path)
        self.domain = resolved.domain
        self.initial_state = next(event.view.initial_state for _, event in opened if hasattr(event, "view"))

    def history(self) -> AgentHistory:
        return AgentHistory(self.domain, "Build the project", self.initial_state)

    def close(self):
        self.runner.close()


def play(world: World, agent: ModelAgent, *, cancel: threading.Event | None = None, **options):
    """One episode of `agent` in `world`, both closed after it: (its end, the Episode)."""
    try:
        episode = Episode(agent, world.history(), **options)
        return run_episode(episode, runner_world(world.runner, world.session), cancel=cancel), episode
    finally:
        world.close()
        agent.close()


@pytest.mark.parametrize("chunk", [1, 2, 5, 13])
def test_an_episode_records_both_sides_of_each_turn_whatever_the_chunking(tmp_path, chunk):
    agent, agent_backend = agent_of([AGENT_LS, AGENT_JSON, AGENT_PLAIN], chunk=chunk)
    world = World(tmp_path, chunk=chunk, agent=agent.identity)
    streamed: list[str] = []
    end, _ = play(world, agent, steps=3, on_text=lambda piece, ask: streamed.append(piece))
    assert end.reason == STEPS and end.turns == 3 and "3 steps" in end.message
    saved = read_trajectory(world.path)
    assert saved.header.agent["name"] == "agent-model" and saved.header.agent["backend"] == "llama.cpp"
    assert [turn.action_payload for turn in saved.turns] == [
        [{"keystrokes": "ls -la\n", "duration": 1.0}], [{"keystrokes": "cat README.md\n", "duration": 1.0}],
        [{"keystrokes": "pwd\n", "duration": 1.0}]]
    assert [turn.observation for turn in saved.turns] == [item.observation for item in WORLD[:3]]
    # The agent side: what the model wrote (thinking apart), how it became the action.
    assert [turn.agent["proposal"] for turn in saved.turns] == [AGENT_LS, AGENT_JSON.split("</think>\n\n")[1], "pwd"]
    assert {turn.agent["decision"] for turn in saved.turns} == {AUTO}
    assert all(turn.agent["asks"] == 1 for turn in saved.turns)
    assert "".join(streamed) == "".join(turn.agent["proposal"] for turn in saved.turns)
    # The agent read each observation the world answered before its next action.
    last = agent_backend.last_messages
    assert last[-1]["role"] == "user" and WORLD[1].observation in last[-1]["content"]
    assert [m["content"] for m in last if m["role"] == "assistant"] == [action_text(AGENT_LS), action_text(AGENT_JSON.split("</think>\n\n")[1])]


def test_the_domains_own_ending_ends_the_episode_after_its_turn(tmp_path):
    agent, _ = agent_of([AGENT_PLAIN, AGENT_DONE, AGENT_LS])
    world = World(tmp_path)
    end, _ = play(world, agent, steps=10)
    assert end.reason == TASK and end.turns == 2 and "[]" in end.message
    saved = read_trajectory(world.path)
    assert [turn.action_payload for turn in saved.turns][-1] == []
    assert saved.header.agent is None  # no identity given to this session: the header says nothing


def test_an_answer_the_domain_cannot_read_is_asked_again_with_the_parsers_reason(tmp_path):
    agent, backend = agent_of(['[{"keys": "ls"}]', AGENT_PLAIN])
    world = World(tmp_path)
    play(world, agent, steps=1)
    saved = read_trajectory(world.path)
    assert saved.turns[0].agent == {"proposal": "pwd", "decision": AUTO, "asks": 2}
    reask = backend.last_messages[-1]["content"]
    assert 'needs a string "keystrokes" field' in reask  # the parser's own words
    assert backend.last_messages[-2] == {"role": "assistant", "content": '[{"keys": "ls"}]'}


def test_an_answer_that_never_parses_ends_the_episode_with_a_clear_reason(tmp_path):
    agent, _ = agent_of(["I will click the login button now."])
    world = World(tmp_path, domain="web")
    end, _ = play(world, agent, steps=3)
    assert end.reason == UNREADABLE and end.turns == 0
    assert "not a web action, even when asked again" in end.message and "Unknown web action" in end.message
    assert not world.path.exists()  # no turn: the new session leaves no file


@pytest.mark.parametrize("after", [1, 2, 7, 20, 45])
def test_cancel_mid_proposal_stops_the_episode_and_runs_nothing(tmp_path, after):
    agent, _ = agent_of(["I'll list everything, recursively, with sizes: ```\nls -laR /\n```"], chunk=1, delay_s=0.002)
    world = World(tmp_path)
    cancel = threading.Event()
    seen: list[str] = []

    def on_text(piece: str, ask: int) -> None:  # the user presses Esc as the proposal streams
        seen.append(piece)
        if len(seen) == after:
            cancel.set()

    end, episode = play(world, agent, steps=3, on_text=on_text, cancel=cancel)
    assert end.reason == STOPPED and end.turns == 0 and episode.last_proposal.cancelled
    assert not world.path.exists()


def test_a_reviewer_decides_and_the_record_says_how(tmp_path):
    agent, _ = agent_of([AGENT_PLAIN, AGENT_PLAIN, AGENT_PLAIN, AGENT_PLAIN])
    world = World(tmp_path)
    domain = get_domain("terminal")
    answers = iter(["pwd", "pwd -P", "cat /etc/hostname", None])

    def review(proposal):
        text = next(answers)
        return Decision("stop") if text is None else judged(proposal, domain.parse_action(text))

    end, _ = play(world, agent, steps=5, review=review)
    assert end.reason == STOPPED and end.turns == 3
    saved = read_trajectory(world.path)
    assert [(turn.action, turn.agent["decision"], turn.agent["proposal"]) for turn in saved.turns] == [
        ("pwd", APPROVED, "pwd"), ("pwd -P", EDITED, "pwd"), ("cat /etc/hostname", REPLACED, "pwd")]


def test_no_agent_action_is_executed_on_the_host(tmp_path, monkeypatch):
    marker = tmp_path / "made-by-the-agent"
    victim = tmp_path / "keep-me"
    victim.write_text("precious")
    actions = [f"touch {marker}", f"rm -f {victim}", f"python3 -c \"open('{marker}', 'w')\""]
    ran: list[object] = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: ran.append(a) or pytest.fail("a process was started"))
    monkeypatch.setattr(os, "system", lambda *a: ran.append(a) or pytest.fail("a shell was started"))
    agent, _ = agent_of(actions)
    world = World(tmp_path)
    end, _ = play(world, agent, steps=3)
    assert end.turns == 3 and not ran
    assert not marker.exists() and victim.read_text() == "precious"
    assert [turn.action for turn in read_trajectory(world.path).turns] == actions


def test_the_prompt_shows_the_domains_raw_form_the_task_and_the_ending():
    history = AgentHistory(get_domain("terminal"), "Build the project", "user@sandbox:~$ ", [("ls", "README.md")])
    messages = agent_messages(history)
    system = messages[0]["content"]
    assert "Build the project" in system and '"keystrokes"' in system and "`[]`" in system
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert "README.md" in messages[-1]["content"] and messages[2]["content"] == "ls"
    tools = agent_messages(AgentHistory(get_domain("mcp")))[0]["content"]
    assert "read_file" in tools and '{"name": "read_file"' in tools


def test_judged_tells_approved_edited_and_replaced_apart():
    domain = get_domain("terminal")
    from agentworld_local.agent import Proposal

    proposal = Proposal("```\ngrep -rn TODO src\n```", domain.parse_action("grep -rn TODO src"))
    assert judged(proposal, domain.parse_action("grep -rn TODO src")).kind == APPROVED
    assert judged(proposal, domain.parse_action("grep -rn FIXME src")).kind == EDITED
    assert judged(proposal, domain.parse_action("make test")).kind == REPLACED


def test_a_long_episode_leaves_the_oldest_turns_out_of_the_agents_context():
    from agentworld_local.agent.model_agent import AGENT_MAX_TOKENS

    backend = ScriptedBackend(["pwd"], name="agent-model", n_ctx=2 * AGENT_MAX_TOKENS + 900)
    agent = ModelAgent("scripted:agent", backend=backend)
    turns = [(f"cat part{n}.txt", f"part {n}: " + "lorem ipsum " * 40) for n in range(1, 31)]
    try:
        proposal = agent.propose(AgentHistory(get_domain("terminal"), "Read the parts", "$ ", turns))
    finally:
        agent.close()
    assert proposal.action.text == "pwd"
    sent = backend.last_messages
    assert backend.count_tokens(sent, None) <= backend.info.n_ctx - 2 * AGENT_MAX_TOKENS
    assert "earlier turns no longer shown" in sent[1]["content"] and "part 30:" in sent[-1]["content"]
    assert sent[2]["role"] == "assistant" and sent[1]["content"].count("part ") == 1  # starts at a kept turn's observation


def test_an_answer_cut_off_at_the_agents_token_limit_is_no_action(tmp_path):
    rambling = ScriptedAnswer("Let me think about the terminal. " * 20, chunk=4, finish="length")
    backend = ScriptedBackend([rambling, ScriptedAnswer("pwd", chunk=1)], name="agent-model")
    agent = ModelAgent("scripted:agent", backend=backend)
    world = World(tmp_path)
    end, _ = play(world, agent, steps=1)
    assert end.turns == 1
    assert read_trajectory(world.path).turns[0].agent == {"proposal": "pwd", "decision": AUTO, "asks": 2}
    assert "ran on past 1024 tokens without ending" in backend.last_messages[-1]["content"]

    (tmp_path / "second").mkdir()
    end, _ = play(World(tmp_path / "second"), ModelAgent("scripted:agent", backend=ScriptedBackend([rambling])), steps=3)
    assert end.reason == UNREADABLE and "ran on past" in end.message
