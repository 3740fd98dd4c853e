"""`awl serve` over a runner that runs sessions side by side (a backend with session slots):
the turns of different sessions are in flight at once, each event reaches its own request.

Skipped while the runner takes one command at a time (then the server serialises commands
itself: tests/serve/test_serve_http.py)."""

from __future__ import annotations

import threading


from agentworld_local.testing import ScriptedBackend
from agentworld_local.testing.answers import ANSWERS
from agentworld_local.trajectory.reader import read_trajectory
from tests.serve.helpers import served, stream_step

SHOWN = [item for item in ANSWERS if not item.several_blocks]


class SequencePool:
    """Scripted answers with session slots (as a llama model's sequences): each session streams
    from a script of its own; `most` is the most generations in flight at once."""

    parallel = 8
    idle_prefetch = False

    def __init__(self) -> None:
        self.info = ScriptedBackend(["x"]).info
        self.now = self.most = 0
        self._lock = threading.Lock()

    def for_session(self) -> ScriptedBackend:
        slots, slot = self, ScriptedBackend([item.scripted(2) for item in SHOWN], delay_s=0.002)
        generate = slot.generate

        def counted(*args, **kwargs):
            with slots._lock:
                slots.now += 1
                slots.most = max(slots.most, slots.now)
            try:
                yield from generate(*args, **kwargs)
            finally:
                with slots._lock:
                    slots.now -= 1

        slot.generate = counted
        return slot

    def close(self) -> None:
        pass


def test_turns_of_different_sessions_run_at_once_and_each_reaches_its_own_client(tmp_path):
    slots = SequencePool()
    with served(tmp_path, slots) as client:
        sessions = [client.post("/sessions", json={"domain": "terminal", "think": "full"}).json()["id"] for _ in range(4)]
        failures: list[str] = []

        def agent(index: int, sid: str) -> None:
            for step in range(4):
                action = f"echo s{index}-t{step}"
                if step % 2:
                    said = stream_step(client, sid, action)
                    record = said[-2][1]["record"]
                    streamed = [data for name, data in said if "turn" in data and data["turn"] != step + 1]
                    if said[-1][0] != "ready" or record["action"] != action or streamed:
                        failures.append(f"{sid} {action}: {said[-1]} {streamed[:1]}")
                else:
                    done = client.post(f"/sessions/{sid}/step", json={"action": action})
                    if done.status_code != 200 or done.json()["record"]["action"] != action:
                        failures.append(f"{sid} {action}: {done.text}")
            if client.post(f"/sessions/{sid}/undo").json()["turns"] != 3:
                failures.append(f"{sid} undo")

        threads = [threading.Thread(target=agent, args=(index, sid)) for index, sid in enumerate(sessions)]
        for thread in threads:
            thread.start()
        forked = client.post(f"/sessions/{sessions[0]}/fork", json={"turn": 0})  # runs alone, between turns
        for thread in threads:
            thread.join()
        assert failures == [] and forked.status_code == 201
    assert slots.most > 1  # the server let the runner run them side by side
    for index, sid in enumerate(sessions):
        assert [turn.action for turn in read_trajectory(tmp_path / f"{sid}.jsonl").current_branch()] == \
            [f"echo s{index}-t{step}" for step in range(3)]
