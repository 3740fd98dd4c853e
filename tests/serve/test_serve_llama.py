"""`awl serve` end to end on the real llama.cpp path (the generated qwen35moe fixture):
several sessions over one loaded model, interleaved, streamed, undone, forked, resumed."""

from __future__ import annotations

from agentworld_local.engine.loading import load_backend
from agentworld_local.trajectory.reader import read_trajectory
from tests.serve.helpers import served, stream_step


def test_sessions_interleaved_on_one_llama_model_each_keep_their_own_turns(tmp_path, qwen_gguf):
    backend = load_backend(str(qwen_gguf), gpu_layers="0", ctx=4096)
    options = {"domain": "terminal", "think": "8", "max_tokens": 24, "seed": 5}
    with served(tmp_path, backend) as client:
        first, second = (client.post("/sessions", json=options).json()["id"] for _ in range(2))
        streamed = {}
        for step in range(2):
            for sid in (first, second):
                said = stream_step(client, sid, f"echo {sid[-8:]}-{step}")
                assert said[-1][0] == "ready" and said[-2][0] == "turn_done"
                streamed[(sid, step)] = said[-2][1]["record"]
        undone = client.post(f"/sessions/{first}/undo").json()
        assert undone["turns"] == 1 and undone["observation"] == streamed[(first, 0)]["observation"]
        again = client.post(f"/sessions/{first}/step", json={"action": "pwd"}).json()
        assert again["turn"] == 2 and again["record"]["tokens"]["generated"] > 0
        fork = client.post(f"/sessions/{second}/fork", json={"turn": 1}).json()
        assert client.post(f"/sessions/{fork['id']}/step", json={"action": "ls"}).json()["turn"] == 2
    for sid in (first, second):
        saved = read_trajectory(tmp_path / f"{sid}.jsonl").current_branch()
        expected = [f"echo {sid[-8:]}-{step}" for step in range(2)]
        assert [turn.action for turn in saved] == (expected[:1] + ["pwd"] if sid == first else expected)
        for turn in (saved if sid == second else saved[:1]):
            assert turn.observation == streamed[(sid, turn.turn - 1)]["observation"]
    # A new server on the same model and folder resumes them.
    with served(tmp_path, load_backend(str(qwen_gguf), gpu_layers="0", ctx=4096)) as client:
        assert {entry["id"] for entry in client.get("/sessions").json()} == {first, second, fork["id"]}
        assert client.post(f"/sessions/{second}/resume").json()["turns"] == 2
        assert client.post(f"/sessions/{second}/step", json={"action": "whoami"}).json()["turn"] == 3
    assert read_trajectory(tmp_path / f"{second}.jsonl").current_branch()[-1].action == "whoami"
