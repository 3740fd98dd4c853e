"""The remote backend's answer path against a real HTTP server on 127.0.0.1 that streams
realistic raw answers, cut at odd points, with thinking in `reasoning_content` or in the
text: what is shown is what is recorded, the messages are the local backend's, a thinking
budget is a stop and a continuation, and cancel closes the stream at once."""

from __future__ import annotations

import threading

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.events import ObservationDelta, ObservationReplaced, ThinkingDelta, TurnFinished
from agentworld_local.engine.remote.backend import OpenAIBackend
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.engine.scripted import ScriptedBackend
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import AnswerChunk, GenerationDone, SamplingConfig, ThinkBudget, ThinkingChunk
from agentworld_local.engine.world import World
from agentworld_local.errors import GenerationError
from agentworld_local.testing.answers import ANSWERS, answer
from tests.remote.fake_openai import Reply

DOMAIN = get_domain("terminal")
#: Odd chunk sizes: tags and the thinking/answer border fall inside pieces.
CUTS = [(1,), (7, 1, 1, 4)]


def play(world: World, action: str):
    """(thinking shown, observation shown, the saved record) for one turn."""
    thinking, shown, record = "", "", None
    for event in world.step(action):
        if isinstance(event, ThinkingDelta):
            thinking += event.text
        elif isinstance(event, ObservationDelta):
            shown += event.text
        elif isinstance(event, ObservationReplaced):
            shown = event.text
        elif isinstance(event, TurnFinished):
            record = event.record
    assert record is not None
    return thinking, shown, record


def remote(fake, **options) -> OpenAIBackend:
    return OpenAIBackend(RemoteOptions(fake.base_url, "world", **options))


@pytest.mark.parametrize("separate", [False, True], ids=["think-in-text", "reasoning-field"])
@pytest.mark.parametrize("item", [a for a in ANSWERS if not a.several_blocks], ids=lambda a: a.name)
def test_shown_equals_recorded_for_every_realistic_answer(fake, item, separate):
    for cuts in CUTS:
        fake.replies[:] = [Reply(item.raw, chunks=cuts, separate=separate, finish=item.finish)]
        backend = remote(fake)
        thinking, shown, record = play(World(backend, DOMAIN, SessionSettings(think=ThinkBudget.parse("full"))), "ls")
        assert shown == record.observation, cuts
        assert (record.observation, record.parse_method) == (item.observation, item.method), cuts
        if "</think>" in item.raw or item.finish != "stop":
            assert thinking.strip() == record.thinking.strip(), cuts
        else:
            # Text passed through after a prompt that may have opened thinking streams as
            # thinking until the turn ends without `</think>`: then it is the answer.
            assert record.thinking == "" and shown == record.observation, cuts
        backend.close()


@pytest.mark.parametrize("think", ["off", "4"])
@pytest.mark.parametrize("separate", [False, True], ids=["think-in-text", "reasoning-field"])
def test_thinking_off_and_budget_record_the_observation(fake, think, separate):
    item = answer("thinking_then_tags")
    fake.replies[:] = [Reply(item.raw, separate=separate)]
    backend = remote(fake)
    thinking, shown, record = play(World(backend, DOMAIN, SessionSettings(think=ThinkBudget.parse(think))), "ls")
    assert shown == record.observation == item.observation
    body = fake.requests[0]
    assert body["chat_template_kwargs"] == {"enable_thinking": think != "off"}
    if think == "off":
        assert thinking == "" and len(fake.requests) == 1
    else:
        assert record.tokens["thinking"] == 4
        # The budget is a stop and a continuation of the same assistant message.
        assert len(fake.requests) == 2
        going_on = fake.requests[1]
        assert going_on["continue_final_message"] is True and going_on["add_generation_prompt"] is False
        last = going_on["messages"][-1]
        assert last["role"] == "assistant"
        assert last["content"] == "<think>\n" + thinking + "\n</think>\n\n"
        assert going_on["messages"][:-1] == body["messages"]


def test_a_server_that_refuses_to_continue_is_named(fake):
    fake.replies[:] = [Reply(answer("thinking_then_tags").raw)]
    fake.continue_supported = False
    world = World(remote(fake), DOMAIN, SessionSettings(think=ThinkBudget.parse("4")))
    with pytest.raises(GenerationError, match="thinking budget cannot be honoured") as caught:
        play(world, "ls")
    assert "--think full" in caught.value.hint


def test_on_llama_server_a_budget_is_said_not_honoured_and_thinking_runs_to_its_end(fake):
    item = answer("thinking_then_tags")
    fake.replies[:] = [Reply(item.raw, separate=True)]
    fake.continue_supported = False
    fake.props = {"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}  # as llama-server says it
    backend = remote(fake)
    assert any("not honoured" in text for text in backend.notices)
    thinking, shown, record = play(World(backend, DOMAIN, SessionSettings(think=ThinkBudget.parse("4"))), "ls")
    assert len(fake.requests) == 1 and record.observation == item.observation
    assert record.thinking.strip() == thinking.strip() and record.tokens["thinking"] > 4


def test_the_messages_are_the_local_backends_turn_after_turn(fake):
    """Same session on the scripted backend and on a server: the same messages, in the official layout."""
    raws = [a.raw for a in ANSWERS[:3]]
    fake.replies[:] = [Reply(raw) for raw in raws]
    local = ScriptedBackend(raws)
    settings = SessionSettings(think=ThinkBudget.parse("full"))
    on_server, here = World(remote(fake), DOMAIN, settings), World(local, DOMAIN, settings)
    sent_here = []
    for action in ("ls", "pwd", "cat README.md"):
        play(on_server, action)
        play(here, action)
        sent_here.append(local.last_messages)
    assert [r["messages"] for r in fake.requests] == sent_here
    assert sent_here[-1][0]["role"] == "system" and [m["role"] for m in sent_here[-1][1:]] == ["user", "assistant"] * 2 + ["user"]


def test_sampling_and_seed_reach_the_server(fake):
    fake.replies[:] = [Reply(answer("thinking_then_tags").raw)]
    backend = remote(fake)
    sampling = SamplingConfig(temperature=0.3, top_p=0.9, top_k=7, min_p=0.05, max_tokens=100)
    list(backend.generate([{"role": "user", "content": "x"}], sampling=sampling, think=ThinkBudget("off"), seed=42))
    body = fake.requests[0]
    assert (body["temperature"], body["top_p"], body["top_k"], body["min_p"], body["seed"]) == (0.3, 0.9, 7, 0.05, 42)
    assert body["stream"] is True and body["model"] == "world"


@pytest.mark.parametrize("separate", [False, True], ids=["think-in-text", "reasoning-field"])
def test_cancel_closes_the_stream_at_once(fake, separate):
    long_thinking = "<think>\n" + "the agent waits; " * 400 + "\n</think>\n<predicted_observation>\nok\n</predicted_observation>"
    fake.replies[:] = [Reply(long_thinking, chunks=(4,), separate=separate, delay_s=0.02)]
    backend = remote(fake)
    for attempt in range(5):  # a race: run it several times
        fake.disconnected.clear()
        cancel = threading.Event()
        events = backend.generate([{"role": "user", "content": "x"}], sampling=SamplingConfig(),
                                  think=ThinkBudget("full"), seed=0, cancel=cancel)
        for event in events:
            if isinstance(event, ThinkingChunk):
                cancel.set()
                break
        rest = list(events)
        done = [e for e in rest if isinstance(e, GenerationDone)]
        assert done and done[0].stats.finish == "cancelled", attempt
        # At once in what it streams (the answer has ~1,700 chunks more), whatever the machine's load.
        assert sum(isinstance(e, ThinkingChunk) for e in rest) <= 2, attempt
        # The server sees the connection go (its next write fails), long before the answer would
        # end (~35 s of chunks; a stream that ends is never "disconnected"): no deadline, pytest-timeout stops a hang.
        assert fake.disconnected.wait(), attempt
    backend.close()


def test_streaming_delivers_pieces_as_they_come(fake):
    fake.replies[:] = [Reply(answer("thinking_then_tags").raw, separate=True, delay_s=0.01)]
    backend = remote(fake)
    kinds = [type(e) for e in backend.generate([{"role": "user", "content": "x"}], sampling=SamplingConfig(),
                                               think=ThinkBudget("full"), seed=0)]
    assert kinds.count(ThinkingChunk) > 5 and kinds.count(AnswerChunk) > 5 and kinds[-1] is GenerationDone
