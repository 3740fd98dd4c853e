"""The agent in the TUI, driven with Textual's pilot: a scripted agent model proposes into
the action line, the user approves (Enter), edits, lets it run (ctrl+l) or stops it (Escape);
the world model is scripted too (realistic answers). The file is checked after each."""

from __future__ import annotations

import pytest

from agentworld_local.agent.model_agent import ModelAgent
from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend
from agentworld_local.trajectory.reader import read_trajectory
from tests.tui.helpers import SIZE, scripted, session_app, session_opened, settle, wait_for, widget_text

pytestmark = pytest.mark.anyio
WORLD = ("thinking_then_tags", "marker_form", "thinking_then_tags", "marker_form", "thinking_then_tags")


def agent(*answers: str, delay_s: float = 0.0) -> ModelAgent:
    backend = ScriptedBackend([ScriptedAnswer(raw, chunk=2) for raw in answers], name="agent-model", delay_s=delay_s)
    return ModelAgent("scripted:agent", backend=backend)


def field(app):
    return app.screen.query_one("#action")


async def proposal_shown(pilot, text: str) -> None:
    await wait_for(lambda: field(pilot.app).value == text, timeout_s=30)
    await pilot.pause()


async def test_approve_and_edit_each_proposal_and_the_file_says_which(tmp_path):
    app = session_app(tmp_path, scripted(*WORLD), agent=agent("```bash\nls -la\n```", "pwd", "pwd"), agent_steps=3)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await proposal_shown(pilot, "ls -la")
        assert "Enter runs it" in widget_text(app, "#agent-proposal")
        await pilot.press("enter")  # approve
        await proposal_shown(pilot, "pwd")
        await pilot.press("space", "minus", "P", "enter")  # edit: `pwd -P`
        await proposal_shown(pilot, "pwd")
        field(app).value = ""
        await pilot.press("w", "h", "o", "a", "m", "i", "enter")  # replace
        await wait_for(lambda: app.screen.agent_loop.end is not None, timeout_s=30)
        await settle(pilot)
        assert "the episode's limit" in widget_text(app, "#agent-proposal")
    saved = read_trajectory(tmp_path / "session.jsonl")
    assert [(turn.action, turn.agent["decision"]) for turn in saved.turns] == [
        ("ls -la", "approved"), ("pwd -P", "edited"), ("whoami", "replaced")]
    assert saved.header.agent["name"] == "agent-model"


async def test_let_it_run_takes_the_remaining_steps_on_its_own(tmp_path):
    app = session_app(tmp_path, scripted(*WORLD), agent=agent("ls", "pwd", "```json\n[]\n```", "ls"), agent_steps=10)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await proposal_shown(pilot, "ls")
        await pilot.press("ctrl+l")
        await wait_for(lambda: app.screen.agent_loop.end is not None, timeout_s=30)
        await settle(pilot)
        assert "ended its task" in widget_text(app, "#agent-proposal")
    saved = read_trajectory(tmp_path / "session.jsonl")
    assert [(turn.action, turn.agent["decision"]) for turn in saved.turns] == [
        ("ls", "auto"), ("pwd", "auto"), ("[]", "auto")]


async def test_escape_mid_proposal_stops_the_agent_and_the_user_goes_on(tmp_path):
    # Seconds of text after "list every": the Escape surely lands mid-proposal, even on a loaded machine.
    slow = "I will now list every file on the machine, " + "one directory at a time, slowly, " * 12 + "```\nls -laR /\n```"
    app = session_app(tmp_path, scripted(*WORLD), agent=agent(slow, delay_s=0.02), agent_steps=3)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await wait_for(lambda: "list every" in widget_text(app, "#agent-proposal"), timeout_s=30)
        await pilot.press("escape")
        await wait_for(lambda: app.screen.agent_loop.end is not None, timeout_s=30)
        assert app.screen.agent_loop.end.reason == "stopped" and field(app).value == ""
        await pilot.press("p", "w", "d", "enter")  # the user types their own action: an ordinary turn
        await settle(pilot)
    saved = read_trajectory(tmp_path / "session.jsonl")
    assert [(turn.action, turn.agent) for turn in saved.turns] == [("pwd", None)]


async def test_quit_mid_proposal_leaves_a_consistent_file(tmp_path):
    slow = "Listing the whole disk now, which takes a while to write out, " * 4 + "```\nls -laR /\n```"
    app = session_app(tmp_path, scripted(*WORLD), agent=agent("ls", slow, delay_s=0.03), agent_steps=3)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await proposal_shown(pilot, "ls")
        await pilot.press("enter")
        await wait_for(lambda: "whole disk" in app.screen.agent_loop._streamed_text, timeout_s=30)
        assert app.screen.agent_loop.end is None  # the agent is mid-proposal
        await app.action_quit()
    saved = read_trajectory(tmp_path / "session.jsonl")
    assert [(turn.action, turn.agent["decision"]) for turn in saved.turns] == [("ls", "approved")]
    assert saved.turns[0].observation


async def test_escape_while_a_proposal_waits_leaves_it_to_the_user_as_their_own_action(tmp_path):
    app = session_app(tmp_path, scripted(*WORLD), agent=agent("ls -la", "pwd"), agent_steps=3)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await proposal_shown(pilot, "ls -la")
        await pilot.press("escape")
        await wait_for(lambda: app.screen.agent_loop.end is not None, timeout_s=30)
        assert field(app).value == "ls -la" and "stopped" in widget_text(app, "#agent-proposal")
        await pilot.press("enter")
        await settle(pilot)
    saved = read_trajectory(tmp_path / "session.jsonl")
    assert [(turn.action, turn.agent) for turn in saved.turns] == [("ls -la", None)]


def agent_branch(app) -> list[tuple[str, str]]:
    return app.screen.agent_loop.history.turns


def file_branch(tmp_path) -> list[tuple[str, str]]:
    return [(turn.action, turn.observation) for turn in read_trajectory(tmp_path / "session.jsonl").current_branch()]


async def test_the_agents_history_is_the_sessions_branch_with_the_users_own_actions_and_undos(tmp_path):
    """The user types an action of their own while the agent proposes, then undoes a turn while
    a proposal waits: the agent's history follows the session's view (each Ready's branch), so
    the agent reads what the file holds, never a copy that drifted from it."""
    # Seconds of text after "list every": the user's Enter surely lands mid-proposal.
    slow = "I will now list every file on the machine, " + "one directory at a time, slowly, " * 20 + "```\nls -laR /\n```"
    agent_model = agent(slow, "whoami", "pwd", delay_s=0.01)
    app = session_app(tmp_path, scripted(*WORLD), agent=agent_model, agent_steps=5)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await wait_for(lambda: "list every" in widget_text(app, "#agent-proposal"), timeout_s=30)
        assert app.screen.agent_loop.proposal is None  # mid-proposal: Enter is the user's own action
        field(app).value = "pwd"  # typed at once: keys pressed one by one wait for the stream to settle
        await pilot.press("enter")
        await proposal_shown(pilot, "ls -laR /")
        await settle(pilot)
        assert [action for action, _ in file_branch(tmp_path)] == ["pwd"]
        assert agent_branch(app) == file_branch(tmp_path)
        await pilot.press("enter")  # approve: the agent's turn
        await proposal_shown(pilot, "whoami")
        await settle(pilot)
        assert [action for action, _ in file_branch(tmp_path)] == ["pwd", "ls -laR /"]
        assert agent_branch(app) == file_branch(tmp_path)
        # What the agent model was asked for "whoami": both turns, the user's own first.
        asked = [message["content"] for message in agent_model._backend.last_messages if message["role"] == "assistant"]
        assert asked == ["pwd", "ls -laR /"]
        await pilot.press("ctrl+z")  # while the proposal waits for the user
        await settle(pilot)
        assert [action for action, _ in file_branch(tmp_path)] == ["pwd"]
        assert agent_branch(app) == file_branch(tmp_path)
        await pilot.press("enter")  # approve whoami: asked again with the branch as it is now
        await proposal_shown(pilot, "pwd")
        await settle(pilot)
        assert [action for action, _ in file_branch(tmp_path)] == ["pwd", "whoami"]
        assert agent_branch(app) == file_branch(tmp_path)
        asked = [message["content"] for message in agent_model._backend.last_messages if message["role"] == "assistant"]
        assert asked == ["pwd", "whoami"]
        await pilot.press("escape")
        await wait_for(lambda: app.screen.agent_loop.end is not None, timeout_s=30)
    saved = read_trajectory(tmp_path / "session.jsonl")
    assert [(turn.action, (turn.agent or {}).get("decision")) for turn in saved.turns] == [
        ("pwd", None), ("ls -laR /", "approved"), ("whoami", "approved")]
