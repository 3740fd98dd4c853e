"""What a client can stop, and what one client may hold: `POST /sessions/{id}/cancel`, a
stream's `cancel_on_disconnect`, the `--max-tokens-per-turn` ceiling, and /health's count of
turns running and waiting, on a model with fewer places than sessions."""

from __future__ import annotations

import json
import threading
import time

from agentworld_local.serve.limits import ServeLimits
from agentworld_local.testing import ScriptedBackend
from agentworld_local.testing.answers import ANSWERS
from tests.serve.helpers import served
from tests.tui.helpers import GatedBackend

RAW = ANSWERS[0].raw


def gated(parallel: int = 2) -> GatedBackend:
    return GatedBackend(ScriptedBackend([RAW], parallel=parallel), after=1)


def health_until(client, condition) -> dict:
    """/health once `condition` holds: polled, no deadline (pytest-timeout stops a hang)."""
    while True:
        health = client.get("/health").json()
        if condition(health):
            return health
        time.sleep(0.02)


def open_sessions(client, count: int) -> list[str]:
    return [client.post("/sessions", json={"domain": "terminal", "think": "full"}).json()["id"] for _ in range(count)]


def test_cancel_stops_a_turn_in_flight_and_one_waiting_for_a_place_and_leaves_the_others(tmp_path):
    backend = gated(parallel=2)
    with served(tmp_path, backend) as client:
        a, b, c = open_sessions(client, 3)
        answers: dict[str, object] = {}

        def step(sid: str) -> None:
            reply = client.post(f"/sessions/{sid}/step", json={"action": f"echo {sid}"})
            answers[sid] = (reply.status_code, reply.json())

        threads = {sid: threading.Thread(target=step, args=(sid,)) for sid in (a, b)}
        for thread in threads.values():
            thread.start()
        health_until(client, lambda h: h["running"] == 2)
        threads[c] = threading.Thread(target=step, args=(c,))
        threads[c].start()
        assert health_until(client, lambda h: h["waiting"] == 1)["parallel"] == 2
        assert client.post(f"/sessions/{c}/cancel").json()["cancelled"] is True  # the waiting one
        threads[c].join()
        assert answers[c][0] == 409 and "cancelled by a client" in answers[c][1]["error"]
        assert client.post(f"/sessions/{a}/cancel").json()["cancelled"] is True  # one in flight
        threads[a].join()
        assert answers[a][0] == 409
        backend.gate.set()
        threads[b].join()
        assert answers[b][0] == 200 and answers[b][1]["observation"] == ANSWERS[0].observation
        assert [client.get(f"/sessions/{sid}").json()["turns"] for sid in (a, b, c)] == [0, 1, 0]
        # Nothing runs now: a cancel says so, and the session takes its next step as usual.
        assert client.post(f"/sessions/{a}/cancel").json()["cancelled"] is False
        assert client.post(f"/sessions/{a}/step", json={"action": "pwd"}).status_code == 200
        assert client.post("/sessions/nope/cancel").status_code == 404
        assert health_until(client, lambda h: h["running"] == 0 and h["waiting"] == 0)


def _stream_then_leave(client, sid: str, **body) -> str:
    """Start a step's stream, read its first event, and go away; the first event's name."""
    with client.stream("POST", f"/sessions/{sid}/step/stream", json={"action": "ls", **body}) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("event:"):
                return line[6:].strip()
    raise AssertionError("no event came")


def test_a_stream_whose_client_leaves_cancels_its_turn_only_when_asked(tmp_path):
    backend = gated(parallel=2)
    with served(tmp_path, backend) as client:
        kept, cancelled = open_sessions(client, 2)
        assert _stream_then_leave(client, cancelled, cancel_on_disconnect=True) == "action"
        health_until(client, lambda h: h["running"] == 0)  # the turn stopped though the gate is shut
        assert client.get(f"/sessions/{cancelled}").json()["turns"] == 0
        assert _stream_then_leave(client, kept) == "action"  # the default: it runs on and is saved
        health_until(client, lambda h: h["running"] == 1)
        backend.gate.set()
        health_until(client, lambda h: h["running"] == 0)
        assert client.get(f"/sessions/{kept}").json()["turns"] == 1


def test_the_tokens_per_turn_ceiling_refuses_a_larger_answer_and_bounds_thinking(tmp_path):
    limits = ServeLimits(max_tokens_per_turn=300)
    with served(tmp_path, ScriptedBackend([RAW]), limits=limits) as client:
        refused = client.post("/sessions", json={"domain": "terminal", "max_tokens": 301})
        assert refused.status_code == 400 and "--max-tokens-per-turn" in refused.json()["hint"]
        for asked, kept in (("full", "200"), ("250", "200"), ("50", "50"), ("off", "off")):
            sid = client.post("/sessions", json={"domain": "terminal", "max_tokens": 100, "think": asked}).json()["id"]
            header = json.loads(client.get(f"/sessions/{sid}/trajectory").text.splitlines()[0])
            assert (header["think"], header["sampling"]["max_tokens"]) == (kept, 100), asked
        # A session that asks for no max_tokens under a ceiling below the default gets the ceiling.
        sid = client.post("/sessions", json={"domain": "terminal", "think": "full"}).json()["id"]
        header = json.loads(client.get(f"/sessions/{sid}/trajectory").text.splitlines()[0])
        assert (header["think"], header["sampling"]["max_tokens"]) == ("off", 300)


def test_a_bounded_wait_queue_answers_503_with_retry_after_never_502(tmp_path):
    backend = gated(parallel=1)
    with served(tmp_path, backend, limits=ServeLimits(max_waiting=1)) as client:
        a, b, c = open_sessions(client, 3)
        answers: dict[str, object] = {}

        def step(sid: str) -> None:
            answers[sid] = client.post(f"/sessions/{sid}/step", json={"action": "ls"}).status_code

        first = threading.Thread(target=step, args=(a,))
        first.start()
        health_until(client, lambda h: h["running"] == 1)
        second = threading.Thread(target=step, args=(b,))
        second.start()
        health_until(client, lambda h: h["waiting"] == 1)
        refused = client.post(f"/sessions/{c}/step", json={"action": "ls"})
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1", refused.text
        assert "--max-waiting" in refused.json()["error"]
        backend.gate.set()
        first.join()
        second.join()
        assert answers == {a: 200, b: 200}
        assert client.post(f"/sessions/{c}/step", json={"action": "ls"}).status_code == 200


def test_sessions_open_resume_and_fork_while_every_place_of_the_model_holds_a_turn(tmp_path):
    """Opening touches no model place: a new session, a resume and a fork answer while the
    one place holds another session's turn (they used to wait for every turn to end)."""
    backend = gated(parallel=1)
    with served(tmp_path, backend) as client:
        (busy,) = open_sessions(client, 1)
        answer: dict[str, int] = {}
        turn = threading.Thread(target=lambda: answer.update(
            code=client.post(f"/sessions/{busy}/step", json={"action": "ls"}).status_code))
        turn.start()
        health_until(client, lambda h: h["running"] == 1)
        for _ in range(5):
            new = client.post("/sessions", json={"domain": "terminal"}).json()["id"]
            fork = client.post(f"/sessions/{new}/fork", json={})
            assert fork.status_code == 201, fork.text
            assert client.delete(f"/sessions/{new}").status_code == 200
            assert client.post(f"/sessions/{new}/resume").status_code == 200
        assert client.get("/health").json()["running"] == 1 and turn.is_alive()  # still held
        backend.gate.set()
        turn.join()
        assert answer["code"] == 200
        assert client.get(f"/sessions/{busy}").json()["turns"] == 1


def test_a_cancelled_regenerate_keeps_the_turn_it_was_replacing(tmp_path):
    backend = gated(parallel=1)
    backend.gate.set()
    with served(tmp_path, backend) as client:
        (sid,) = open_sessions(client, 1)
        first = client.post(f"/sessions/{sid}/step", json={"action": "ls"}).json()
        backend.gate.clear()
        answer: dict[str, object] = {}
        regenerate = threading.Thread(target=lambda: answer.update(
            reply=client.post(f"/sessions/{sid}/regenerate", json={})))
        regenerate.start()
        health_until(client, lambda h: h["running"] == 1)
        assert client.post(f"/sessions/{sid}/cancel").json()["cancelled"] is True
        regenerate.join()
        assert answer["reply"].status_code == 409
        state = client.get(f"/sessions/{sid}").json()
        assert (state["turns"], state["head"]) == (1, first["head"])
        lines = [json.loads(line) for line in client.get(f"/sessions/{sid}/trajectory").text.splitlines()]
        assert [line["type"] for line in lines] == ["header", "turn"]  # no undo without its new turn
        assert lines[1]["observation"] == first["observation"]


def test_a_sessions_second_request_waits_counted_and_one_cancel_ends_both_as_cancelled_by_a_client(tmp_path):
    """The session's order is the runner's: its second request waits in its mailbox (counted by
    /health), not in a lock of the server's; POST .../cancel stops the turn and drops the
    waiting one, and both answer 409 "cancelled by a client" (never "shutting down")."""
    for _ in range(5):  # each round with a new server: the gate holds the first turn
        backend = gated(parallel=2)
        with served(tmp_path / f"round{_}", backend) as client:
            (sid,) = open_sessions(client, 1)
            answers: dict[int, tuple[int, dict]] = {}

            def step(number: int) -> None:
                reply = client.post(f"/sessions/{sid}/step", json={"action": f"echo {number}"})
                answers[number] = (reply.status_code, reply.json())

            threads = [threading.Thread(target=step, args=(number,)) for number in (1, 2)]
            threads[0].start()
            health_until(client, lambda h: h["running"] == 1)
            threads[1].start()
            health_until(client, lambda h: h["waiting"] == 1)  # behind its own session's turn, counted
            assert client.post(f"/sessions/{sid}/cancel").json()["cancelled"] is True
            for thread in threads:
                thread.join()
            assert client.post(f"/sessions/{sid}/cancel").json()["cancelled"] is False, "nothing runs or waits now"
            state = client.get(f"/sessions/{sid}").json()
        for number in (1, 2):
            status, body = answers[number]
            assert status == 409 and "cancelled by a client" in body["error"], answers
        assert state["turns"] == 0
