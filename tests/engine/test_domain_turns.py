"""Every registered domain runs end to end through the engine (tiny `qwen35moe` fixture)."""

from __future__ import annotations

import pytest

from agentworld_local.domains import domain_names, get_domain
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World

ACTIONS = {
    "terminal": "ls -la",
    "swe": "run_tests tests/test_totals.py",
    "mcp": "read_file path=README.md",
    "search": 'search "best ramen in Osaka"',
    "web": "click 43",
    "os": "double_click 1030 290",
    "android": "tap 5",
}


@pytest.fixture(scope="module")
def backend(qwen_gguf):
    engine = LlamaBackend(qwen_gguf, n_ctx=8192, gpu_layers=0)
    yield engine
    engine.close()


def test_every_domain_has_an_example_turn():
    assert sorted(ACTIONS) == domain_names()


@pytest.mark.parametrize("name", domain_names())
def test_one_real_turn_per_domain(backend, name):
    backend.reset()
    domain = get_domain(name)
    world = World(
        backend, domain, SessionSettings(sampling=SamplingConfig(max_tokens=16), think=ThinkBudget.parse("4"), seed=5)
    )
    action = domain.parse_action(ACTIONS[name])
    record = world.run_turn(ACTIONS[name])

    assert record is not None and record.turn == 1 and world.history == [record]
    assert record.action == ACTIONS[name] and record.action_payload == action.payload
    assert record.prompt.endswith(f"**Action:**\n{action.prompt_text}")
    assert domain.initial_state().strip() in record.prompt
    assert record.tokens["prompt_total"] > 0 and record.tokens["generated"] > 0
    # The model saw this domain's system prompt first.
    assert world.messages_for(record.prompt)[0]["content"] == domain.system_prompt()


def test_a_real_turn_reads_the_prompt_pack_as_its_system_message(backend, tmp_path):
    """The pack's text (with the session's tools filled in) is what the real model reads."""
    from agentworld_local.domains.packs import prompt_from_pack

    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "system_prompt.txt").write_text("Simulate these tools:\n{tool_definitions}\n{demonstrations}", encoding="utf-8")
    backend.reset()
    domain = get_domain("mcp")
    text, identity = prompt_from_pack(tmp_path, domain)
    settings = SessionSettings(sampling=SamplingConfig(max_tokens=8), think=ThinkBudget.parse("off"), seed=5,
                               system_prompt=text, prompt_pack=identity)
    world = World(backend, domain, settings)
    record = world.run_turn("read_file path=README.md")
    assert record is not None and record.tokens["generated"] > 0
    system = world.messages_for(record.prompt)[0]["content"]
    assert system.startswith("Simulate these tools:\n[\n{\"name\": \"list_directory\"") and "{" + "demonstrations}" not in system
