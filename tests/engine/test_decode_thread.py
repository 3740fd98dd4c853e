"""Every llama_decode of a context runs on one thread, whichever turn led its round.

libgomp keeps a pool of OpenMP workers per thread that starts a parallel region; with more
pooled workers than CPUs it throttles the spin at each barrier, and a decode of two rows took
twice its time on a 2-core machine once a second thread had decoded (compute_thread.py). The
runner's turns run on whichever worker thread is free, so the decodes are handed to one thread.
A decode that llama.cpp runs on one thread starts no team: it runs where it is asked (a lone
session's tokens on a 2-core machine pay no hand-over).
"""

from __future__ import annotations

import threading

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.llama import LlamaBackend, batching
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.world import World
from agentworld_local.models.offload_options import OffloadOptions


@pytest.fixture
def backend(llama_gguf):
    # No drafting: a draft's verify runs on the one-row threads (test_verify_threads.py).
    backend = LlamaBackend(llama_gguf, n_ctx=4096, gpu_layers=0, parallel=2, offload=OffloadOptions(speculate="off"))
    yield backend
    backend.close()


def world(backend, seed: int) -> World:
    settings = SessionSettings(sampling=SamplingConfig(temperature=0.8, max_tokens=8), think=ThinkBudget.parse("off"),
                               seed=seed)
    return World(backend, get_domain("terminal"), settings)


@pytest.mark.parametrize("counts", [(2, 2), (1, 2)], ids=["every-decode-on-two-threads", "one-row-on-one-thread"])
def test_turns_on_many_threads_decode_on_one_thread_of_the_context(backend, monkeypatch, counts):
    deciders: list[threading.Thread] = []  # of the decodes that run on more than one thread
    inline: list[threading.Thread] = []  # of those that run on one
    decode = batching.llama_cpp.llama_decode
    batching.llama_cpp.llama_set_n_threads(backend._ctx, *counts)  # (one row, more rows)

    def spy(ctx, batch):
        one = batch.n_tokens == 1 and counts[0] == 1
        (inline if one else deciders).append(threading.current_thread())
        return decode(ctx, batch)

    monkeypatch.setattr(batching.llama_cpp, "llama_decode", spy)
    callers: list[threading.Thread] = [threading.current_thread()]  # objects: idents are reused
    failures: list[BaseException] = []
    worlds = [world(backend, seed) for seed in (1, 2)]
    worlds[0].run_turn("ls")  # from the test's own thread

    def play(number: int) -> None:
        callers.append(threading.current_thread())
        try:
            for action in ("pwd", "whoami"):
                worlds[number].run_turn(action)
        except BaseException as error:  # noqa: BLE001 - reported by the test's thread
            failures.append(error)

    for _ in range(2):  # new threads each time, as the runner's idle workers come and go
        threads = [threading.Thread(target=play, args=(number,)) for number in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()  # no deadline: pytest-timeout stops a hang
    assert not failures, failures
    assert len(deciders) > 10 and len(callers) == 5
    assert len(set(deciders)) == 1, "llama_decode ran on more than one thread"
    assert all(deciders[0] is not caller for caller in callers), "a turn's own thread decoded"
    if counts[0] == 1:  # single rows on one thread: on the turns' own threads, no hand-over
        assert len(inline) > 10 and all(any(thread is caller for caller in callers) for thread in inline)
    else:
        assert not inline
