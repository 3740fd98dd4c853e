"""Control instructions on the real llama.cpp path (tiny hybrid `qwen35moe` fixture).

A control given at the start enters turn 1's Task Instruction and the trajectory header; one
added mid-session enters the next turn's prompt only, is recorded on that turn, leaves every
earlier prompt unchanged, and costs only its new tokens (the context stays append-only).
"""

from __future__ import annotations

import pytest

from agentworld_local.cli.turn_output import header_for
from agentworld_local.contract.turns import history_observation
from agentworld_local.domains import get_domain
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.errors import InputError
from agentworld_local.scenarios import load_scenario

RATE_LIMIT = "The next tool call fails with a rate limit (HTTP 429)."
DISK_FULL = "The disk is full: writes fail with 'No space left on device'."


@pytest.fixture(scope="module")
def backend(qwen_gguf):
    engine = LlamaBackend(qwen_gguf, n_ctx=16384, gpu_layers=0)
    yield engine
    engine.close()


def make_world(backend, **settings) -> World:
    backend.reset()
    base = SessionSettings(sampling=SamplingConfig(temperature=0.8, max_tokens=16), think=ThinkBudget.parse("4"), seed=5)
    for key, value in settings.items():
        setattr(base, key, value)
    return World(backend, get_domain("terminal"), base)


def task_section(prompt: str) -> str:
    return prompt.split("**Task Instruction:**\n", 1)[1].split("\n\n**", 1)[0] if "**Task Instruction:**" in prompt else ""


def test_a_control_at_the_start_is_in_turn_one_and_the_header(backend):
    world = make_world(backend, task="Free some disk space.", controls=[DISK_FULL])
    first = world.run_turn("df -h")
    assert task_section(first.prompt) == f"Free some disk space.\n\nControl instructions:\n- {DISK_FULL}"
    assert first.controls_added == [], "start controls belong to the header, not to a turn"
    header = header_for(world, scenario=None)
    assert header.controls == [DISK_FULL] and header.task == "Free some disk space."
    second = world.run_turn("ls")
    assert "Control instructions" not in second.prompt


def test_a_mid_session_control_enters_the_next_turn_only(backend, qwen_gguf):
    world = make_world(backend, task="Explore.")
    first = world.run_turn("ls")
    second = world.run_turn("pwd")
    sent = [first.prompt, second.prompt]
    world.add_control(RATE_LIMIT)
    assert world.pending_controls == [RATE_LIMIT]
    # What the model must see on the control turn: the whole conversation, as its template renders it.
    upcoming = world.messages_for(world.turn_prompt(world.domain.parse_action("cat README.md")))
    expected = backend.tokenize(backend.render(upcoming, think=world.settings.think)[1])
    third = world.run_turn("cat README.md")
    assert backend.evaluated_tokens[: len(expected)] == expected
    fourth = world.run_turn("whoami")

    assert task_section(third.prompt) == f"Control instructions:\n- {RATE_LIMIT}"
    assert third.prompt.startswith("### Turn 3\n**Task Instruction:**") and "**Current State:**" not in third.prompt
    assert third.controls_added == [RATE_LIMIT] and fourth.controls_added == [] and world.pending_controls == []
    assert "Control instructions" not in fourth.prompt
    # Append-only: the earlier prompts are unchanged, in the records and in what the model sees.
    assert [first.prompt, second.prompt] == sent
    messages = world.messages_for("### Turn 5\n\n**Action:**\nx")
    assert [m["content"] for m in messages[1:8:2]] == [first.prompt, second.prompt, third.prompt, fourth.prompt]
    assert messages[6]["content"] == history_observation(third.observation)
    # Only the new tokens were evaluated on the control turn and after it.
    for record in (third, fourth):
        assert record.tokens["prompt_evaluated"] * 4 < record.tokens["prompt_total"], record.tokens


def test_undo_makes_the_control_pending_again(backend):
    world = make_world(backend)
    world.run_turn("ls")
    world.add_control(DISK_FULL)
    dropped = world.run_turn("touch x")
    assert dropped.controls_added == [DISK_FULL]
    world.undo()
    assert world.pending_controls == [DISK_FULL]
    again = world.run_turn("echo hi > x")
    assert again.controls_added == [DISK_FULL] and f"- {DISK_FULL}" in again.prompt


def test_a_probe_neither_sees_nor_consumes_pending_controls(backend):
    world = make_world(backend)
    world.run_turn("ls")
    world.add_control(RATE_LIMIT)
    hidden = world.probe("find / -maxdepth 2")
    assert hidden is not None and "Control instructions" not in hidden.prompt
    assert world.pending_controls == [RATE_LIMIT] and len(world.history) == 1
    child = world.fork(1)
    assert child.pending_controls == [RATE_LIMIT], "a fork at the present keeps what is pending"


def test_empty_control_is_refused(backend):
    world = make_world(backend)
    with pytest.raises(InputError, match="empty"):
        world.add_control("   ")


def test_a_scenario_world_and_tools_reach_the_system_prompt(backend):
    city = load_scenario("fictional-city")
    world = World(backend, get_domain(city.domain), city.apply(SessionSettings(think=ThinkBudget.parse("off"))))
    assert "## World description" in world.system_prompt() and "Port Veyra" in world.system_prompt()
    notes = load_scenario("notes-mcp-server")
    # The domain is rebuilt with the scenario's tools: shown to the model, and used to check calls.
    world = World(backend, get_domain("mcp"), notes.apply(SessionSettings(think=ThinkBudget.parse("off"))))
    assert "search_notes" in world.system_prompt() and "list_directory" not in world.system_prompt()
    assert world.domain.parse_action("read_note id=n_51c2").payload == {"name": "read_note", "arguments": {"id": "n_51c2"}}
    backend.reset()
    record = world.run_turn("search_notes Wi-Fi")
    assert record is not None and notes.task in record.prompt
