"""A draft's verify runs on the threads of the one-token decodes it replaces (issue 45).

llama.cpp runs a decode of one token on `n_threads` and any wider one on `n_threads_batch`;
llama-cpp-python's defaults are half the CPUs and all of them. A verify (a sampled token and
its draft, a few rows) is a generation step, not a prompt chunk: on the prompt's threads it
cost 4 to 8 one-token decodes on a busy 2-core machine (an OpenMP barrier per operation waits
for a thread the system took away), and the README's first live try (Gemma 3 270M, drafting
on by `auto`) ran at 3 to 6 tokens a second against 18 to 25 with `--speculate off`
(bench/first_live_try.py). Prompt chunks keep `n_threads_batch`.
"""

from __future__ import annotations

import llama_cpp
import pytest

from agentworld_local.engine.llama import LlamaBackend, batching
from agentworld_local.engine.types import GenerationDone, SamplingConfig, ThinkBudget
from agentworld_local.models.offload_options import OffloadOptions

FILE = "The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.\n"
MESSAGES = [
    {"role": "system", "content": "You simulate a terminal."},
    {"role": "user", "content": f"cat notes.txt\n{FILE * 3}\nShow notes.txt again."},
]
GREEDY = SamplingConfig(temperature=0, max_tokens=40, repetition_guard=False, stop_at_observation=False)
GENERATION, PROMPT = 1, 2  # the thread counts the test gives the context: different, so a decode says which it ran on


@pytest.fixture
def backend(llama_gguf):
    backend = LlamaBackend(llama_gguf, n_ctx=2048, gpu_layers=0, offload=OffloadOptions(speculate="on"))
    llama_cpp.llama_set_n_threads(backend._ctx, GENERATION, PROMPT)
    yield backend
    backend.close()


def test_a_verify_runs_on_the_generation_threads_and_a_prompt_chunk_on_the_batch_threads(backend, monkeypatch):
    seen: list[tuple[int, int]] = []  # (rows, the threads llama.cpp runs them on)
    decode = llama_cpp.llama_decode

    def spy(ctx, batch):
        wide = batch.n_tokens > 1
        seen.append((batch.n_tokens, llama_cpp.llama_n_threads_batch(ctx) if wide else llama_cpp.llama_n_threads(ctx)))
        return decode(ctx, batch)

    monkeypatch.setattr(batching.llama_cpp, "llama_decode", spy)
    done = [e for e in backend.generate(MESSAGES, sampling=GREEDY, think=ThinkBudget.parse("off"), seed=1)
            if isinstance(e, GenerationDone)][0]
    assert done.stats.drafted > 0 and done.stats.accepted > 0  # verifies ran (the test cannot pass vacuously)
    first = seen[0]
    assert first == (done.stats.prompt_tokens_evaluated, PROMPT)  # the prompt: one chunk, on the batch threads
    verifies = [threads for rows, threads in seen[1:] if rows > 1]
    assert verifies and set(verifies) == {GENERATION}, seen
    # The context's own settings are as they were: the next prompt gets its batch threads.
    assert (llama_cpp.llama_n_threads(backend._ctx), llama_cpp.llama_n_threads_batch(backend._ctx)) == (GENERATION, PROMPT)
