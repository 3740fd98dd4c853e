"""SIGKILL a real `awl run` at random moments: every completed turn is kept and the file reads.

A few trials here; `bench/crash_safety.py` runs many and prints counts.
"""

from __future__ import annotations

import random
import sys

import pytest

from bench.crash_safety import ACTIONS, run_trial

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")

_RNG = random.Random(7)
# Two kills at a random time from the start (start-up, load or turns), three soon after a
# given turn was announced, so that some surely land mid-run, between or inside turns.
TRIALS = [(0, _RNG.uniform(0.2, 1.5)), (0, _RNG.uniform(0.2, 1.5)),
          (1, _RNG.uniform(0.0, 0.05)), (3, _RNG.uniform(0.0, 0.05)), (6, _RNG.uniform(0.0, 0.05))]


@pytest.mark.parametrize("after_turns, delay", TRIALS)
def test_a_killed_run_keeps_every_completed_turn(tmp_path, qwen_gguf, after_turns, delay):
    trial = run_trial(qwen_gguf, tmp_path, delay, after_turns=after_turns)
    assert trial.problem == "", trial
    assert trial.kept >= trial.announced >= after_turns
    assert trial.kept <= len(ACTIONS)
