"""The app opens H4's replay screen: from `make_app(replay_path=...)` and from the start
screen's recent sessions."""

from __future__ import annotations

import shutil

import pytest
from textual.widgets import OptionList

from agentworld_local.paths import package_assets
from agentworld_local.tui.app import make_app
from agentworld_local.tui.replay import ReplayScreen
from agentworld_local.tui.start import StartScreen

from tests.tui.helpers import SIZE, wait_for

pytestmark = pytest.mark.anyio

EXAMPLE = package_assets() / "examples" / "terminal-demo.jsonl"


async def test_make_app_with_a_replay_path_opens_the_replay(tmp_path):
    app = make_app(replay_path=EXAMPLE, sessions_dir=tmp_path)
    async with app.run_test(size=SIZE):
        await wait_for(lambda: isinstance(app.screen, ReplayScreen))


async def test_replay_a_recent_session_from_the_start_screen_and_come_back(tmp_path):
    shutil.copy(EXAMPLE, tmp_path / "demo.jsonl")
    app = make_app(sessions_dir=tmp_path, models=[], timings=False)
    async with app.run_test(size=SIZE) as pilot:
        recent = app.screen.query_one("#recent", OptionList)
        recent.highlighted = 0
        await pilot.click("#replay")
        await wait_for(lambda: isinstance(app.screen, ReplayScreen))
        await pilot.press("q")
        await wait_for(lambda: isinstance(app.screen, StartScreen))
