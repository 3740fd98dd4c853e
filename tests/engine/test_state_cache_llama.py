"""The system-prompt state cache on the real llama.cpp path: a new session loads the state a
model left after a system prompt it evaluated before, and then answers exactly as a cold
evaluation would (same tokens, same checkpoints, same greedy output); a damaged or foreign
file is a miss that is removed, never a crash."""

from __future__ import annotations

import json
import shutil
import zlib

import pytest

from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.llama.state_cache import StateCache
from agentworld_local.engine.types import GenerationDone, SamplingConfig, ThinkBudget

SYSTEM = {"role": "system", "content": "You simulate a Linux terminal for an agent. Show what the shell prints. " * 12}
GREEDY = SamplingConfig(temperature=0, max_tokens=16, stop_at_observation=False, repetition_guard=False)


def answer(backend: LlamaBackend, action: str = "ls -la") -> GenerationDone:
    messages = [SYSTEM, {"role": "user", "content": action}]
    events = list(backend.generate(messages, sampling=GREEDY, think=ThinkBudget.parse("off"), seed=1))
    return events[-1]


def snapshot(backend: LlamaBackend) -> tuple[list[int], list[tuple[int, bytes | None]]]:
    """The context as the backend holds it: tokens, checkpoints (with their states)."""
    return backend.evaluated_tokens, [(c.n_tokens, c.state) for c in backend.sequence.checkpoints]


@pytest.fixture(params=["qwen_gguf", "llama_gguf", pytest.param("gemma", marks=pytest.mark.slow)])  # real weights: slow tier
def model(request):
    if request.param != "gemma":
        return request.getfixturevalue(request.param)
    # Real weights, attention-only with sliding-window layers (their cache is in the state too).
    return request.getfixturevalue("gemma_gguf")


def test_a_hit_skips_the_system_prompt_and_answers_as_a_cold_evaluation(model, tmp_path):
    cold = LlamaBackend(model, n_ctx=1024, gpu_layers=0)
    cold_done = answer(cold)
    cold.close()
    cache = StateCache(tmp_path)
    first = LlamaBackend(model, n_ctx=1024, gpu_layers=0, state_cache=cache)
    miss = answer(first)
    evaluated = snapshot(first)
    system = first.sequence.checkpoints[1].n_tokens  # the checkpoint where the system message ends
    first.close()
    assert miss.stats.prompt_tokens_evaluated == miss.stats.prompt_tokens_total
    assert cache.info().entries == 1
    # A new process-like session: another load, in a larger context (n_ctx is not in the key).
    second = LlamaBackend(model, n_ctx=2048, gpu_layers=0, state_cache=cache)
    hit = answer(second)
    assert 0 < system < hit.stats.prompt_tokens_total
    assert hit.stats.prompt_tokens_evaluated == hit.stats.prompt_tokens_total - system
    assert hit.raw_output == miss.raw_output == cold_done.raw_output
    assert snapshot(second) == evaluated  # recurrent states at every later checkpoint too
    assert cache.info().entries == 1, "a hit stores nothing new"
    second.close()


def test_a_new_session_on_the_loaded_model_starts_after_the_cached_prompt(qwen_gguf, tmp_path):
    backend = LlamaBackend(qwen_gguf, n_ctx=2048, gpu_layers=0, state_cache=StateCache(tmp_path))
    answer(backend, "pwd")
    system = backend.sequence.checkpoints[1].n_tokens
    backend.reset()  # what the runner does for a new session
    done = answer(backend, "cat notes.txt")
    assert done.stats.prompt_tokens_evaluated == done.stats.prompt_tokens_total - system
    backend.close()


OTHER_SYSTEM = {"role": "system", "content": "You simulate an Android phone's screen for an agent. " * 12}


def test_a_session_lent_a_slot_of_another_prompt_starts_after_its_cached_prompt(model, tmp_path):
    """A server's slot that held another domain's session shares only a few tokens with the
    new one: the new session still starts from its own prompt's state, and answers as cold."""
    cold = LlamaBackend(model, n_ctx=2048, gpu_layers=0)
    expected = answer(cold, "cat notes.txt")
    cold.close()
    backend = LlamaBackend(model, n_ctx=2048, gpu_layers=0, state_cache=StateCache(tmp_path))
    first, other = backend.for_session(), backend.for_session()
    answer(first, "pwd")
    system = first.sequence.checkpoints[1].n_tokens
    first.release()
    list(other.generate([OTHER_SYSTEM, {"role": "user", "content": "tap OK"}], sampling=GREEDY,
                        think=ThinkBudget.parse("off"), seed=1))
    other.release()
    third = backend.for_session()  # lent the slot the Android session left
    done = answer(third, "cat notes.txt")
    assert done.stats.prompt_tokens_evaluated == done.stats.prompt_tokens_total - system
    assert done.raw_output == expected.raw_output
    backend.close()


def test_within_one_process_the_prompt_state_comes_from_memory(qwen_gguf, tmp_path):
    """The disk is for the next process: with the files gone, this one's next session still starts
    after its system prompt, and answers as the first did."""
    cache = StateCache(tmp_path)
    backend = LlamaBackend(qwen_gguf, n_ctx=2048, gpu_layers=0, state_cache=cache)
    expected = answer(backend, "pwd")
    system = backend.sequence.checkpoints[1].n_tokens
    assert backend.prompt_states.bytes > 0 and len(backend.prompt_states) == 1
    cache.clear()
    backend.reset()
    done = answer(backend, "pwd")
    assert done.stats.prompt_tokens_evaluated == done.stats.prompt_tokens_total - system
    assert done.raw_output == expected.raw_output
    backend.close()


def _truncate(entry_state, other_state):
    entry_state.write_bytes(entry_state.read_bytes()[: entry_state.stat().st_size // 3])


def _foreign(entry_state, other_state):
    shutil.copyfile(other_state, entry_state)  # another model's state under this prompt's name


@pytest.mark.parametrize("damage", [_truncate, _foreign])
def test_a_damaged_or_foreign_state_is_a_miss_that_is_removed(qwen_gguf, llama_gguf, tmp_path, damage):
    other = StateCache(tmp_path / "other")
    with_llama = LlamaBackend(llama_gguf, n_ctx=1024, gpu_layers=0, state_cache=other)
    answer(with_llama)
    with_llama.close()
    cache = StateCache(tmp_path / "mine")
    first = LlamaBackend(qwen_gguf, n_ctx=1024, gpu_layers=0, state_cache=cache)
    expected = answer(first).raw_output
    first.close()
    [state] = (tmp_path / "mine").glob("*.seqstate")
    damage(state, next((tmp_path / "other").glob("*.seqstate")))
    # The header is made to agree with the damaged file (size, checksum), so llama.cpp itself must refuse it
    # (its own load_file aborts the process on a truncated file: the backend never uses it).
    [header] = (tmp_path / "mine").glob("*.json")
    header.write_text(json.dumps({**json.loads(header.read_text()), "state_bytes": state.stat().st_size,
                                  "state_crc32": zlib.crc32(state.read_bytes())}))
    damaged_size = state.stat().st_size
    second = LlamaBackend(qwen_gguf, n_ctx=1024, gpu_layers=0, state_cache=cache)
    done = answer(second)
    assert done.stats.prompt_tokens_evaluated == done.stats.prompt_tokens_total, "a refused state is a miss"
    assert done.raw_output == expected
    assert state.stat().st_size != damaged_size, "the damaged file was removed (and the prompt stored again)"
    second.close()
    third = LlamaBackend(qwen_gguf, n_ctx=1024, gpu_layers=0, state_cache=cache)
    assert answer(third).stats.prompt_tokens_evaluated < done.stats.prompt_tokens_total
    third.close()


def test_a_cache_that_cannot_be_written_is_said_once_and_the_session_goes_on(llama_gguf, tmp_path):
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the cache dir should be")
    notices: list[str] = []
    backend = LlamaBackend(llama_gguf, n_ctx=1024, gpu_layers=0, state_cache=StateCache(blocked), notice=notices.append)
    first = answer(backend)
    backend.reset()
    second = answer(backend, "pwd")  # this process still holds the state in memory
    backend.close()
    assert first.stats.finish == second.stats.finish == "length"
    assert second.stats.prompt_tokens_evaluated < second.stats.prompt_tokens_total
    said = [text for text in notices if "Could not write the system prompt's state" in text]
    assert len(said) == 1 and str(blocked) in said[0]
    next_process = LlamaBackend(llama_gguf, n_ctx=1024, gpu_layers=0, state_cache=StateCache(blocked))
    third = answer(next_process, "pwd")  # nothing on disk: it evaluates the prompt again
    next_process.close()
    assert third.stats.prompt_tokens_evaluated == third.stats.prompt_tokens_total
    assert third.raw_output == second.raw_output


def _first_turn(backend: LlamaBackend, action: str, task: str = ""):
    from agentworld_local.domains import get_domain
    from agentworld_local.engine.settings import SessionSettings
    from agentworld_local.engine.world import World

    backend.reset()  # a new session on the loaded model, as the runner starts one
    settings = SessionSettings(sampling=GREEDY, think=ThinkBudget.parse("off"), seed=1, task=task)
    world = World(backend, get_domain("terminal"), settings)
    known = len(backend._known_prefix(world.next_turn_prefix())[0])
    return world.run_turn(action), known


@pytest.mark.parametrize("name", ["qwen_gguf", "llama_gguf"])
def test_a_new_processs_first_turn_evaluates_only_what_follows_its_start(name, request, tmp_path):
    """The process's first session writes its first turn's start (system prompt, task, the
    action's wrapper) to disk: the next process's first turn evaluates only the action's text
    and the template's tokens after it, as llama-server's next request does, and answers as a
    cold evaluation."""
    model = request.getfixturevalue(name)
    # Evaluated whole, in the chunks a cache writer uses (a different split moves logits in their last bits).
    cold = LlamaBackend(model, n_ctx=4096, gpu_layers=0, state_cache=StateCache(tmp_path / "cold"))
    expected, known = _first_turn(cold, "pwd")
    cold.close()
    cache = StateCache(tmp_path / "warm")
    earlier = LlamaBackend(model, n_ctx=4096, gpu_layers=0, state_cache=cache)
    _first_turn(earlier, "ls -la")
    earlier.close()
    assert cache.info().entries == 2  # the system prompt's state and the first turn's start
    backend = LlamaBackend(model, n_ctx=4096, gpu_layers=0, state_cache=cache)
    record, _ = _first_turn(backend, "pwd")
    backend.close()
    assert record.tokens["prompt_evaluated"] == record.tokens["prompt_total"] - known
    assert record.raw_output == expected.raw_output


@pytest.mark.parametrize("name", ["qwen_gguf", "llama_gguf"])
def test_a_first_turns_start_is_held_for_the_next_session_and_written_once_a_second_starts_with_it(name, request, tmp_path):
    model = request.getfixturevalue(name)
    task = "Find the notes."
    cold = LlamaBackend(model, n_ctx=4096, gpu_layers=0, state_cache=StateCache(tmp_path / "cold"))
    expected = {action: _first_turn(cold, action, task)[0].raw_output for action in ("pwd", "cat notes.txt")}
    cold.close()
    cache = StateCache(tmp_path / "warm")
    backend = LlamaBackend(model, n_ctx=4096, gpu_layers=0, state_cache=cache)
    _first_turn(backend, "ls -la")  # the process's first start goes to disk at once (the test above)
    assert cache.info().entries == 2
    first, known = _first_turn(backend, "ls -la", task)
    assert first.tokens["prompt_evaluated"] > first.tokens["prompt_total"] - known  # the task was new
    assert cache.info().entries == 2  # a later start is held in memory at its first sight
    second, _ = _first_turn(backend, "pwd", task)
    third, _ = _first_turn(backend, "cat notes.txt", task)
    # The start (system prompt, task, the action's wrapper) came from memory: only the action's own text is new.
    for record in (second, third):
        assert record.tokens["prompt_evaluated"] == record.tokens["prompt_total"] - known
    assert [second.raw_output, third.raw_output] == [expected["pwd"], expected["cat notes.txt"]]
    assert cache.info().entries == 3  # seen twice: on disk for the next process
    backend.close()
    again = LlamaBackend(model, n_ctx=4096, gpu_layers=0, state_cache=cache)
    fourth, _ = _first_turn(again, "cat notes.txt", task)
    assert fourth.tokens["prompt_evaluated"] == fourth.tokens["prompt_total"] - known
    assert fourth.raw_output == expected["cat notes.txt"]
    again.close()


def test_episodes_of_distinct_tasks_write_one_state_a_process_not_one_each(qwen_gguf, tmp_path):
    cache = StateCache(tmp_path)
    backend = LlamaBackend(qwen_gguf, n_ctx=4096, gpu_layers=0, state_cache=cache)
    for number in range(4):
        record, known = _first_turn(backend, "ls", task=f"Find the file number {number}.")
        assert record.tokens["prompt_evaluated"] > record.tokens["prompt_total"] - known  # the task was new
    assert cache.info().entries == 2  # the system prompt's and the process's first start
    backend.close()
