"""The llama backend at its limits (tiny hybrid fixture): a full context, two generations at once.

A full context ends the turn with `finish = "length"` and a usable session, never a raw
llama.cpp error; a backend serves one generation at a time.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import llama_cpp
import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.errors import AwlError, BackendBusy

N_CTX = 4096  # the terminal system prompt alone is about 3,200 fixture tokens


@pytest.fixture(scope="module")
def backend(qwen_gguf):
    engine = LlamaBackend(qwen_gguf, n_ctx=N_CTX, gpu_layers=0, notice=lambda text: None)
    yield engine
    engine.close()


def prompt_tokens(backend: LlamaBackend, world: World) -> int:
    messages = world.messages_for(world.turn_prompt(world.domain.parse_action("ls")))
    return len(backend.tokenize(backend.render(messages, think=world.settings.think)[1]))


def world_with_room(backend: LlamaBackend, room: int, *, think: str) -> World:
    """A World whose first prompt leaves `room` tokens (padding the task text to get there)."""
    backend.reset()
    settings = SessionSettings(sampling=SamplingConfig(max_tokens=4096), think=ThinkBudget.parse(think))
    world = World(backend, get_domain("terminal"), settings)
    low, high = 0, 4000
    while low < high:  # the most padding that still leaves `room` tokens
        middle = (low + high + 1) // 2
        settings.task = "check the files " * middle
        if backend.n_ctx - prompt_tokens(backend, world) >= room:
            low = middle
        else:
            high = middle - 1
    settings.task = "check the files " * low
    assert backend.n_ctx - prompt_tokens(backend, world) - room in range(0, 8)
    return world


def test_a_thinking_budget_that_ends_at_the_context_limit_ends_the_turn_with_length(backend):
    """The forced end of thinking needs several tokens; with one left it used to crash llama_decode."""
    world = world_with_room(backend, 13, think="12")
    room = backend.n_ctx - prompt_tokens(backend, world)
    world.settings = replace(world.settings, think=ThinkBudget.parse(str(room - 1)))
    # A random model may end early; some seed thinks until the budget runs out at the limit.
    for seed in range(12):
        backend.reset()
        world.settings = replace(world.settings, seed=seed)
        record = world.run_turn("ls")
        if record.tokens["thinking"] == room - 1:
            break
        world.undo()
    else:
        pytest.fail("no seed thought until the budget ran out")
    assert record.finish == "length"
    # The session goes on: the next turn says that the conversation no longer fits.
    with pytest.raises(AwlError, match="context holds"):
        world.run_turn("pwd")
    world.undo()
    world.settings = replace(world.settings, think=ThinkBudget.parse("4"))
    assert world.run_turn("ls") is not None


def test_sampling_up_to_the_last_slot_ends_with_length(backend):
    world = world_with_room(backend, 10, think="full")
    record = world.run_turn("ls")
    assert record is not None and record.finish in ("length", "stop")
    assert record.tokens["prompt_total"] + record.tokens["generated"] <= backend.n_ctx


def test_a_second_generation_on_the_same_backend_is_refused_at_once(backend):
    backend.reset()
    settings = SessionSettings(sampling=SamplingConfig(max_tokens=8), think=ThinkBudget.parse("4"))
    first = World(backend, get_domain("terminal"), settings)
    second = World(backend, get_domain("terminal"), settings)
    steps = first.step("ls")
    next(steps)  # the first turn is streaming
    with pytest.raises(BackendBusy):
        second.run_turn("pwd")
    with pytest.raises(BackendBusy):
        first.probe("ls")
    with pytest.raises(BackendBusy):
        backend.reset()
    # The first turn was not disturbed and finishes; then the backend is free again.
    record = [event for event in steps][-1].record
    assert record.turn == 1 and record.finish in ("stop", "length")
    assert second.run_turn("pwd") is not None


def test_a_generation_from_another_thread_is_refused_and_never_reaches_llama_cpp(backend, monkeypatch):
    backend.reset()
    settings = SessionSettings(sampling=SamplingConfig(max_tokens=8), think=ThinkBudget.parse("4"))
    steps = World(backend, get_domain("terminal"), settings).step("ls")
    next(steps)
    decodes = []
    original = llama_cpp.llama_decode  # every decode of the context goes through it (engine/llama/batching.py)
    monkeypatch.setattr(llama_cpp, "llama_decode", lambda ctx, batch: (decodes.append(threading.get_ident()),
                                                                       original(ctx, batch))[1])
    errors = []

    def other() -> None:
        try:
            World(backend, get_domain("terminal"), settings).run_turn("pwd")
        except BackendBusy as error:
            errors.append(error)

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert len(errors) == 1 and "generating" in errors[0].message
    assert thread.ident not in decodes
    list(steps)


def test_a_dropped_generation_frees_the_backend(backend):
    backend.reset()
    settings = SessionSettings(sampling=SamplingConfig(max_tokens=8), think=ThinkBudget.parse("4"))
    steps = World(backend, get_domain("terminal"), settings).step("ls")
    next(steps)
    steps.close()  # what garbage collection does to an abandoned turn
    assert World(backend, get_domain("terminal"), settings).run_turn("pwd") is not None


def test_template_thinks_is_reported(backend, llama_gguf):
    assert backend.info.template_thinks  # the Qwen3.5-style fixture template
    plain = LlamaBackend(llama_gguf, n_ctx=512, gpu_layers=0, notice=lambda text: None)
    try:
        assert not plain.info.template_thinks  # plain ChatML: `--think` has no effect
    finally:
        plain.close()


def test_max_tokens_can_count_thinking_too(backend):
    """The benchmark's limit (the official request's max_tokens): every new token counts. The
    random fixture never closes `<think>`, so with the session rule thinking runs on."""
    backend.reset()
    rules = dict(stop_at_observation=False, repetition_guard=False)
    counted = SessionSettings(sampling=SamplingConfig(max_tokens=6, max_tokens_counts_thinking=True, **rules),
                              think=ThinkBudget.parse("full"))
    finishes = []
    for seed in range(4):
        counted.seed = seed
        record = World(backend, get_domain("terminal"), counted).run_turn("ls")
        assert record.tokens["generated"] <= 6
        finishes.append((record.finish, record.tokens["generated"], record.tokens["thinking"]))
    assert ("length", 6, 6) in finishes, finishes
    backend.reset()
    answer_only = SessionSettings(sampling=SamplingConfig(max_tokens=6, **rules), think=ThinkBudget.parse("full"))
    records = [World(backend, get_domain("terminal"), replace(answer_only, seed=seed)).run_turn("ls") for seed in range(4)]
    assert max(record.tokens["generated"] for record in records) > 6, "thinking is not counted by the session rule"
