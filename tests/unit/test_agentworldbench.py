"""AgentWorldBench interchange on hand-written rows of every domain.

The official message layout is rebuilt here independently, following the current evaluation
script (QwenLM/Qwen-AgentWorld, eval/eval.py): system message when `system_str` is set; for
each earlier turn k < turn_idx the raw `prompt[k - 1]` and `response[k - 1]`; then
`prompt[turn_idx - 1]`. `current_prompt` is ignored and `turn_idx` is required.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from agentworld_local.agentworldbench.resimulate import bench_world
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.errors import InputError, TrajectoryError
from agentworld_local.agentworldbench.rows import (
    BenchDomain,
    bench_messages,
    import_bench,
    parse_row,
    read_bench_row,
    read_bench_rows,
)
from agentworld_local.agentworldbench.export import trajectory_to_rows
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.trajectory.schema import Header, TurnRecord
from agentworld_local.trajectory.writer import TrajectoryWriter

OBS = "**Environment Observation:**\n"


def official_messages(job: dict) -> list[dict[str, str]]:
    system_prompt = job.get("system_str", "")
    prompts, responses = job.get("prompt", []), job.get("response", [])
    prompts = [prompts] if isinstance(prompts, str) else prompts
    responses = [responses] if isinstance(responses, str) else responses
    turn_idx = job["turn_idx"]
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    for k in range(1, turn_idx):
        messages += [{"role": "user", "content": prompts[k - 1]}, {"role": "assistant", "content": responses[k - 1]}]
    return messages + [{"role": "user", "content": prompts[turn_idx - 1]}]


def fenced(payload: object) -> str:
    return f"```json\n{json.dumps(payload)}\n```"


def first_turn(task: str, state: str, action: str) -> str:
    return f"### Turn 1\n**Task Instruction:**\n{task}\n\n**Current State:**\n{state}\n\n**Action:**\n{action}"


def later_turn(n: int, action: str) -> str:
    return f"### Turn {n}\n**Action:**\n{action}"


# (domain, system_str, task, initial state, [actions], [observations]) -- 3 turns each.
DOMAINS = {
    "terminal": (
        "# Role\nYou simulate a Linux terminal.",
        "Count the Python files.", "root@box:/app# ",
        [json.dumps([{"keystrokes": "ls\n", "duration": 1.0}]), json.dumps([{"keystrokes": "find . -name '*.py' | wc -l\n", "duration": 1.0}]),
         json.dumps([{"keystrokes": "C-c", "duration": 0.5}])],
        ["main.py  tests  README.md\nroot@box:/app# ", "7\nroot@box:/app# ", "^C\nroot@box:/app# "],
    ),
    "swe": (
        "# Role\nYou are a Tool World Model for repository tools.\n\n## Tools\n[{\"name\": \"bash\"}]",
        "Fix the failing test.", "Repository /workspace/calc (git, clean).",
        [fenced({"name": "bash", "arguments": {"command": "pytest -q"}}), fenced({"name": "read_file", "arguments": {"path": "calc/ops.py"}}),
         fenced({"name": "str_replace", "arguments": {"path": "calc/ops.py", "old": "a - b", "new": "a + b"}})],
        ["F.\n1 failed, 1 passed in 0.02s", "def add(a, b):\n    return a - b\n", "The file calc/ops.py has been edited."],
    ),
    "mcp": (
        "# Role and Objective\n\nYou are a **Tool World Model** for an MCP server.",
        "List the open tickets.", '{"server": "helpdesk", "tools": ["list_tickets", "get_ticket"]}',
        [fenced({"name": "list_tickets", "arguments": {"status": "open"}}), fenced({"name": "get_ticket", "arguments": {"id": 42}}),
         fenced({"name": "get_ticket", "arguments": {"id": 99}})],
        ['{"content": [{"type": "text", "text": "[42, 57]"}], "isError": false}', '{"content": [{"type": "text", "text": "Printer on fire"}]}',
         '{"content": [{"type": "text", "text": "ticket 99 not found"}], "isError": true}'],
    ),
    "search": (
        "# Role\nYou simulate a search engine, a page reader and a memory.",
        "Who designed the Veyra tram?", "A new search session.",
        [fenced({"name": "web_search", "arguments": {"query": "Veyra tram designer"}}),
         fenced({"name": "web_extractor", "arguments": {"url": "https://veyra-courier.pv/tram", "goal": "designer"}}),
         fenced({"name": "dict_memory", "arguments": {"key": "designer", "value": "Ilse Maren"}})],
        ["1. Veyra's new tram - veyra-courier.pv/tram\n   Designed by Ilse Maren ...", "# The tram\nDesigned by Ilse Maren (2019).", "Stored `designer`."],
    ),
    "web": (
        "# Role\nYou simulate a web browser's accessibility tree.",
        "Add the jacket to the cart.", "RootWebArea 'Shop'\n\t[12] button 'Add to cart'",
        ["click('12')", "goto('https://shop.example/cart')", "go_back()"],
        ["RootWebArea 'Shop'\n\t[12] button 'Added'\n\t[13] link 'Cart, 1 item'", "RootWebArea 'Cart'\n\t[20] heading 'Your cart'", "RootWebArea 'Shop'"],
    ),
    "os": (
        "# Role\nYou simulate an Ubuntu desktop.",
        "Open the Downloads folder.", "<desktop-frame>\n  <push-button name=\"Files\"/>\n</desktop-frame>",
        ["pyautogui.click(36, 76)", "pyautogui.doubleClick(330, 290)", "pyautogui.hotkey('ctrl', 'w')"],
        ["<desktop-frame>\n  <frame name=\"Home\"/>\n</desktop-frame>", "<desktop-frame>\n  <frame name=\"Downloads\"/>\n</desktop-frame>", "<desktop-frame/>"],
    ),
    "android": (
        "# Role\nYou simulate an Android phone's UI hierarchy.",
        "Turn on dark theme.", '<hierarchy rotation="0"><node text="Settings"/></hierarchy>',
        [json.dumps({"action_type": "click", "x": 540, "y": 1950}), json.dumps({"action_type": "scroll", "direction": "down"}),
         json.dumps({"action_type": "navigate_back"})],
        ['<hierarchy><node text="Display"/></hierarchy>', '<hierarchy><node text="Dark theme"/></hierarchy>', '<hierarchy><node text="Settings"/></hierarchy>'],
    ),
}


def bench_job(domain: str, turn_idx: int, **changes: object) -> dict:
    system_str, task, state, actions, observations = DOMAINS[domain]
    prompts = [first_turn(task, state, actions[0])] + [later_turn(n, a) for n, a in enumerate(actions[1:], start=2)]
    job = {
        "task": domain, "id": 1000 + len(domain), "prompt": prompts, "response": [OBS + o for o in observations],
        "current_prompt": prompts[turn_idx - 1], "system_str": system_str, "turn_idx": turn_idx, "total_turns": len(prompts),
    }
    job.update(changes)
    return job


@pytest.mark.parametrize("domain", sorted(DOMAINS))
@pytest.mark.parametrize("turn_idx", [1, 3])
def test_the_engine_sends_the_official_messages_for_a_row(domain, turn_idx):
    job = bench_job(domain, turn_idx)
    row = parse_row(json.loads(json.dumps(job)), line=1, source="rows.jsonl")
    expected = official_messages(job)
    assert bench_messages(row) == expected
    world = bench_world(row, backend=None)  # the message list needs no model
    assert world.messages_for(row.current) == expected
    assert len(world.history) == turn_idx - 1


@pytest.mark.parametrize("domain", sorted(DOMAINS))
def test_an_imported_trajectory_continues_with_the_official_messages(tmp_path, domain):
    job = bench_job(domain, 3)
    bench = tmp_path / f"{domain}_test.jsonl"
    bench.write_text(json.dumps(job) + "\n", encoding="utf-8")
    [path] = import_bench(bench, tmp_path / "imported")
    traj = read_trajectory(path)
    turns = traj.current_branch()
    assert [t.prompt for t in turns] == job["prompt"] and traj.header.domain == domain
    assert [t.observation for t in turns] == [r[len(OBS):] for r in job["response"]]
    assert traj.header.system_prompt == job["system_str"] and traj.header.model is None
    task, state = DOMAINS[domain][1], DOMAINS[domain][2]
    assert (traj.header.task, traj.header.initial_state) == (task, state)
    # Re-simulating turn 3 from the saved file: the same messages as the official evaluation.
    row = parse_row(job, line=1, source=str(bench))
    world = World(None, BenchDomain(row), SessionSettings(system_prompt=traj.header.system_prompt), history=turns[:2])
    assert world.messages_for(turns[2].prompt) == official_messages(job)


def test_row_variants_the_official_script_accepts():
    job = bench_job("terminal", 2, system_str="", current_prompt="")
    job["response"][0] = "exit status 0"  # no marker: the history keeps it verbatim
    row = parse_row(job, line=1, source="x")
    assert bench_messages(row) == official_messages(job)
    assert bench_messages(row)[0]["role"] == "user", "no system message for an empty system_str"
    assert bench_world(row, None).messages_for(row.current) == official_messages(job)
    assert row.current == job["prompt"][1]
    single = {"task": "benchmarks/mcp", "id": "a-1", "prompt": "### Turn 1\n**Action:**\nping", "response": OBS + "pong", "turn_idx": 1}
    one = parse_row(single, line=1, source="x")
    assert one.domain == "mcp" and bench_messages(one) == official_messages(single)
    assert one.ground_truth == "pong"


def test_the_last_user_message_is_prompt_at_turn_idx_whatever_current_prompt_says():
    # The current official evaluation ignores current_prompt; an older version sent it.
    job = bench_job("terminal", 2, current_prompt="### Turn 2\n**Action:**\nsomething else")
    row = parse_row(job, line=1, source="x")
    assert row.current == job["prompt"][1]
    assert bench_messages(row)[-1] == {"role": "user", "content": job["prompt"][1]}
    assert bench_world(row, None).messages_for(row.current) == official_messages(job)


def test_row_shape_errors_name_the_row_and_the_field(tmp_path):
    good = json.dumps(bench_job("web", 2))
    cases = {
        json.dumps({**bench_job("web", 2), "prompt": 7}): "row 3: field 'prompt' should be a list of strings, not a number",
        json.dumps({**bench_job("web", 2), "response": ["ok", None]}): "row 3: field 'response' item 2 should be a string, not null",
        json.dumps({k: v for k, v in bench_job("web", 2).items() if k != "task"}): "row 3: field 'task' is missing",
        json.dumps({**bench_job("web", 2), "turn_idx": 0}): "row 3: field 'turn_idx' should be a whole number from 1",
        json.dumps({**bench_job("web", 2), "turn_idx": 9, "current_prompt": ""}): "row 3: field 'turn_idx' is 9 but 'prompt' has only 3 turns",
        json.dumps({k: v for k, v in bench_job("web", 2).items() if k != "turn_idx"}): "row 3: field 'turn_idx' is missing",
        json.dumps({**bench_job("web", 3), "response": [OBS + "a"]}): "row 3: field 'turn_idx' is 3 but 'response' has only 1 turn;",
        json.dumps({**bench_job("web", 2), "system_str": ["x"]}): "row 3: field 'system_str' should be a string, not a list",
        '{"task": "web", "id": 1, "prompt": [': "row 3: not valid JSON",
        "[1, 2]": "row 3: expected a JSON object, got a list",
    }
    for bad, fragment in cases.items():
        path = tmp_path / "rows.jsonl"
        path.write_text(f"{good}\n{good}\n{bad}\n", encoding="utf-8")
        with pytest.raises(InputError) as caught:
            read_bench_rows(path)
        line = caught.value.one_line()
        assert f"{path}: {fragment}" in line and "AgentWorldBench row" in line and "\n" not in line
    # Only the chosen row is validated when one row is asked for.
    assert read_bench_row(path, 2).turn_idx == 2
    with pytest.raises(InputError, match="has 3 lines; there is no row 4"):
        read_bench_row(path, 4)


def make_session(path: Path) -> Path:
    """A trajectory as `awl run` writes it, with an undone turn on a side branch."""
    header = Header(domain="terminal", task="look around", initial_state="$ ", system_prompt="You simulate a terminal.")
    prompts = [first_turn("look around", "$ ", '[{"keystrokes": "ls\\n"}]'), later_turn(2, '[{"keystrokes": "pwd\\n"}]'),
               later_turn(2, '[{"keystrokes": "whoami\\n"}]')]
    with TrajectoryWriter.create(path, header) as writer:
        writer.append(TurnRecord(action="ls", prompt=prompts[0], observation="a.txt\n$ "))
        writer.append(TurnRecord(action="pwd", prompt=prompts[1], observation="/home/user\n$ ", parent=1))
        writer.append(TurnRecord(action="whoami", prompt=prompts[2], observation="user\n$ ", parent=1, controls_added=["the disk is full"]))
    return path


def test_export_writes_one_row_per_turn_of_the_current_branch(tmp_path):
    traj = read_trajectory(make_session(tmp_path / "s.jsonl"))
    rows = trajectory_to_rows(traj)
    assert [list(row) for row in rows] == [["task", "id", "prompt", "response", "current_prompt", "system_str", "turn_idx", "total_turns"]] * 2
    assert [row["turn_idx"] for row in rows] == [1, 2] and {row["total_turns"] for row in rows} == {2}
    assert rows[1]["prompt"][1].startswith("### Turn 2") and "whoami" in rows[1]["prompt"][1], "the undone `pwd` is not exported"
    assert rows[1]["response"] == [OBS + "a.txt\n$ ", OBS + "user\n$ "]
    assert rows[0]["current_prompt"] == rows[0]["prompt"][0] and rows[1]["system_str"] == "You simulate a terminal."
    assert isinstance(rows[0]["id"], int) and rows[0]["id"] == trajectory_to_rows(traj)[1]["id"], "one stable id per trajectory"
    # The exported rows are what the model saw: re-simulating row 2 sends turn 2's messages.
    row = parse_row(rows[1], line=2, source="x")
    world = World(None, BenchDomain(row), SessionSettings(system_prompt=traj.header.system_prompt), history=traj.current_branch()[:1])
    assert bench_messages(row) == world.messages_for(traj.current_branch()[1].prompt)


def test_export_import_export_round_trip(tmp_path):
    rows = trajectory_to_rows(read_trajectory(make_session(tmp_path / "s.jsonl")))
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    [path] = import_bench(bench, tmp_path / "out")  # two rows of one trajectory -> one file
    imported = read_trajectory(path)
    assert imported.header.extra["agentworldbench"]["rows"] == [1, 2]
    assert imported.header.task == "look around"
    assert trajectory_to_rows(imported) == rows
    with pytest.raises(InputError, match="already exists"):
        import_bench(bench, tmp_path / "out")


def test_non_canonical_responses_survive_a_round_trip(tmp_path):
    job = bench_job("os", 2)
    job["response"][0] = "Observation: window opened"
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps(job) + "\n", encoding="utf-8")
    [path] = import_bench(bench, tmp_path / "out")
    traj = read_trajectory(path)
    assert traj.current_branch()[0].observation == "Observation: window opened"
    assert trajectory_to_rows(traj)[0]["response"] == job["response"]


def test_a_trajectory_without_prompts_cannot_be_exported(tmp_path):
    demo = Path(__file__).resolve().parents[2] / "assets" / "examples" / "terminal-demo.jsonl"
    traj = read_trajectory(demo)
    if all(t.prompt for t in traj.turns):
        traj = replace(traj, turns=[replace(t, prompt="") for t in traj.turns])
    with pytest.raises(TrajectoryError, match="does not record the prompts"):
        trajectory_to_rows(traj)
