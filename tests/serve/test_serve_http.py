"""`awl serve` over HTTP on a real uvicorn server on 127.0.0.1, with the scripted backend
streaming realistic raw answers: what a client gets is what the session's file holds."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from agentworld_local.serve.limits import ServeLimits
from agentworld_local.testing import ScriptedBackend
from agentworld_local.testing.answers import ANSWERS, answer
from agentworld_local.trajectory.reader import read_trajectory
from tests.serve.helpers import served, sse_events, stream_step

SHOWN = [item for item in ANSWERS if not item.several_blocks]


def scripted(chunk: int = 3, **options) -> ScriptedBackend:
    return ScriptedBackend([item.scripted(chunk) for item in SHOWN], **options)


def create(client, **body) -> dict:
    response = client.post("/sessions", json={"domain": "terminal", "think": "full", **body})
    assert response.status_code == 201, response.text
    return response.json()


def actions_in(path: str | Path) -> list[str]:
    return [turn.action for turn in read_trajectory(path).current_branch()]


def test_a_session_steps_undoes_regenerates_forks_and_closes_as_its_file_says(tmp_path):
    with served(tmp_path, scripted()) as client:
        opened = create(client, seed=3)
        sid, path = opened["id"], opened["file"]
        assert opened["observation"] == "user@sandbox:~$ " and opened["turns"] == 0
        assert Path(path).parent == tmp_path and Path(path).name == f"{sid}.jsonl"
        for number, item in enumerate(SHOWN[:4], start=1):
            done = client.post(f"/sessions/{sid}/step", json={"action": f"echo {number}"}).json()
            assert done["observation"] == item.observation, item.name
            assert done["turn"] == done["turns"] == number and done["terminated"] is False
            assert done["truncated"] is (item.finish == "length")
            assert done["record"]["action"] == f"echo {number}"
        saved = [json.loads(line) for line in client.get(f"/sessions/{sid}/trajectory").text.splitlines()]
        assert [line["observation"] for line in saved if line["type"] == "turn"] == [i.observation for i in SHOWN[:4]]

        undone = client.post(f"/sessions/{sid}/undo").json()
        assert undone["turns"] == 3 and undone["observation"] == SHOWN[2].observation
        again = client.post(f"/sessions/{sid}/regenerate").json()
        assert again["turn"] == 3 and again["record"]["action"] == "echo 3" and again["record"]["attempt"] == 1

        forked = client.post(f"/sessions/{sid}/fork", json={"turn": 2}).json()
        assert forked["turns"] == 2 and forked["id"] != sid and forked["observation"] == SHOWN[1].observation
        step = client.post(f"/sessions/{forked['id']}/step", json={"action": "echo fork"}).json()
        assert step["turn"] == 3

        listed = {entry["id"]: entry for entry in client.get("/sessions").json()}
        assert set(listed) == {sid, forked["id"]} and all(entry["open"] for entry in listed.values())
        closed = client.delete(f"/sessions/{sid}").json()
        assert closed == {"id": sid, "file": path, "saved": True, "turns": 3}
        assert client.get(f"/sessions/{sid}").json()["open"] is False
    assert actions_in(path) == ["echo 1", "echo 2", "echo 3"]
    assert actions_in(forked["file"]) == ["echo 1", "echo 2", "echo fork"]


@pytest.mark.parametrize("chunk", [1, 2, 5, 17])
def test_a_streamed_step_carries_the_session_events_and_shows_what_is_saved(tmp_path, chunk):
    with served(tmp_path, scripted(chunk)) as client:
        sid = create(client)["id"]
        for number, item in enumerate(SHOWN, start=1):
            said = stream_step(client, sid, f"echo {number}")
            names = [name for name, _ in said]
            assert names[0] == "action" and names[-2:] == ["turn_done", "ready"], item.name
            assert all(data["event"] == name for name, data in said)
            shown = "".join(data["text"] for name, data in said if name == "observation")
            replaced = [data["text"] for name, data in said if name == "observation_replaced"]
            record = said[-2][1]["record"]
            assert (replaced[-1] if replaced else shown) == record["observation"] == item.observation, item.name
            if not replaced:
                assert "thinking" in names or item.name in ("no_tags",), item.name
        saved = read_trajectory(tmp_path / f"{sid}.jsonl").current_branch()
        assert [turn.observation for turn in saved] == [item.observation for item in SHOWN]


def test_eight_sessions_stepped_at_once_are_all_served_in_their_own_files(tmp_path):
    """Clients never see a refusal because another session's turn runs; no turn lands in the
    wrong file. Raced: 8 clients x 5 steps, streamed and not, on a backend that takes its time."""
    with served(tmp_path, scripted(chunk=4, delay_s=0.0005)) as client:
        sessions = [create(client)["id"] for _ in range(8)]
        failures: list[str] = []

        def agent(index: int, sid: str) -> None:
            for step in range(5):
                action = f"echo s{index}-t{step}"
                if (index + step) % 2:
                    said = stream_step(client, sid, action)
                    ok = said[-1][0] == "ready" and said[-2][1]["record"]["action"] == action
                else:
                    response = client.post(f"/sessions/{sid}/step", json={"action": action})
                    ok = response.status_code == 200 and response.json()["record"]["action"] == action
                if not ok:
                    failures.append(f"{sid} {action}")

        threads = [threading.Thread(target=agent, args=(index, sid)) for index, sid in enumerate(sessions)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
    for index, sid in enumerate(sessions):
        assert actions_in(tmp_path / f"{sid}.jsonl") == [f"echo s{index}-t{step}" for step in range(5)]


def test_a_client_that_leaves_mid_stream_leaves_its_turn_saved_and_the_session_going_on(tmp_path):
    with served(tmp_path, scripted(chunk=1, delay_s=0.01)) as client:
        sid, other = create(client)["id"], create(client)["id"]
        with client.stream("POST", f"/sessions/{sid}/step/stream", json={"action": "echo left"}) as response:
            for name, _ in sse_events(response.iter_lines()):
                if name == "thinking":
                    break  # the client goes away mid-turn
        # Both the other session and this one go on; the left turn ran to its end first.
        assert client.post(f"/sessions/{other}/step", json={"action": "echo other"}).json()["turn"] == 1
        assert client.post(f"/sessions/{sid}/step", json={"action": "echo next"}).json()["turn"] == 2
    assert actions_in(tmp_path / f"{sid}.jsonl") == ["echo left", "echo next"]
    assert actions_in(tmp_path / f"{other}.jsonl") == ["echo other"]


def test_limits_are_clear_4xx_errors(tmp_path):
    limits = ServeLimits(max_body_bytes=4000, max_action_chars=100, max_sessions=2, max_turns=2, idle_s=3600)
    with served(tmp_path, scripted(), limits=limits) as client:
        sid = create(client)["id"]
        big = client.post(f"/sessions/{sid}/step", json={"action": "x" * 5000})
        assert big.status_code == 413 and "4000 bytes" in big.json()["error"]
        long = client.post(f"/sessions/{sid}/step", json={"action": "echo " + "y" * 100})
        assert long.status_code == 413 and "105 characters" in long.json()["error"] and long.json()["hint"]
        second = create(client)["id"]
        third = client.post("/sessions", json={"domain": "terminal"})
        assert third.status_code == 429 and "2 sessions open" in third.json()["error"]
        for number in (1, 2):
            assert client.post(f"/sessions/{sid}/step", json={"action": f"echo {number}"}).status_code == 200
        over = client.post(f"/sessions/{sid}/step", json={"action": "echo 3"})
        assert over.status_code == 409 and "limit of 2 turns" in over.json()["error"] and "Fork" in over.json()["hint"]
        assert client.post(f"/sessions/{sid}/regenerate").status_code == 200  # not a new turn
        bad = client.post("/sessions", json={"domain": "terminl"})
        assert bad.status_code == 400 and "terminl" in bad.json()["error"]
        unknown = client.post("/sessions", json={"domain": "terminal", "colour": "red"})
        assert unknown.status_code == 422 and "colour" in unknown.json()["error"]
        path = client.post("/sessions", json={"scenario": "../../etc/x.toml"})
        assert path.status_code == 400 and "by name" in path.json()["error"]
        for missing in ("nope", "..%2F..%2Fetc%2Fpasswd", "a b"):
            assert client.post(f"/sessions/{missing}/step", json={"action": "ls"}).status_code == 404
        assert client.post(f"/sessions/{sid}/fork", json={"turn": 9}).status_code == 429  # two open already
        client.delete(f"/sessions/{sid}")
        early = client.post(f"/sessions/{sid}/step", json={"action": "ls"})
        assert early.status_code == 409 and "closed by a client" in early.json()["error"]
        fork = client.post(f"/sessions/{second}/fork", json={"turn": 9})
        assert fork.status_code == 400 and "Cannot fork at turn 9" in fork.json()["error"]


def test_an_idle_session_is_closed_saved_and_can_be_resumed(tmp_path):
    with served(tmp_path, scripted(), limits=ServeLimits(idle_s=0.3)) as client:
        sid = create(client)["id"]
        assert client.post(f"/sessions/{sid}/step", json={"action": "echo 1"}).status_code == 200
        while client.get(f"/sessions/{sid}").json()["open"]:  # no deadline: pytest-timeout stops a hang
            time.sleep(0.1)
        late = client.post(f"/sessions/{sid}/step", json={"action": "echo 2"})
        assert late.status_code == 409 and "nobody used it for 0.3 s" in late.json()["error"]
        assert "/resume" in late.json()["hint"]
        assert client.post(f"/sessions/{sid}/resume").json()["turns"] == 1
        assert client.post(f"/sessions/{sid}/step", json={"action": "echo 2"}).json()["turn"] == 2
    assert actions_in(tmp_path / f"{sid}.jsonl") == ["echo 1", "echo 2"]


def test_an_invalid_action_and_a_failing_session_touch_no_other_session(tmp_path):
    with served(tmp_path, scripted(n_ctx=2048)) as client:
        good = create(client)
        assert client.post(f"/sessions/{good['id']}/step", json={"action": "echo 1"}).status_code == 200
        before = Path(good["file"]).read_bytes()
        web = create(client, domain="web")["id"]
        invalid = client.post(f"/sessions/{web}/step", json={"action": "fly(to the moon)"})
        assert invalid.status_code == 422 and invalid.json()["invalid_action"] is True
        full = create(client, initial_state="x" * 40_000)["id"]
        failed = client.post(f"/sessions/{full}/step", json={"action": "ls"})
        assert failed.status_code == 409 and "--ctx" in failed.json()["hint"]
        assert Path(good["file"]).read_bytes() == before
        assert client.post(f"/sessions/{good['id']}/step", json={"action": "echo 2"}).json()["turn"] == 2
    assert actions_in(good["file"]) == ["echo 1", "echo 2"]


def test_a_token_is_required_when_the_server_has_one(tmp_path):
    with served(tmp_path, scripted(), token="s3cret-token") as client:
        assert client.post("/sessions", json={"domain": "terminal"}).status_code == 401
        wrong = client.get("/sessions", headers={"Authorization": "Bearer s3cret-tokeN"})
        assert wrong.status_code == 401 and "Authorization: Bearer" in wrong.json()["hint"]
        assert client.get("/sessions", headers={"Authorization": "Bearer s3cret-token"}).status_code == 200
        assert client.get("/docs").status_code == 200 and "/sessions/{sid}/step" in client.get("/openapi.json").text


def test_a_restarted_server_lists_the_sessions_and_resumes_them(tmp_path):
    with served(tmp_path, scripted()) as client:
        first, empty = create(client), create(client)
        client.post(f"/sessions/{first['id']}/step", json={"action": "echo 1"})
    # The server stopped: its sessions were closed, the one without a turn left no file.
    with served(tmp_path, scripted()) as client:
        listed = client.get("/sessions").json()
        assert [(entry["id"], entry["open"], entry["turns"]) for entry in listed] == [(first["id"], False, 1)]
        assert client.get(f"/sessions/{empty['id']}").status_code == 404
        refused = client.post(f"/sessions/{first['id']}/step", json={"action": "echo 2"})
        assert refused.status_code == 409 and "/resume" in refused.json()["hint"]
        answers = []
        racers = [threading.Thread(target=lambda: answers.append(client.post(f"/sessions/{first['id']}/resume")))
                  for _ in range(4)]  # clients resuming it at once: all get it, it opens once
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join()
        assert [response.status_code for response in answers] == [200] * 4
        resumed = answers[0].json()
        assert resumed["turns"] == 1 and resumed["observation"] == SHOWN[0].observation
        assert client.get("/health").json()["sessions_open"] == 1
        assert client.post(f"/sessions/{first['id']}/step", json={"action": "echo 2"}).json()["turn"] == 2
    assert actions_in(first["file"]) == ["echo 1", "echo 2"]
    assert answer("thinking_then_tags") == SHOWN[0]


def test_a_session_whose_client_left_before_the_answer_is_open_and_known(tmp_path, monkeypatch):
    """The open is slow (its file is held until the test lets it go); its client gives up
    meanwhile. The session still opens, and the server knows it (listed, counted, steppable)."""
    import httpx2

    from agentworld_local.session.core import Session

    let_go, reached = threading.Event(), threading.Event()
    create_session = Session.create

    def held_create(*args, **kwargs):
        reached.set()
        let_go.wait()
        return create_session(*args, **kwargs)

    with served(tmp_path, scripted(chunk=1)) as client:
        busy = create(client)["id"]
        monkeypatch.setattr(Session, "create", staticmethod(held_create))
        with pytest.raises(httpx2.TimeoutException):
            client.post("/sessions", json={"domain": "terminal"}, timeout=0.3)
        assert reached.wait()
        let_go.set()
        while client.get("/health").json()["sessions_open"] < 2:
            time.sleep(0.02)  # the open goes on in its own task; nothing tells a client when
        (left,) = [entry["id"] for entry in client.get("/sessions").json() if entry["id"] != busy]
        assert client.get(f"/sessions/{left}").json()["open"] is True
        assert client.post(f"/sessions/{left}/step", json={"action": "pwd"}).json()["turn"] == 1


def test_as_many_sessions_as_the_limit_open_at_once_none_refused(tmp_path):
    """A session counts once while it opens (not as opening and open both): the race runs many
    rounds, each opening the limit's worth of sessions at the same moment."""
    limit = 48
    with served(tmp_path, scripted(), limits=ServeLimits(max_sessions=limit, idle_s=3600)) as client:
        for _ in range(6):
            barrier, statuses, ids = threading.Barrier(limit), [], []

            def open_one() -> None:
                barrier.wait()
                response = client.post("/sessions", json={"domain": "terminal"})
                statuses.append(response.status_code)
                if response.status_code == 201:
                    ids.append(response.json()["id"])

            threads = [threading.Thread(target=open_one) for _ in range(limit)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert statuses == [201] * limit
            for sid in ids:
                assert client.delete(f"/sessions/{sid}").status_code in (200, 204)
