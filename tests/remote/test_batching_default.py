"""A server that reports no count of its own, through `awl serve`: a vLLM- or SGLang-shaped one
gets the batching default (16 turns at once), said on `awl serve`'s output when it connects;
`--parallel` overrides it. Seen from the server's side: the most answers it had in flight at once
while 16 sessions step together (the loopback server holds the first answers until that many
came, so one more sent at once would show). And the answer's pieces, read as the server's JSON
(remote/chunks.py), survive chunks of odd shapes.

The wall time of 16 such sessions against one is measured by bench/serve_parallel.py."""

from __future__ import annotations

import json
import signal
from concurrent.futures import ThreadPoolExecutor

import httpx2
import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.remote.backend import OpenAIBackend
from agentworld_local.engine.remote.chunks import Chunk
from agentworld_local.engine.remote.options import BATCHING_SERVER_PARALLEL, RemoteOptions
from agentworld_local.engine.scripted import model_text_start
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import ThinkBudget
from agentworld_local.engine.world import World
from agentworld_local.testing.answers import answer
from tests.remote.fake_openai import Reply
from tests.remote.test_capacity_remote import _serve

ITEM = answer("thinking_then_tags")
SESSIONS = 16
SHAPES = {
    "vllm": dict(model_extra={"max_model_len": 65536}),
    "sglang": dict(server_info={"context_length": 65536, "max_running_requests": None}),  # no limit set
}


def _sixteen_at_once(base: str) -> list[tuple[int, str]]:
    def one(number: int) -> tuple[int, str]:
        sid = httpx2.post(f"{base}/sessions", json={"domain": "terminal", "think": "full"}, timeout=None).json()["id"]
        reply = httpx2.post(f"{base}/sessions/{sid}/step", json={"action": f"echo {number}"}, timeout=None)
        return reply.status_code, reply.json().get("observation", reply.text)

    with ThreadPoolExecutor(SESSIONS) as pool:
        return list(pool.map(one, range(SESSIONS)))


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("parallel", [None, 3], ids=["default", "--parallel 3"])
def test_a_batching_server_without_a_count_gets_sixteen_at_once_said_at_connect(fake, tmp_path, shape, parallel):
    for name, value in SHAPES[shape].items():
        setattr(fake, name, value)
    expected = parallel or BATCHING_SERVER_PARALLEL
    fake.replies[:] = [Reply(ITEM.raw, separate=True)]
    fake.hold_until = expected  # no deadline: fewer sent at once would hang, and pytest-timeout says so
    server, base = _serve(fake, tmp_path, *(("--parallel", str(parallel)) if parallel else ()))
    try:
        assert httpx2.get(f"{base}/health", timeout=None).json()["parallel"] == expected
        answers = _sixteen_at_once(base)
    finally:
        server.send_signal(signal.SIGTERM)
        _, said = server.communicate()
    assert answers == [(200, ITEM.observation)] * SESSIONS
    assert fake.most_at_once == expected
    said = " ".join(said.split())
    kind = {"vllm": "vLLM", "sglang": "SGLang"}[shape]
    default = f"{kind} batches many, so awl sends up to {BATCHING_SERVER_PARALLEL} turns at once (--parallel N to change)"
    assert (default in said) == (parallel is None), said


def _sse(*chunks: object) -> bytes:
    return b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks) + b"data: [DONE]\n\n"


def test_chunks_of_odd_shapes_give_nothing_and_the_answer_goes_on(fake):
    """Fields missing, null or of another type give nothing, and the pieces around them make
    the answer (thinking in the text, as a server without a reasoning parser sends it)."""
    fake.model_extra = {"max_model_len": 65536}
    _, offset = model_text_start(ITEM.raw, thinking_prompt=True)
    text = ITEM.raw[offset:]
    head, tail = text[: len(text) // 2], text[len(text) // 2:]
    odd = [{"choices": None}, {}, {"choices": [{"index": 0}]}, {"choices": ["x", {"delta": None}]},
           {"choices": [{"delta": {"content": 5}}], "usage": "many"}, {"choices": [{"delta": {"content": None}}]}]
    body = _sse({"choices": [{"index": 0, "delta": {"role": "assistant", "content": head}}]}, *odd,
                {"choices": [{"index": 0, "delta": {"content": tail}, "finish_reason": "stop"}]},
                {"choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 9}})
    fake.raw_answers[:] = [(200, "text/event-stream", body)]
    backend = OpenAIBackend(RemoteOptions(fake.base_url, "world"), parallel=1)
    world = World(backend, get_domain("terminal"), SessionSettings(think=ThinkBudget.parse("full")))
    record = next(event.record for event in world.step("ls -la") if hasattr(event, "record"))
    backend.close()
    assert record.observation == ITEM.observation and record.finish == "stop"
    assert (record.tokens["prompt_total"], record.tokens["generated"]) == (40, 9)  # the server's, from the dict


def test_a_chunk_gives_the_fields_awl_reads_under_the_typed_models_names():
    chunk = Chunk({"choices": [{"index": 0, "delta": {"content": "a", "reasoning_content": "r"}, "finish_reason": None}],
                   "usage": {"prompt_tokens": 3}, "timings": {"prompt_n": 2}})
    (choice,) = chunk.choices
    assert (choice.delta.content, choice.delta.model_extra["reasoning_content"], choice.finish_reason) == ("a", "r", None)
    assert chunk.usage == {"prompt_tokens": 3} and chunk.model_extra["timings"] == {"prompt_n": 2}
