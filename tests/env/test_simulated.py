"""The Python API for agents: `agentworld_local.make(...)` and SimulatedEnv over the runner.

The answer path runs on the scripted backend streaming realistic raw answers cut at many
points; one episode runs on the real llama.cpp path with the generated qwen35moe fixture.
"""

from __future__ import annotations

import _thread
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import agentworld_local
from agentworld_local.env import SimulatedEnv, env_ids
from agentworld_local.errors import AwlError, InputError
from agentworld_local.scenarios import load_scenario
from agentworld_local.testing import ScriptedAnswer, ScriptedBackend
from agentworld_local.testing.answers import ANSWERS, answer, write_answer_file
from agentworld_local.trajectory.reader import read_trajectory

SHOWN = [item for item in ANSWERS if not item.several_blocks]


def make_env(tmp_path: Path, answers, name: str = "agentworld/Terminal-v0", **options) -> SimulatedEnv:
    return agentworld_local.make(name, backend=ScriptedBackend(list(answers)), out_dir=tmp_path, think="full",
                                **{"reveal_simulator": True, **options})  # the tests read info's simulator side


@pytest.mark.parametrize("chunk", [1, 2, 5, 17])
def test_each_step_returns_the_observation_the_turn_records_whatever_the_chunking(tmp_path, chunk):
    env = make_env(tmp_path, [item.scripted(chunk) for item in SHOWN])
    try:
        observation, info = env.reset(seed=5)
        assert observation == "user@sandbox:~$ " and info["turn"] == 0 and info["seed"] == 5
        path = Path(info["trajectory"])
        for number, item in enumerate(SHOWN, start=1):
            observation, reward, terminated, truncated, info = env.step(f"echo {number}")
            assert observation == item.observation, item.name
            assert (reward, terminated) == (0.0, False)
            assert truncated is False and info["cut_short"] is (item.finish == "length"), item.name
            assert info["finish"] in (("length", "repetition") if info["cut_short"] else ("stop",))
            assert info["turn"] == number and info["trajectory"] == str(path)
            assert info["tokens"]["generated"] > 0 and "total_s" in info["timings"]
            assert info["action"] == [{"keystrokes": f"echo {number}\n", "duration": 1.0}]
    finally:
        env.close()
    saved = read_trajectory(path)
    assert [turn.observation for turn in saved.turns] == [item.observation for item in SHOWN]
    assert saved.header.domain == "terminal" and saved.header.seed == 5


def test_info_carries_thinking_and_the_answer_that_hit_its_limit_is_cut_short_not_truncated(tmp_path):
    """As in Gymnasium, `truncated` is a step limit's (this env has none); a cut answer is info's."""
    long = answer("unclosed_tag_at_length")
    with make_env(tmp_path, [answer("thinking_then_tags").scripted(), long.scripted()]) as env:
        env.reset()
        _, _, _, truncated, info = env.step("ls -la")
        assert not info["cut_short"] and info["thinking"].startswith("The agent lists /app.") and info["finish"] == "stop"
        observation, _, _, truncated, info = env.step("make")
        assert not truncated and info["cut_short"] and info["finish"] == "length" and observation == long.observation


@pytest.mark.parametrize(("name", "ending", "other"), [
    ("agentworld/Terminal-v0", "[]", "ls"),
    ("agentworld/Web-v0", 'send "the order is placed"', 'click("12")'),
    ("agentworld/Web-v0", 'report_infeasible("no such product")', "scroll down"),
    ("agentworld/OS-v0", "DONE", "click 200 300"),
    ("agentworld/OS-v0", "fail", "wait"),
    ("agentworld/Android-v0", "done", "back"),
    ("agentworld/Android-v0", "infeasible", "home"),
])
def test_terminated_when_the_agent_ends_the_task_in_the_domain_s_own_terms(tmp_path, name, ending, other):
    with make_env(tmp_path, [answer("thinking_then_tags").scripted()], name) as env:
        env.reset()
        assert env.step(other)[2] is False
        assert env.step(ending)[2] is True


def test_a_tool_domain_has_no_ending_action(tmp_path):
    with make_env(tmp_path, [answer("tags_split_across_chunks").scripted()], "agentworld/Search-v0") as env:
        env.reset()
        _, _, terminated, _, info = env.step('{"name": "web_search", "arguments": {"query": "release date"}}')
        assert terminated is False and "invalid_action" not in info


def test_reset_starts_a_new_session_file_and_the_last_one_keeps_its_turns(tmp_path):
    with make_env(tmp_path, [answer("thinking_then_tags").scripted()]) as env:
        _, first = env.reset(seed=1)
        env.step("ls")
        env.step("pwd")
        _, second = env.reset(seed=1)
        assert second["trajectory"] != first["trajectory"]
        assert len(read_trajectory(Path(first["trajectory"])).turns) == 2
        _, third = env.reset()  # the second episode had no turn: it leaves no file
        env.step("ls")
    assert not Path(second["trajectory"]).exists()
    assert sorted(tmp_path.glob("*.jsonl")) == sorted([Path(first["trajectory"]), Path(third["trajectory"])])
    assert len(read_trajectory(Path(third["trajectory"])).turns) == 1


def test_unseeded_resets_follow_the_last_seed_given(tmp_path):
    with make_env(tmp_path, ["<predicted_observation>\nok\n</predicted_observation>"]) as env:
        seeds = []
        for _ in range(2):
            env.reset(seed=42)
            seeds.append([env.reset()[1]["seed"] for _ in range(3)])
        assert seeds[0] == seeds[1] and len(set(seeds[0])) == 3


def test_reset_options_change_the_episode_and_the_header_records_them(tmp_path):
    with make_env(tmp_path, [answer("thinking_then_tags").scripted()]) as env:
        observation, info = env.reset(options={"task": "Free disk space", "initial_state": "root@box:/# "})
        assert observation == "root@box:/# " and info["task"] == "Free disk space"
        env.step("df -h")
        header = read_trajectory(env.trajectory).header
        assert header.task == "Free disk space"
        with pytest.raises(InputError, match="Unknown reset option `seeds`") as raised:
            env.reset(options={"seeds": 3})
        assert "task" in raised.value.hint


def test_a_scenario_id_opens_the_scenario_s_world(tmp_path):
    scenario = load_scenario("disk-full-server")
    with make_env(tmp_path, [answer("thinking_then_tags").scripted()], "agentworld/DiskFullServer-v0") as env:
        observation, info = env.reset()
        assert observation == scenario.initial_state and info["task"] == scenario.task
        env.step("df -h")
        assert read_trajectory(env.trajectory).header.scenario["name"] == "disk-full-server"


def test_every_id_resets_and_steps(tmp_path):
    """One id per domain and per bundled scenario; each opens its world and takes a turn."""
    ids = env_ids()
    assert {entry.domain for entry in ids} == {"terminal", "swe", "mcp", "search", "web", "os", "android"}
    assert len([entry for entry in ids if entry.scenario]) == len(list(Path(agentworld_local.__file__).parent.joinpath(
        "assets", "scenarios").glob("*.toml")))
    for entry in ids:
        with make_env(tmp_path / entry.id.replace("/", "_"), [answer("thinking_then_tags").scripted()], entry.id) as env:
            observation, info = env.reset()
            assert info["domain"] == entry.domain and isinstance(observation, str)
            assert env.domain.name == entry.domain


def test_an_invalid_action_is_no_turn_and_says_why(tmp_path):
    with make_env(tmp_path, [answer("thinking_then_tags").scripted()], "agentworld/MCP-v0") as env:
        env.reset()
        observation, reward, terminated, truncated, info = env.step("list my notes please")
        assert observation.startswith("Invalid action:") and info["invalid_action"] == observation
        assert (reward, terminated, truncated, info["turn"]) == (0.0, False, False, 0)
        assert env.turns == 0
        env.step('{"name": "read_file", "arguments": {"path": "notes.txt"}}')
    assert [turn.turn for turn in read_trajectory(env.trajectory).turns] == [1]


def test_undo_brings_back_the_previous_observation_and_the_file_records_it(tmp_path):
    with make_env(tmp_path, [answer("thinking_then_tags").scripted(), answer("marker_form").scripted()]) as env:
        start, _ = env.reset()
        first = env.step("ls -la")[0]
        env.step("pwd")
        assert env.undo() == first == env.observation
        assert env.undo() == start
        with pytest.raises(AwlError):
            env.undo()
        path = env.trajectory
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [line["type"] for line in lines[1:]] == ["turn", "turn", "undo", "undo"]
    assert read_trajectory(path).head == 0


def test_bad_ids_and_options_are_one_clear_error(tmp_path):
    with pytest.raises(InputError, match="Unknown environment `agentworld/Termnal-v0`") as raised:
        agentworld_local.make("agentworld/Termnal-v0", model="scripted:x.json")
    assert "Did you mean `agentworld/Terminal-v0`?" in raised.value.hint
    with pytest.raises(InputError, match="Unknown option `temprature`") as raised:
        agentworld_local.make("terminal", model="scripted:x.json", temprature=0.2)
    assert "temperature" in raised.value.hint
    with pytest.raises(InputError, match="No model given"):
        agentworld_local.make("terminal")
    with pytest.raises(InputError, match="does not exist"):
        agentworld_local.make("terminal", model=f"scripted:{tmp_path / 'missing.json'}", out_dir=tmp_path)
    with pytest.raises(InputError, match="Invalid thinking budget `sometimes`"):
        agentworld_local.make("terminal", backend=ScriptedBackend(["x"]), think="sometimes", out_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing was written for a refused env
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="Cannot use .*a-file/sessions for the session files") as raised:
        agentworld_local.make("terminal", model="scripted:never-loaded.json", out_dir=tmp_path / "a-file" / "sessions")
    assert "out_dir" in raised.value.hint


def test_step_before_reset_and_after_close_say_what_to_do(tmp_path):
    env = make_env(tmp_path, ["<predicted_observation>\nok\n</predicted_observation>"])
    with pytest.raises(InputError, match="No session is open") as raised:
        env.step("ls")
    assert "reset()" in raised.value.hint
    env.reset()
    env.close()
    env.close()  # a second close does nothing
    with pytest.raises(InputError, match="closed"):
        env.step("ls")


def test_an_action_that_would_touch_the_host_is_only_predicted(tmp_path):
    """The sandbox never executes an agent action: a command that would create, change or
    delete files leaves the host as it was; the world model's answer comes back instead."""
    victim = tmp_path / "keep.txt"
    victim.write_text("kept", encoding="utf-8")
    created = tmp_path / "created-by-agent"
    actions = [f"touch {created}", f"rm -f {victim}", f"echo changed > {victim}", f"mkdir {created}.d",
               json.dumps([{"keystrokes": f"python3 -c \"open('{created}.py', 'w')\"\n", "duration": 1}])]
    with make_env(tmp_path / "out", [answer("empty_observation").scripted()]) as env:
        env.reset()
        for action in actions:
            assert env.step(action)[0] == ""
    assert sorted(path.name for path in tmp_path.iterdir()) == ["keep.txt", "out"]
    assert victim.read_text(encoding="utf-8") == "kept"


def test_an_episode_on_the_real_llama_path(tmp_path, qwen_gguf):
    """The real engine: a seeded reset replays the same sampled observation, every turn is
    saved in the session file, and an action that would create a file creates none."""
    created = tmp_path / "created-by-agent"
    env = agentworld_local.make("agentworld/Terminal-v0", model=str(qwen_gguf), out_dir=tmp_path / "out", think="off",
                                max_tokens=12, load_options={"ctx": 4096}, reveal_simulator=True)
    try:
        runs = []
        for _ in range(2):
            observation, info = env.reset(seed=11)
            steps = [env.step(action) for action in (f"touch {created}", "ls")]
            runs.append([step[0] for step in steps])
            assert all(isinstance(step[0], str) and step[4]["tokens"]["generated"] > 0 for step in steps)
        assert runs[0] == runs[1]
        path = env.trajectory
    finally:
        env.close()
    assert [turn.action for turn in read_trajectory(path).turns] == [f"touch {created}", "ls"]
    assert not created.exists()


def test_ctrl_c_during_a_step_cancels_the_turn_and_the_env_goes_on(tmp_path):
    """A KeyboardInterrupt while the model answers stops that turn at its next token (nothing
    of it is saved) and the next step is accepted; raced at several moments."""
    long = "<think>\n" + " ".join(f"line {n} of the build log" for n in range(100)) + "\n</think>\n<predicted_observation>\nok\n</predicted_observation>"
    quick = "<predicted_observation>\nok\n</predicted_observation>"
    for attempt, delay in enumerate([0.0, 0.01, 0.03, 0.06, 0.1, 0.2]):
        backend = ScriptedBackend([ScriptedAnswer(long, chunk=2), quick], delay_s=0.002)
        with agentworld_local.make("terminal", backend=backend, out_dir=tmp_path / str(attempt), think="full") as env:
            env.reset()
            timer = threading.Timer(delay, _thread.interrupt_main)
            with pytest.raises(KeyboardInterrupt):
                timer.start()  # inside: with no delay the interrupt may land while it starts
                env.step("make")
                while True:  # reached only if the step ended first: the interrupt lands here (pytest-timeout stops a hang)
                    time.sleep(0.01)
            timer.join()
            assert env.turns == 0
            assert env.step("pwd")[0] == "ok"
            path = env.trajectory
        assert [turn.action for turn in read_trajectory(path).turns] == ["pwd"]


def test_controls_may_be_one_string_or_a_list(tmp_path):
    with make_env(tmp_path, ["<predicted_observation>\nok\n</predicted_observation>"], controls="the disk is full") as env:
        env.reset(options={"controls": ["the network is down"]})
        env.step("ls")
        assert read_trajectory(env.trajectory).header.controls == ["the network is down"]
        env.reset()
        env.step("ls")
        assert read_trajectory(env.trajectory).header.controls == ["the disk is full"]
        with pytest.raises(InputError, match="`controls` is a list"):
            env.reset(options={"controls": 3})


def test_a_program_that_ends_without_close_keeps_its_turns_and_leaves_no_empty_file(tmp_path):
    answers = write_answer_file(tmp_path / "answers.json", [answer("thinking_then_tags")])
    code = (
        "import agentworld_local\n"
        f"env = agentworld_local.make('terminal', model='scripted:{answers}', out_dir=r'{tmp_path / 'out'}')\n"
        "env.reset(); env.step('ls -la')\n"
        f"other = agentworld_local.make('terminal', model='scripted:{answers}', out_dir=r'{tmp_path / 'out'}')\n"
        "other.reset()\n"  # never stepped, never closed
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    (path,) = (tmp_path / "out").glob("*.jsonl")
    assert [turn.action for turn in read_trajectory(path).turns] == ["ls -la"]
