"""Against llama.cpp's own llama-server, where one is installed (`AWL_LLAMA_SERVER`, or
`llama-server` on PATH; skipped otherwise): a turn's token counts are the server's own, read
from the per-token timings it sends when asked, cached prompt tokens subtracted, even when awl
ends the answer before the server's last chunk."""

from __future__ import annotations

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.remote.backend import OpenAIBackend
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.world import World
from bench.llama_server_binary import LlamaServer, find_binary

BINARY = find_binary()
pytestmark = pytest.mark.skipif(BINARY is None, reason="no llama-server here (set AWL_LLAMA_SERVER=PATH)")


def test_a_session_on_llama_server_records_its_counts(llama_gguf):
    with LlamaServer(BINARY, llama_gguf, n_ctx=4096, threads=1, threads_batch=2, n_batch=512, n_ubatch=512,
                     extra=("--jinja", "--alias", "world")) as server:
        backend = OpenAIBackend(RemoteOptions(server.url + "/v1", "world"))
        assert backend.facts.kind == "llama-server"
        settings = SessionSettings(sampling=SamplingConfig(temperature=0, max_tokens=24), think=ThinkBudget.parse("off"), seed=1)
        world = World(backend, get_domain("terminal"), settings)
        first = world.run_turn("ls -la")
        second = world.run_turn("pwd")
        backend.close()
    for record in (first, second):
        assert not record.estimated("prompt_total") and not record.estimated("prompt_evaluated")
        assert not record.estimated("generated") and 0 < record.tokens["generated"] <= 24
    assert first.tokens["prompt_evaluated"] == first.tokens["prompt_total"]  # nothing cached yet
    # The second turn's prompt starts with the first's: llama-server took that from its cache.
    assert second.tokens["prompt_evaluated"] < second.tokens["prompt_total"] - first.tokens["prompt_total"] // 2
