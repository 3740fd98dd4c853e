"""Capacity on a server: how many turns awl sends at once, each session's own view, the
context of a slot and the server's own token counts; then 16 sessions through `awl serve
--backend openai` against a loopback server of each shape that answers after a delay."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.remote.backend import OpenAIBackend
from agentworld_local.engine.remote.options import DEFAULT_SERVER_PARALLEL, RemoteOptions
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import AnswerChunk, GenerationDone, SamplingConfig, ThinkBudget
from agentworld_local.engine.world import World
from agentworld_local.errors import InputError
from agentworld_local.testing.answers import answer
from agentworld_local.trajectory.reader import read_trajectory
from bench.serve_load import free_port, wait_ready
from tests.remote.fake_openai import Reply

ITEM = answer("thinking_then_tags")
ROOT = Path(__file__).resolve().parents[2]
MESSAGES = [{"role": "user", "content": "ls"}]


def remote(fake, **options) -> OpenAIBackend:
    return OpenAIBackend(RemoteOptions(fake.base_url, "world"), **options)


def test_capacity_is_the_servers_count_bounded_by_the_users_with_a_default_for_a_silent_server(fake):
    silent = remote(fake)  # vLLM's shape: no count anywhere
    assert silent.parallel == DEFAULT_SERVER_PARALLEL > 1
    assert any("does not say how many" in notice and "--parallel" in notice for notice in silent.notices)
    assert remote(fake, parallel=9).parallel == 9
    fake.props = {"total_slots": 3, "default_generation_settings": {"n_ctx": 4096}}  # llama-server -np 3
    assert remote(fake).parallel == 3
    assert remote(fake, parallel=2).parallel == 2
    bounded = remote(fake, parallel=8)
    assert bounded.parallel == 3 and any("decodes 3 requests at once" in notice for notice in bounded.notices)
    fake.props = None
    fake.server_info = {"max_running_requests": 5, "context_length": 8192}  # SGLang
    sglang = remote(fake)
    assert (sglang.parallel, sglang.info.n_ctx) == (5, 8192)
    with pytest.raises(InputError, match="--parallel 0"):
        remote(fake, parallel=0)


def test_the_context_is_a_slots_not_the_training_one(fake):
    # llama-server: /v1/models says what the model was trained on; a slot holds -c / -np.
    fake.model_extra = {"meta": {"n_ctx_train": 32768}}
    fake.props = {"total_slots": 4, "default_generation_settings": {"n_ctx": 4096}}
    assert remote(fake).info.n_ctx == 4096
    fake.model_extra = {"meta": {"n_ctx_train": 32768, "n_ctx": 16384}}
    assert remote(fake).info.n_ctx == 16384
    fake.model_extra, fake.props = {"meta": {"n_ctx_train": 32768}}, None
    assert remote(fake).info.n_ctx == 32768  # nothing else said: the training context is all there is


def test_a_session_reads_the_servers_usage_sent_after_the_observation(fake):
    fake.replies[:] = [Reply(ITEM.raw, separate=True)]
    backend = remote(fake)
    world = World(backend, get_domain("terminal"), SessionSettings(think=ThinkBudget.parse("full")))
    record = next(event.record for event in world.step("ls -la") if hasattr(event, "record"))
    sent = fake.requests[-1]
    prompt = sum(len(m.get("content") or "") for m in sent["messages"]) // 4  # what the fake counts
    assert record.observation == ITEM.observation
    assert record.tokens["prompt_total"] == prompt  # the server's count, not awl's estimate
    backend.close()


def _generate_until_first_chunk(view: OpenAIBackend, results: dict, name: str, started: threading.Event) -> None:
    events = view.generate(MESSAGES, sampling=SamplingConfig(), think=ThinkBudget("off"), seed=0)
    for event in events:
        if isinstance(event, AnswerChunk):
            started.set()
        if isinstance(event, GenerationDone):
            results[name] = event


@pytest.mark.parametrize("attempts", [pytest.param(1, id="once"), pytest.param(3, id="thrice", marks=pytest.mark.slow)])
def test_a_views_close_stops_only_its_own_stream_and_the_backends_close_stops_every_view(fake, attempts):
    slow = "<predicted_observation>\n" + "".join(f"file_{n}.txt {n * 37 % 1000} bytes\n" for n in range(200)) + "</predicted_observation>"
    fake.replies[:] = [Reply(slow, chunks=(8,), delay_s=0.01)]
    backend = remote(fake)
    for attempt in range(attempts):
        first, second, third = backend.for_session(), backend.for_session(), backend.for_session()
        assert len({id(first._guard), id(second._guard), id(backend._guard)}) == 3
        results: dict = {}
        started = {name: threading.Event() for name in ("first", "second")}
        threads = [threading.Thread(target=_generate_until_first_chunk, args=(view, results, name, started[name]))
                   for view, name in ((first, "first"), (second, "second"))]
        for thread in threads:
            thread.start()
        assert all(event.wait() for event in started.values())  # no deadlines: pytest-timeout stops a hang
        first.close()
        threads[0].join()
        assert results["first"].stats.finish == "cancelled", attempt
        assert threads[1].is_alive()  # still streaming: the other view's close did not reach it
        threads[1].join()
        assert results["second"].stats.finish == "stop" and "file_199.txt" in results["second"].raw_output
        # The closed view refuses; its siblings and the backend go on.
        with pytest.raises(Exception, match="closed"):
            next(first.generate(MESSAGES, sampling=SamplingConfig(), think=ThinkBudget("off"), seed=0))
        fake.replies[:] = [Reply(ITEM.raw, separate=True)]
        done = [e for e in third.generate(MESSAGES, sampling=SamplingConfig(), think=ThinkBudget("full"), seed=0)
                if isinstance(e, GenerationDone)]
        assert done[0].stats.finish == "stop"
        fake.replies[:] = [Reply(slow, chunks=(8,), delay_s=0.01)]
    # The backend's close stops a view's stream in flight.
    view, results, started_event = backend.for_session(), {}, threading.Event()
    thread = threading.Thread(target=_generate_until_first_chunk, args=(view, results, "view", started_event))
    thread.start()
    assert started_event.wait()
    backend.close()
    thread.join()
    assert results["view"].stats.finish == "cancelled"


def _serve(fake, folder: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "agentworld_local.cli.main", "serve", "--backend", "openai", "--base-url", fake.base_url,
         "--api-model", "world", "--dir", str(folder), "--port", str(port), *extra],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    wait_ready(base, server, timeout=float("inf"))  # no deadline: pytest-timeout stops a hang
    return server, base


SESSIONS, STEPS = 16, 2


@pytest.mark.parametrize("shape, expected", [("vllm", DEFAULT_SERVER_PARALLEL), ("llama-server", 6), ("parallel", 5)])
def test_sixteen_sessions_through_awl_serve_run_side_by_side_up_to_the_capacity(fake, tmp_path, shape, expected):
    """The server sees exactly min(16, capacity) answers in flight at once (the fake holds
    the first ones until that many came, so one more sent at once would be seen), and every
    step of every session answers 200 with its observation: nothing waits for a whole
    session, nothing is refused for another's turn."""
    extra: tuple[str, ...] = ()
    if shape == "llama-server":
        fake.props = {"total_slots": 6, "default_generation_settings": {"n_ctx": 8192}}
    elif shape == "parallel":
        extra = ("--parallel", "5")
    fake.replies[:] = [Reply(ITEM.raw, separate=True)]
    fake.delay = 0.3
    fake.hold_until = expected
    server, base = _serve(fake, tmp_path, *extra)
    try:
        health = httpx2.get(f"{base}/health", timeout=None).json()
        assert health["parallel"] == expected and health["model"] == "world"
        sids = [httpx2.post(f"{base}/sessions", json={"domain": "terminal", "think": "full"}, timeout=None).json()["id"]
                for _ in range(SESSIONS)]

        def steps(sid: str) -> list[tuple[int, str]]:
            out = []
            for number in range(STEPS):
                reply = httpx2.post(f"{base}/sessions/{sid}/step", json={"action": f"echo {sid} {number}"}, timeout=None)
                out.append((reply.status_code, reply.json().get("observation", reply.text)))
            return out

        with ThreadPoolExecutor(SESSIONS) as pool:
            answers = list(pool.map(steps, sids))
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate()
    assert all(step == (200, ITEM.observation) for steps_ in answers for step in steps_), answers
    assert fake.most_at_once == expected
    for sid in sids:
        saved = read_trajectory(tmp_path / f"{sid}.jsonl")
        assert [turn.action for turn in saved.turns] == [f"echo {sid} {n}" for n in range(STEPS)]
