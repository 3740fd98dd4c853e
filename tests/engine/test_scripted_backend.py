"""The scripted backend behaves like the llama backend: events, stats, budget, cancel, one at a time."""

from __future__ import annotations

import json
import os
import threading

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.types import AnswerChunk, GenerationDone, SamplingConfig, ThinkBudget, ThinkingChunk
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.engine.events import TurnCancelled
from agentworld_local.errors import AwlError, BackendBusy, InputError
from agentworld_local.testing.answers import answer
from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend

RAW = "<think>\nplan it\n</think>\n<predicted_observation>\ntotal 0\n</predicted_observation>"
MESSAGES = [{"role": "system", "content": "sys"}, {"role": "user", "content": "### Turn 1\n**Action:**\nls"}]


def generate(backend, *, think="full", max_tokens=4096, cancel=None, messages=MESSAGES):
    events = list(backend.generate(messages, sampling=SamplingConfig(max_tokens=max_tokens),
                                   think=ThinkBudget.parse(think), seed=0, cancel=cancel))
    done = events[-1]
    assert isinstance(done, GenerationDone) and all(not isinstance(e, GenerationDone) for e in events[:-1])
    thinking = "".join(e.text for e in events if isinstance(e, ThinkingChunk))
    answer_text = "".join(e.text for e in events if isinstance(e, AnswerChunk))
    return thinking, answer_text, done


def test_thinking_on_starts_inside_the_block_the_prompt_opened():
    thinking, answer_text, done = generate(ScriptedBackend([ScriptedAnswer(RAW, chunk=2)]))
    assert done.think_open and done.raw_output == RAW[len("<think>\n"):]
    assert thinking == "plan it\n" and answer_text == "\n<predicted_observation>\ntotal 0\n</predicted_observation>"
    stats = done.stats
    assert stats.finish == "stop" and stats.generated_tokens == len(done.raw_output) // 2 + 1
    assert 0 < stats.thinking_tokens < stats.generated_tokens and stats.prompt_tokens_total > 0


def test_thinking_off_writes_only_the_answer_like_an_empty_think_block():
    thinking, answer_text, done = generate(ScriptedBackend([RAW]), think="off")
    assert not done.think_open and thinking == "" and done.stats.thinking_tokens == 0
    assert done.raw_output == answer_text == "<predicted_observation>\ntotal 0\n</predicted_observation>"


def test_a_template_without_thinking_streams_the_raw_answer_and_the_model_opens_thinking_itself():
    backend = ScriptedBackend([ScriptedAnswer(RAW, chunk=1)], template_thinks=False)
    thinking, answer_text, done = generate(backend)
    assert not backend.info.template_thinks and not done.think_open and done.raw_output == RAW
    assert thinking.strip() == "plan it" and answer_text.startswith("\n<predicted_observation>")


def test_a_thinking_budget_forces_the_end_of_thinking_as_llama_does():
    raw = "<think>\n" + "word " * 40 + "\n</think>\n<predicted_observation>\nok\n</predicted_observation>"
    thinking, answer_text, done = generate(ScriptedBackend([ScriptedAnswer(raw, chunk=5)]), think="3")
    assert done.stats.thinking_tokens == 3 and "\n</think>\n\n" in done.raw_output
    assert answer_text == "<predicted_observation>\nok\n</predicted_observation>"


def test_max_tokens_ends_with_length():
    _, _, done = generate(ScriptedBackend([ScriptedAnswer(RAW, chunk=1)]), think="off", max_tokens=10)
    assert done.stats.finish == "length" and done.stats.generated_tokens == 10


def test_a_scripted_length_finish_and_a_degenerate_loop():
    _, _, done = generate(ScriptedBackend([answer("unclosed_tag_at_length").scripted()]))
    assert done.stats.finish == "length"
    _, _, done = generate(ScriptedBackend([answer("newline_loop").scripted(chunk=2)]))
    assert done.stats.finish == "repetition" and done.stats.generated_tokens < 4096 // 2


def test_answers_are_used_in_order_and_start_again_after_the_last():
    backend = ScriptedBackend(["<predicted_observation>a</predicted_observation>", "b"])
    observed = [generate(backend, think="off")[1] for _ in range(3)]
    assert observed == ["<predicted_observation>a</predicted_observation>", "b",
                        "<predicted_observation>a</predicted_observation>"]


def test_only_new_messages_are_evaluated_as_in_the_append_only_context():
    backend = ScriptedBackend(["x"])
    first = generate(backend)[2].stats
    longer = [*MESSAGES, {"role": "assistant", "content": "x"}, {"role": "user", "content": "### Turn 2"}]
    second = generate(backend, messages=longer)[2].stats
    assert second.prompt_tokens_total > first.prompt_tokens_total > second.prompt_tokens_evaluated


def test_a_conversation_beyond_the_context_is_refused_like_llama():
    backend = ScriptedBackend(["x"], n_ctx=64)
    with pytest.raises(AwlError, match="context holds 64"):
        generate(backend, messages=[{"role": "user", "content": "a" * 400}])


def test_cancel_between_chunks_gives_a_cancelled_turn():
    cancel = threading.Event()
    backend = ScriptedBackend([ScriptedAnswer(RAW, chunk=1)])
    world = World(backend, get_domain("terminal"), SessionSettings())
    events = []
    for event in world.step("ls", cancel):
        events.append(event)
        if len(events) == 5:
            cancel.set()
    assert isinstance(events[-1], TurnCancelled) and world.history == []


def test_a_second_generation_while_one_streams_is_refused_then_the_backend_is_free():
    backend = ScriptedBackend([RAW])
    first = World(backend, get_domain("terminal"), SessionSettings())
    steps = first.step("ls")
    next(steps)
    with pytest.raises(BackendBusy):
        World(backend, get_domain("terminal"), SessionSettings()).run_turn("pwd")
    with pytest.raises(BackendBusy):
        first.probe("ls")
    assert list(steps)[-1].record.observation == "total 0"
    assert first.probe("ls").observation == "total 0"


def test_answer_file(tmp_path):
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"version": 1, "answers": [
        {"raw": RAW, "chunk": 3}, {"raw": "<predicted_observation>\n/app\n", "splits": [4, 9], "finish": "length"},
    ]}), encoding="utf-8")
    backend = ScriptedBackend.from_file(path)
    assert backend.info.name == "scripted:answers.json" and backend.info.sha256 and backend.info.template_thinks
    assert [a.chunk for a in backend.answers] == [3, 4] and backend.answers[1].splits == (4, 9)
    world = World(backend, get_domain("terminal"), SessionSettings())
    assert [world.run_turn(a).observation for a in ("ls", "pwd")] == ["total 0", "/app"]
    assert world.history[1].finish == "length"


@pytest.mark.parametrize("content, words", [
    ("{", "not valid JSON"),
    ("[" * 100_000 + "]" * 100_000, "nested deeper"),
    ('{"version": 1, "answers": []}', "no answers"),
    ('{"version": 2, "answers": ["x"]}', "version 2"),
    ('{"answers": "x"}', "`answers` list"),
    ('{"answers": [{"text": "x"}]}', "answer 1"),
    ('{"answers": [{"raw": "x", "chunk": 0}]}', "chunk 0"),
    ('{"answers": [{"raw": "x", "chunk": true}]}', "chunk True"),
    ('{"answers": [{"raw": "x", "splits": [5, 2]}]}', "ascending"),
    ('{"answers": [{"raw": "x", "finish": "done"}]}', "finish 'done'"),
    ('{"answers": [{"raw": "x", "speed": 3}]}', "unknown fields: speed"),
    ('{"answers": [{"raw": "x", "chunk": ' + "9" * 5000 + "}]}", "4,300 digits"),
])
def test_a_bad_answer_file_gets_one_clear_error(tmp_path, content, words):
    path = tmp_path / "answers.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace("[", r"\[")) as error:
        ScriptedBackend.from_file(path)
    assert error.value.hint


def test_a_fifo_is_refused_at_once(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    fifo = tmp_path / "answers.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        ScriptedBackend.from_file(fifo)
