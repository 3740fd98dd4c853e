"""The step route's short way (serve/step_shortcut.py): a plainly well-formed step is answered
without FastAPI's machinery, by the route's own step; anything else reaches FastAPI with its
body intact, so every refusal is FastAPI's as before. Hostile input against a real server: the
error contract, nothing saved, and the token never passed by the short way where the route's
own check would refuse it."""

from __future__ import annotations

import asyncio
import inspect
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentworld_local.serve.app import StepRequest
from agentworld_local.serve.limits import HttpProblem
from agentworld_local.serve.step_shortcut import StepShortcut
from agentworld_local.testing import ScriptedBackend
from agentworld_local.testing.answers import ANSWERS
from tests.serve.helpers import served

pytestmark = pytest.mark.timeout(300)

TOKEN = "a-tökén-of-some-length"  # not ASCII: a header is Latin-1 (Starlette decodes it so), the comparison UTF-8


class Probe:
    """The app behind the layer: what reached FastAPI, with the body it read."""

    def __init__(self) -> None:
        self.reached: list[tuple[str, bytes]] = []

    async def __call__(self, scope, receive, send) -> None:
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        self.reached.append((scope["path"], body))
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b"fastapi"})


def call(layer, path: str, body: bytes, headers: dict[bytes, bytes], method: str = "POST") -> tuple[int, bytes]:
    scope = {"type": "http", "method": method, "path": path, "root_path": "", "headers": list(headers.items())}
    parts = [body[:3], body[3:]]  # in two messages, as a client's chunks may come
    sent: list[dict] = []

    async def receive():
        if parts:
            piece = parts.pop(0)
            return {"type": "http.request", "body": piece, "more_body": bool(parts)}
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    asyncio.run(layer(scope, receive, send))
    return sent[0]["status"], b"".join(message.get("body", b"") for message in sent[1:])


def shortcut(token: str | None = None):
    probe, steps = Probe(), []

    async def step(sid, request):
        steps.append((sid, request))
        if sid == "gone":
            raise HttpProblem(404, "No session gone.", "Open one.")
        return {"turn": 1, "sid": sid, "action": request.action}

    return StepShortcut(probe, step=step, body_model=StepRequest, token=token), probe, steps


JSON = {b"content-type": b"application/json"}


def test_a_plain_step_is_answered_by_the_step_and_never_reaches_fastapi():
    layer, probe, steps = shortcut()
    status, body = call(layer, "/sessions/abc/step", b'{"action": "ls -la", "final": true}', JSON)
    assert status == 200 and json.loads(body) == {"turn": 1, "sid": "abc", "action": "ls -la"}
    assert probe.reached == [] and steps[0][1].final is True
    status, body = call(layer, "/sessions/gone/step", b'{"action": "ls"}', JSON)
    assert status == 404 and json.loads(body) == {"error": "No session gone.", "hint": "Open one."}


@pytest.mark.parametrize("path, body, headers, method", [
    ("/sessions/abc/step", b'{"action": "ls"', JSON, "POST"),  # not JSON
    ("/sessions/abc/step", b'{"action": 7}', JSON, "POST"),  # not the schema (strict)
    ("/sessions/abc/step", b'{"action": "ls", "extra": 1}', JSON, "POST"),
    ("/sessions/abc/step", b'["ls"]', JSON, "POST"),
    ("/sessions/abc/step", b"[" * 3000 + b"]" * 3000, JSON, "POST"),
    ("/sessions/abc/step", b'{"action": "' + b"9" * 5000 + b'"}', {}, "POST"),  # no content-type
    ("/sessions/abc/step", b'{"action": "ls"}', {b"content-type": b"text/plain"}, "POST"),
    ("/sessions/abc/step", b'{"action": "ls", "cancel_on_disconnect": true}', JSON, "POST"),  # needs the request
    ("/sessions/abc/step", b"\xff\xfe{\x80}", JSON, "POST"),
    ("/sessions/abc/step", b'{"action": "ls"}', JSON, "PUT"),
    ("/sessions/abc/step/stream", b'{"action": "ls"}', JSON, "POST"),
    ("/sessions/a/b/step", b'{"action": "ls"}', JSON, "POST"),
    ("/sessions//step", b'{"action": "ls"}', JSON, "POST"),
])
def test_anything_but_a_plain_step_reaches_fastapi_with_its_body_intact(path, body, headers, method):
    layer, probe, steps = shortcut()
    assert call(layer, path, body, headers, method) == (299, b"fastapi")
    assert probe.reached == [(path, body)] and steps == []


@pytest.mark.parametrize("authorization, short", [
    (None, False),
    (b"Bearer wrong", False),
    (b"Basic " + TOKEN.encode("utf-8"), False),
    (b"Bearer  " + TOKEN.encode("utf-8"), False),  # two spaces: FastAPI decides
    (b"Bearer " + TOKEN.encode("utf-8"), False),  # read as Latin-1 (HTTP's), these bytes are other characters
    (b"Bearer " + TOKEN.encode("latin-1")[:-1], False),
    (b"Bearer " + TOKEN.encode("latin-1"), True),
    (b"bearer " + TOKEN.encode("latin-1"), True),
])
def test_the_token_is_read_as_the_routes_own_check_reads_it(authorization, short):
    layer, probe, steps = shortcut(TOKEN)
    headers = {**JSON, **({b"authorization": authorization} if authorization is not None else {})}
    status, _ = call(layer, "/sessions/abc/step", b'{"action": "ls"}', headers)
    assert (status == 200) is short and (probe.reached == []) is short


@settings(max_examples=300, deadline=None)
@given(body=st.one_of(st.binary(max_size=80), st.builds(lambda value: json.dumps(value).encode(), st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["action", "final", "cancel_on_disconnect", "x"]), children, max_size=4), max_leaves=6))))
def test_any_body_is_either_a_valid_step_or_fastapis_untouched(body):
    layer, probe, steps = shortcut()
    status, _ = call(layer, "/sessions/abc/step", body, JSON)
    if status == 200:
        request = StepRequest.model_validate(json.loads(body))
        assert not request.cancel_on_disconnect and probe.reached == []
    else:
        assert probe.reached == [("/sessions/abc/step", body)] and steps == []


def test_hostile_steps_on_a_real_server_get_the_error_contract_and_save_nothing(tmp_path):
    backend = ScriptedBackend([item.scripted(3) for item in ANSWERS if not item.several_blocks])
    with served(tmp_path, backend, token=TOKEN) as client:
        auth = {"authorization": f"Bearer {TOKEN}".encode("latin-1")}
        sid = client.post("/sessions", json={"domain": "terminal"}, headers=auth).json()["id"]
        before = (tmp_path / f"{sid}.jsonl").read_bytes()
        for headers, content, status in [
            ({}, b'{"action": "ls"}', 401),
            ({"authorization": "Bearer nope"}, b'{"action": "ls"}', 401),
            ({"authorization": f"Bearer {TOKEN}".encode("utf-8")}, b'{"action": "ls"}', 401),
            (auth, b'{"action": "ls"', 400),
            (auth, b'{"action": 7}', 422),
            (auth, b'{"action": "ls", "unknown": 1}', 422),
        ]:
            answer = client.post(f"/sessions/{sid}/step", content=content,
                                 headers={"content-type": "application/json", **headers})
            assert answer.status_code == status, answer.text
            assert set(answer.json()) >= {"error", "hint"}
        missing = client.post("/sessions/nosuch/step", json={"action": "ls"}, headers=auth)
        assert missing.status_code == 404 and set(missing.json()) >= {"error", "hint"}
        assert (tmp_path / f"{sid}.jsonl").read_bytes() == before
        plain = client.post(f"/sessions/{sid}/step", json={"action": "ls"}, headers=auth)
        routed = client.post(f"/sessions/{sid}/step", json={"action": "pwd", "cancel_on_disconnect": True},
                             headers=auth)
        assert plain.status_code == routed.status_code == 200
        assert set(plain.json()) == set(routed.json()) and (plain.json()["turn"], routed.json()["turn"]) == (1, 2)
        assert plain.headers["content-type"] == routed.headers["content-type"] == "application/json"


def test_fastapis_opentelemetry_is_off_unless_the_environment_configures_it(monkeypatch):
    """FastAPI (0.165 on) asks OpenTelemetry's providers on every request; awl serve turns that
    off where nobody configured OpenTelemetry, and leaves it as FastAPI has it where somebody did."""
    from fastapi import FastAPI

    from agentworld_local.serve.app import _telemetry

    if "telemetry" not in inspect.signature(FastAPI).parameters:
        pytest.skip("this FastAPI has no OpenTelemetry instrumentation")
    for name in [name for name in os.environ if name.startswith("OTEL_")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("FASTAPI_OTEL_AUTO_CONFIGURE", raising=False)
    assert _telemetry() == {"telemetry": {"tracing": False, "metrics": False, "logs": False}}
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert _telemetry() == {}
