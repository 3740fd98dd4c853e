"""A server that ends its message (`finish_reason`) and then sends nothing more, keeping the
stream open, costs a turn the engine's tail wait (remote/backend.py _TAIL_S, 1 s here instead of
30), not --timeout: the answer is whole and saved, with and without the observation's closing tag
read first. Against tests/remote/fake_openai.py on 127.0.0.1; the test waits on the turn, and
pytest's timeout (far below the 600 s --timeout given) stops a turn that waits for the stream to end."""

from __future__ import annotations

import threading

import pytest

from agentworld_local.engine.remote import backend as remote_backend
from agentworld_local.engine.remote.backend import OpenAIBackend
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.engine.types import GenerationDone, SamplingConfig, ThinkBudget
from agentworld_local.testing.answers import answer
from tests.remote.fake_openai import Reply

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("raw, shown", [(answer("thinking_then_tags").raw, "README.md"),
                                        ("file.txt  notes.md", "file.txt")],
                         ids=["closing tag read first", "no closing tag"])
def test_a_finished_answer_whose_stream_never_ends_is_whole_without_waiting_for_the_timeout(fake, raw, shown,
                                                                                             monkeypatch):
    monkeypatch.setattr(remote_backend, "_TAIL_S", 1.0)
    released = threading.Event()
    fake.replies[:] = [Reply(raw, hang_after_finish=released)]
    backend = OpenAIBackend(RemoteOptions(fake.base_url, "world", timeout_s=600, retries=0))
    try:
        done = [event for event in backend.generate([{"role": "user", "content": "ls"}], sampling=SamplingConfig(),
                                                      think=ThinkBudget("off"), seed=1)
                if isinstance(event, GenerationDone)]
        assert len(done) == 1 and done[0].stats.finish == "stop", done
        assert shown in done[0].raw_output
        assert fake.calls == 1  # answered once: not retried, not failed
    finally:
        released.set()
        backend.close()
