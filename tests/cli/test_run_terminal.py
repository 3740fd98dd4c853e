"""`awl run` at a terminal: the load bar, the live line while the model is silent, the
action prompt's line editing and history."""

from __future__ import annotations

import io
import re
import tempfile
from pathlib import Path

from rich.console import Console

from agentworld_local.cli.run import load_backend

_SGR = re.compile(r"\x1b\[[0-9;]*m")


def test_the_load_bar_reaches_the_end_and_each_notice_starts_its_own_line(llama_gguf):
    """It sat at 0% (llama.cpp reports only while it places the weights, the load's last
    moment) and a notice was written on the bar's line ("0%awl: memory estimate ...")."""
    out = io.StringIO()
    backend = load_backend(str(llama_gguf), gpu_layers="0", ctx=None, threads=None, verbose=False, quiet=False,
                           console=Console(file=out, force_terminal=True, width=100))
    backend.close()
    text = _SGR.sub("", out.getvalue())
    assert "100%" in text  # the bar follows llama.cpp's progress to the end
    assert re.search(r"loading tiny-llama-v1\.gguf ━+ +0:00:0\d", text)  # before: a pulse with the time so far
    notices = [match.start() for match in re.finditer("awl: ", text)]
    assert notices, text  # a layer count given: the memory estimate is said
    for start in notices:  # at the start of a line: after a newline, or a carriage return and erase-line
        assert text[:start].endswith(("\n", "\r\x1b[2K")), repr(text[max(0, start - 40):start + 20])
    assert "memory estimate" in text


def _played(raw: str, **printer_options) -> str:
    """One turn of a realistic raw answer (streamed one character a token), printed as at a
    terminal with stdout and stderr on the same screen."""
    from agentworld_local.cli.turn_output import LiveLine, TurnPrinter
    from agentworld_local.domains import get_domain
    from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend
    from agentworld_local.engine.settings import SessionSettings
    from agentworld_local.engine.world import World
    from agentworld_local.session.core import Session

    screen = io.StringIO()
    world = World(ScriptedBackend([ScriptedAnswer(raw, chunk=1)]), get_domain("terminal"), SessionSettings())
    session = Session.create(world, Path(tempfile.mkdtemp()) / "s.jsonl")
    printer = TurnPrinter(as_json=False, out=screen, thoughts=screen, live=True, **printer_options)
    old, LiveLine.INTERVAL_S = LiveLine.INTERVAL_S, 0.0  # every token redraws: the test sees each state
    try:
        for event in session.step("ls"):
            printer.show(event)
    finally:
        LiveLine.INTERVAL_S = old
        session.close()
    return screen.getvalue()


THOUGHT = "<think>\nThe agent lists an empty directory, so only the totals line and the prompt show.\n</think>\n"
ANSWER = "<predicted_observation>\ntotal 0\nroot@box:/app# \n</predicted_observation>"


def test_a_live_line_says_the_phase_tokens_and_speed_until_the_observation_shows():
    """With Gemma 270M the terminal showed nothing for 38 s while the model wrote text that is
    not the observation; now a line on stderr moves with every token until the text comes."""
    screen = _played(THOUGHT + ANSWER, show_thinking=False)
    before, _, after = screen.partition("total 0")
    assert "reading the prompt… 0s" in before
    thinking = [int(n) for n in re.findall(r"thinking… (\d+) tokens?", before)]
    assert thinking and thinking == sorted(thinking) and thinking[-1] >= 60  # one character, one token
    assert re.search(r"answering… \d+ tokens, [\d.]+ tok/s, \d+s", before)
    assert before.endswith("\r\x1b[2K")  # erased before the observation is written
    assert "…" not in after  # once text flows, the line is gone for the turn
    # The newline between `</think>` and the tag is no "(untagged answer)" (it was printed on every turn).
    assert "untagged" not in screen


def test_with_show_thinking_the_thoughts_stream_and_the_line_waits_below_them():
    screen = _played(THOUGHT + ANSWER, show_thinking=True)
    assert "thinking…" not in screen  # the thoughts are the sign of life
    thoughts_end = screen.index("only the totals line and the prompt show.")
    assert re.search(r"answering… \d+ tokens", screen[thoughts_end:])


def test_the_action_prompt_edits_lines_and_recalls_actions_from_the_last_session(tmp_path):
    """At a real terminal: Left moves the cursor (it used to type `^[[D` into the action), and
    Up brings back an action typed in an earlier session (a history file in the data dir)."""
    import shutil

    import pytest

    from agentworld_local.trajectory.reader import read_trajectory
    from tests.cli.helpers import AwlInTmux, scripted_model

    if shutil.which("tmux") is None:
        pytest.skip("needs tmux")
    model = scripted_model(tmp_path, "<predicted_observation>\n/app\nroot@box:/app# \n</predicted_observation>")
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    with AwlInTmux("run", "-m", model, "-o", str(first), home=tmp_path, exited_marker="RUN-EXITED") as term:
        term.wait_for("action>")
        term.keys("p", "d", "Left", "w", "Enter")
        term.wait_for("generated")
        term.keys("C-d")
        screen = term.wait_for("RUN-EXITED-0")
    assert "RUN-EXITED-0" in screen, screen
    assert [turn.action for turn in read_trajectory(first).turns] == ["pwd"]
    assert (tmp_path / "data" / "action_history").read_text(encoding="utf-8").split() == ["pwd"]
    with AwlInTmux("run", "-m", model, "-o", str(second), home=tmp_path, exited_marker="RUN-EXITED") as term:
        term.wait_for("action>")
        term.keys("Up")
        assert "action> pwd" in term.wait_for("action> pwd"), term.screen()
        term.keys("Enter")
        term.wait_for("generated")
        term.keys("C-d")
        screen = term.wait_for("RUN-EXITED-0")
    assert [turn.action for turn in read_trajectory(second).turns] == ["pwd"]


def test_while_the_prompt_is_read_the_seconds_move_and_nothing_is_drawn_after_the_line_stops(monkeypatch):
    """No token comes while a long prompt is read: a ticker redraws the seconds. Once the line
    stops (text flows), the ticker never draws again; start/stop is run many times."""
    import time

    from agentworld_local.cli.turn_output import LiveLine

    monkeypatch.setattr(LiveLine, "TICK_S", 0.01)
    screen = io.StringIO()
    line = LiveLine(screen)
    line.start()
    while screen.getvalue().count("reading the prompt…") < 3:  # the first draw and the ticks (pytest-timeout stops a hang)
        time.sleep(0.01)
    for _ in range(50):
        line.stop()
        stopped = len(screen.getvalue())
        time.sleep(0.02)
        assert len(screen.getvalue()) == stopped  # nothing after stop
        line.start()
        line.count("thinking")  # a token: the ticker leaves the line to the tokens
    line.stop()
    assert screen.getvalue().endswith("\r\x1b[2K")
