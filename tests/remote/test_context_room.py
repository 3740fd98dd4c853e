"""A request asks for no more new tokens than the server's known context leaves; when none is left
the error names --max-tokens and --ctx; turn 1 never suggests forking at an earlier turn; a
stream closed before its first piece with a prompt near the context is said to perhaps not fit.
Against loopback servers shaped as vLLM (its context in /v1/models) and as an unknown server."""

from __future__ import annotations

import pytest

from agentworld_local.engine.context_window import overflow_hint
from agentworld_local.engine.remote.backend import OpenAIBackend, estimate_tokens
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.engine.types import GenerationDone, SamplingConfig, ThinkBudget
from agentworld_local.errors import AwlError, GenerationError, RequestRefused
from agentworld_local.testing.answers import answer
from tests.remote.fake_openai import Reply
from tests.remote.test_errors import assert_turn_error, run_remote

ITEM = answer("thinking_then_tags")
SAMPLING = SamplingConfig(max_tokens=4096)
SYSTEM = {"role": "system", "content": "You simulate a terminal."}
TURN_ONE = [SYSTEM, {"role": "user", "content": "ls"}]
TURN_TWO = [SYSTEM, {"role": "user", "content": "ls"}, {"role": "assistant", "content": "a b"},
            {"role": "user", "content": "pwd"}]
#: vLLM's refusal of a max_tokens past its context (vllm/entrypoints/openai/serving_engine.py).
VLLM_TOO_MANY = ("'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum context length is "
                 "2000 tokens and your request has 150 input tokens (4096 > 2000 - 150).")


@pytest.fixture
def answering(fake):
    fake.replies[:] = [Reply(ITEM.raw, separate=True)]
    return fake


def backend(fake, **options) -> OpenAIBackend:
    return OpenAIBackend(RemoteOptions(fake.base_url, "world"), parallel=1, **options)


def run(model: OpenAIBackend, messages, think=ThinkBudget("off")) -> GenerationDone:
    done = list(model.generate(messages, sampling=SAMPLING, think=think, seed=1))[-1]
    assert isinstance(done, GenerationDone)
    return done


def test_a_request_asks_no_more_than_the_known_context_leaves(answering):
    answering.model_extra = {"max_model_len": 2000}  # vLLM
    model = backend(answering)
    assert run(model, TURN_ONE).stats.finish == "stop"
    asked = answering.requests[-1]["max_tokens"]
    assert asked == 2000 - estimate_tokens(TURN_ONE) < 4096
    run(model, TURN_ONE, ThinkBudget("full"))  # no cap asked: the server bounds it by its context itself
    assert "max_tokens" not in answering.requests[-1]
    model.close()


def test_the_users_ctx_is_a_known_context_and_a_guess_is_not(answering):
    run(backend(answering, n_ctx=3000), TURN_ONE)  # --ctx given for a server that says none
    assert answering.requests[-1]["max_tokens"] == 3000 - estimate_tokens(TURN_ONE)
    run(backend(answering), TURN_ONE)  # nothing said, nothing given: awl's 16k is a guess
    assert answering.requests[-1]["max_tokens"] == 4096


def test_a_refusal_that_says_the_room_left_is_asked_again_for_it(answering):
    answering.errors[:] = [(400, VLLM_TOO_MANY)]
    done = run(backend(answering), TURN_ONE)
    assert done.stats.finish == "stop"
    assert [request.get("max_tokens") for request in answering.requests] == [4096, 1850]


def test_a_refusal_of_the_new_tokens_names_max_tokens_and_ctx(answering):
    answering.errors[:] = [(400, "'max_tokens' is too large for this model's maximum context length.")]
    with pytest.raises(RequestRefused) as raised:
        run(backend(answering), TURN_ONE)
    assert "--max-tokens" in raised.value.hint and "--ctx" in raised.value.hint
    assert "longer than the context" not in raised.value.message


def test_no_room_left_is_refused_before_any_request_naming_max_tokens_and_ctx(answering):
    answering.model_extra = {"max_model_len": 2000}
    big = [SYSTEM, {"role": "user", "content": "x" * 8000}]  # ~2,300 tokens by awl's estimate
    with pytest.raises(RequestRefused) as raised:
        run(backend(answering), big)
    assert answering.calls == 0
    error = raised.value
    assert "--max-tokens 4096" in error.message and "server's context of 2,000 tokens" in error.message
    assert "--ctx" in error.hint
    assert "shorter action" in error.hint and "earlier turn" not in error.hint


def test_the_hint_of_a_full_context_fits_the_turn():
    assert "fork the session at an earlier turn" in overflow_hint(TURN_TWO)
    assert "earlier turn" not in overflow_hint(TURN_ONE) and "shorter action" in overflow_hint(TURN_ONE)


def test_a_hundred_kb_action_on_turn_one_gets_a_hint_that_fits(answering, tmp_path):
    """Against a server that refuses it (its context unknown to awl) and one whose context awl knows."""
    answering.context_chars = 50_000
    result, _ = run_remote(answering.base_url, tmp_path, stdin="echo " + "a" * 100_000 + "\n")
    assert_turn_error(result, "longer than the context", "shorter action")
    assert "earlier turn" not in result.stderr
    answering.context_chars = None
    answering.model_extra = {"max_model_len": 16384}
    result, _ = run_remote(answering.base_url, tmp_path / "known", stdin="echo " + "a" * 100_000 + "\n")
    assert_turn_error(result, "leaves no room", "--max-tokens", "--ctx", "shorter action")
    assert "earlier turn" not in result.stderr


def test_a_later_turn_still_suggests_a_fork(answering):
    answering.context_chars = 20
    with pytest.raises(AwlError) as raised:
        run(backend(answering), TURN_TWO)
    assert "fork the session at an earlier turn" in raised.value.hint


def test_a_stream_closed_before_its_first_piece_near_the_context_may_not_fit(answering):
    answering.model_extra = {"max_model_len": 4000}
    near = [SYSTEM, {"role": "user", "content": "y" * 8000}]  # ~2,300 of 4,000 tokens
    answering.raw_answers[:] = [(200, "text/event-stream", b"")] * 2
    with pytest.raises(GenerationError) as raised:
        run(backend(answering), near)
    assert "may not fit the server's context of 4,000 tokens" in raised.value.message
    assert "Check that the server is still running" not in raised.value.hint
    with pytest.raises(GenerationError) as raised:
        run(backend(answering), TURN_ONE)  # a short prompt: the server stopped, as far as awl can tell
    assert "stopped mid-answer" in raised.value.message and "still running" in raised.value.hint


def test_a_prompt_that_alone_fills_the_context_is_said_as_too_long(answering):
    """Older vLLM words both refusals alike; the numbers tell them apart."""
    answering.errors[:] = [(400, "This model's maximum context length is 2000 tokens. However, you requested 6096 "
                                 "tokens (2000 in the messages, 4096 in the completion).")]
    with pytest.raises(RequestRefused) as raised:
        run(backend(answering), TURN_ONE)
    assert "longer than the context" in raised.value.message and "shorter action" in raised.value.hint
    assert len(answering.requests) == 1


def test_a_model_here_says_the_same_on_turn_one():
    from agentworld_local.testing import ScriptedBackend

    model = ScriptedBackend(["<predicted_observation>\nok\n</predicted_observation>"], n_ctx=512)
    for messages, fits in (([SYSTEM, {"role": "user", "content": "x" * 10_000}], "shorter action"),
                           ([*TURN_TWO[:-1], {"role": "user", "content": "x" * 10_000}], "earlier turn")):
        with pytest.raises(AwlError) as raised:
            list(model.generate(messages, sampling=SAMPLING, think=ThinkBudget("off"), seed=1))
        assert fits in raised.value.hint
