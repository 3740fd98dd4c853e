"""`--speculate mtp`: drafts from the model's multi-token-prediction layer, verified like
prompt-lookup ones, so greedy answers are the same as without them.

The fixture's MTP block passes the trunk's hidden state through (tiny_gguf, mtp="echo"), so
its guess is the trunk's own last prediction: every draft repeats the token it follows only
if the MTP context really received the target's hidden states (a zero or stale state gives
another token). Random weights rarely repeat a token, so these drafts are mostly rejected:
the test proves the plumbing and the rollback; acceptance needs real weights (docs/speculation.md).
"""

from __future__ import annotations

import pytest

from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.errors import AwlError
from agentworld_local.fixtures.tiny_gguf import write_qwen35moe_fixture
from agentworld_local.models.offload_options import OffloadOptions
from tests.engine.test_speculation import run_turns


@pytest.fixture(scope="module")
def mtp_gguf(tmp_path_factory):
    return write_qwen35moe_fixture(tmp_path_factory.mktemp("mtp") / "mtp-echo.gguf", mtp="echo")


def test_greedy_answers_are_the_same_with_mtp_drafts(mtp_gguf):
    sampling = SamplingConfig(temperature=0, max_tokens=24, repetition_guard=False, stop_at_observation=False)
    think = ThinkBudget.parse("off")
    off = LlamaBackend(mtp_gguf, n_ctx=2048, gpu_layers=0, offload=OffloadOptions(speculate="off"))
    try:
        answers, _, context = run_turns(off, sampling, think)
    finally:
        off.close()
    mtp = LlamaBackend(mtp_gguf, n_ctx=2048, gpu_layers=0, offload=OffloadOptions(speculate="mtp"))
    drafts: list[tuple[int, list[int]]] = []
    original = mtp._mtp.draft

    def spy(token: int, position: int, limit: int) -> list[int]:
        drafted = original(token, position, limit)
        drafts.append((token, drafted))
        return drafted

    mtp._mtp.draft = spy
    try:
        answers_mtp, stats, context_mtp = run_turns(mtp, sampling, think)
    finally:
        mtp.close()
    assert answers_mtp == answers and context_mtp == context
    assert stats.drafted == sum(len(d) for _, d in drafts) > 0
    assert all(drafted == [token] * len(drafted) for token, drafted in drafts)  # the echo head saw each true state


def test_mtp_on_a_model_without_an_mtp_layer_is_one_clear_error(qwen_gguf):
    with pytest.raises(AwlError) as error:
        LlamaBackend(qwen_gguf, n_ctx=2048, gpu_layers=0, offload=OffloadOptions(speculate="mtp"))
    assert "no multi-token-prediction (MTP) layer" in error.value.one_line()
    assert "--speculate on" in error.value.one_line()
