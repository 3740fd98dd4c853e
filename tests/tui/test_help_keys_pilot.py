"""F1 lists only the keys that do something in this session: the agent's key only where
there is an agent."""

from __future__ import annotations

import pytest

from agentworld_local.agent.model_agent import ModelAgent
from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend
from tests.tui.helpers import SIZE, scripted, screen_text, session_app, session_opened

pytestmark = pytest.mark.anyio


def agent() -> ModelAgent:
    return ModelAgent("scripted:agent", backend=ScriptedBackend([ScriptedAnswer("ls", chunk=2)], name="agent-model"))


@pytest.mark.parametrize("with_agent", [False, True], ids=["no agent", "an agent"])
async def test_f1_lists_the_agent_key_only_with_an_agent(tmp_path, with_agent):
    options = {"agent": agent(), "agent_steps": 1} if with_agent else {}
    app = session_app(tmp_path, scripted("thinking_then_tags"), **options)
    async with app.run_test(size=SIZE) as pilot:
        await session_opened(pilot)
        await pilot.press("f1")
        await pilot.pause()
        text = screen_text(app)
        assert "Undo" in text
        assert ("Let the agent run" in text) is with_agent
