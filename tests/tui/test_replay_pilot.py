"""The TUI replay driven with Textual's pilot: step, jump, switch branch, speed, play, quit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import OptionList, Static

from agentworld_local.examples import pick_example
from agentworld_local.trajectory import Header, TrajectoryWriter, TurnRecord
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.tui.app import make_app
from agentworld_local.tui.replay import ReplayApp, ReplayScreen
from tests.tui.helpers import screen_text

pytestmark = pytest.mark.anyio  # marked at collection, so the snapshot report knows the test ids


def shown(app, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def web_app(**options) -> ReplayApp:
    # click 67 (undone), then click 72, click 107, click 111
    return ReplayApp(read_trajectory(pick_example("web").path), **options)


async def test_opens_at_the_initial_state_and_says_it_is_hand_written():
    async with web_app().run_test(size=(120, 40)) as pilot:
        assert isinstance(pilot.app.screen, ReplayScreen)
        assert "hand-written example, not model output" in shown(pilot.app, "#replay-header")
        assert "[72] link 'Tarn Waterproof Hiking Jacket'" in shown(pilot.app, "#replay-world")
        assert "turn 0/3" in shown(pilot.app, "#replay-status") and "paused" in shown(pilot.app, "#replay-status")


async def test_a_damaged_file_replays_its_intact_turns_and_says_so_on_screen(tmp_path):
    damaged = tmp_path / "damaged.jsonl"
    lines = pick_example("terminal").path.read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3][:40]  # turn 3 cut in the middle: turns 1-2 stay
    damaged.write_text("\n".join(lines) + "\n", encoding="utf-8")
    async with ReplayApp(read_trajectory(damaged)).run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        notes = [notification.message for notification in pilot.app._notifications]
        assert any("line 4 is damaged" in note and "awl fork" in note for note in notes), notes
        assert "turn 0/2" in shown(pilot.app, "#replay-status")


async def test_step_forward_and_back_shows_each_turns_page():
    async with web_app().run_test(size=(120, 40)) as pilot:
        await pilot.press("right")
        assert "Tarn Waterproof Hiking Jacket | Fernhill" in shown(pilot.app, "#replay-world")
        assert "turn 1/3" in shown(pilot.app, "#replay-status")
        await pilot.press("right", "right")
        assert "Added to your cart" in shown(pilot.app, "#replay-world")
        await pilot.press("right")  # the end: stays
        assert "turn 3/3" in shown(pilot.app, "#replay-status")
        await pilot.press("left")
        assert "Added to your cart" not in shown(pilot.app, "#replay-world")
        assert pilot.app.screen.query_one(OptionList).highlighted == 2


async def test_switch_branch_shows_the_undone_turn():
    async with web_app().run_test(size=(120, 40)) as pilot:
        await pilot.press("right", "b")
        assert "undone branch from turn 1" in shown(pilot.app, "#replay-status")
        assert "Drizzle Packable Rain Jacket | Fernhill" in shown(pilot.app, "#replay-world")
        await pilot.press("b")
        assert "current branch" in shown(pilot.app, "#replay-status")


async def test_go_to_turn_and_a_bad_turn_number():
    async with web_app().run_test(size=(120, 40)) as pilot:
        await pilot.press("g")
        await pilot.press(*"3", "enter")
        assert "turn 3/3" in shown(pilot.app, "#replay-status")
        await pilot.press("g")
        await pilot.press(*"9", "enter")
        await pilot.pause()
        assert "turn 3/3" in shown(pilot.app, "#replay-status")  # unchanged, a notice says the range
        assert any("from 0 (the initial state) to 3" in str(n.message) for n in pilot.app._notifications)


async def test_the_go_to_turn_dialog_sits_over_the_replay_without_blanking_it():
    async with web_app().run_test(size=(120, 40)) as pilot:
        await pilot.press("right", "g")
        await pilot.pause()
        visible = screen_text(pilot.app)
        assert "Go to turn (0-3)" in visible
        # The replay stays in sight around the dialog: its header, world and turn list.
        assert "hand-written example" in visible and "Tarn Waterproof Hiking Jacket" in visible and "Turns" in visible
        box = pilot.app.screen.query_one("#dialog-box")
        assert box.region.width < 120 and box.region.height < 20


async def test_play_advances_on_each_beat_and_stops_at_the_end():
    async with web_app().run_test(size=(120, 40)) as pilot:
        screen = pilot.app.screen
        await pilot.press("plus")
        assert "speed 2x" in shown(pilot.app, "#replay-status")
        await pilot.press("space")
        assert "playing" in shown(pilot.app, "#replay-status")
        for _ in range(3):
            screen.beat()  # what the timer calls; no waiting on the clock
        await pilot.pause()
        assert "turn 3/3" in shown(pilot.app, "#replay-status") and "paused" in shown(pilot.app, "#replay-status")


async def test_context_cut_and_regenerated_turn_are_said(tmp_path):
    path = tmp_path / "cut.jsonl"
    writer = TrajectoryWriter.create(path, Header(domain="terminal", initial_state="$ "))
    writer.append(TurnRecord("ls", "a.txt\n$ "))
    writer.append(TurnRecord("cat a.txt", "hello\n$ ", parent=1,
                             context={"omitted_turns": {"first": 1, "last": 1}, "cut": {"tokens": 90}},
                             extra={"attempt": 1}))
    writer.close()
    async with ReplayApp(read_trajectory(path), turn=2).run_test(size=(120, 40)) as pilot:
        notes = shown(pilot.app, "#replay-notes")
        assert "context cut: from here the model no longer sees turn 1" in notes
        assert "regenerated: sample 2 of this turn" in notes


async def test_quit_ends_the_replay_app():
    async with web_app().run_test(size=(120, 40)) as pilot:
        await pilot.press("q")
        await pilot.pause()
        assert pilot.app.return_code == 0 or not pilot.app.is_running


async def test_the_main_app_opens_the_replay_screen_and_q_closes_it(tmp_path):
    app = make_app(replay_path=pick_example("terminal").path, sessions_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert isinstance(pilot.app.screen, ReplayScreen)
        assert "dev@laptop:~/todo-api$" in shown(pilot.app, "#replay-world")


async def test_moving_in_the_turn_list_moves_the_replay():
    async with web_app().run_test(size=(120, 40)) as pilot:
        await pilot.press("end")
        assert "turn 3/3" in shown(pilot.app, "#replay-status")
        await pilot.press("up")
        assert "turn 2/3" in shown(pilot.app, "#replay-status")
        await pilot.press("home")
        assert "turn 0/3" in shown(pilot.app, "#replay-status")


async def test_a_web_page_opens_in_the_browser(monkeypatch):
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda uri, *a, **k: opened.append(uri) or True)
    async with web_app().run_test(size=(120, 40)) as pilot:
        await pilot.press("right", "o")
        await pilot.pause()
        assert len(opened) == 1 and opened[0].startswith("file://") and opened[0].endswith(".html")
        page = Path(opened[0][len("file://"):]).read_text(encoding="utf-8")
        assert "[72]" in page or "Tarn Waterproof Hiking Jacket" in page
        assert "turn 1: click 72" in page
        assert any("Opened" in str(n.message) for n in pilot.app._notifications)
    assert not Path(opened[0][len("file://"):]).exists()  # the temporary page left with the app


async def test_without_a_browser_the_page_file_is_named_instead(monkeypatch):
    monkeypatch.setattr("webbrowser.open", lambda uri, *a, **k: False)  # what it answers over SSH
    async with web_app().run_test(size=(120, 40)) as pilot:
        await pilot.press("right", "o")
        await pilot.pause()
        notes = [str(n.message) for n in pilot.app._notifications]
        assert len(notes) == 1 and "No browser could be opened" in notes[0] and "Opened" not in notes[0], notes
        written = Path(notes[0].split("written to ")[1].split(";")[0])
        assert "turn 1: click 72" in written.read_text(encoding="utf-8")
    assert not written.exists()


async def test_a_file_with_unusable_numbers_plays_to_the_end(tmp_path):
    """A 401-digit integer in a turn's timings crashed the replay screen (issue 15)."""
    from tests.unit.test_trajectory_faults import HOSTILE_NUMBERS, write_hostile_numbers

    path = tmp_path / "numbers.jsonl"
    write_hostile_numbers(path)
    last = len(HOSTILE_NUMBERS)
    async with ReplayApp(read_trajectory(path)).run_test(size=(120, 40)) as pilot:
        await pilot.press("space")
        for _ in range(last):
            pilot.app.screen.beat()  # each beat shows a turn and schedules the next by its recorded time
        await pilot.pause()
        assert f"turn {last}/{last}" in shown(pilot.app, "#replay-status")
        assert f"echo {last}" in screen_text(pilot.app)
        assert pilot.app.return_code in (None, 0)


def test_a_crash_inside_the_replay_screen_is_not_a_success(tmp_path, monkeypatch):
    """Textual reports an exception in the app through `return_code`; `awl replay` exited 0."""
    import functools
    import sys

    from textual.app import App

    from agentworld_local.cli.main import main

    def crash(self) -> None:
        raise RuntimeError("a defect in the screen")

    monkeypatch.setattr(ReplayScreen, "_show", crash)
    monkeypatch.setattr(ReplayApp, "run", functools.partialmethod(App.run, headless=True, size=(120, 40)))
    for stream in (sys.stdin, sys.stdout):
        monkeypatch.setattr(stream, "isatty", lambda: True)
    assert main(["replay", str(pick_example("terminal").path)]) == 1
