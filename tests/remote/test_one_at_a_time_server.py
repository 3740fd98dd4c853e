"""llama-cpp-python's own server (`python -m llama_cpp.server`) takes one request at a time and,
by default (`--interrupt_requests`), cuts the answer in flight when another request arrives. awl
recognises it and sends it one turn at a time: 8 sessions at once through `awl serve`, a vector
env of 8, and `awl bench predict` with more trajectories than that lose no step and no row.
All against the real server over the generated qwen35moe fixture, on 127.0.0.1."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import pytest

from agentworld_local.engine.remote.backend import OpenAIBackend
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.engine.remote.server_kinds import ONE_AT_A_TIME
from agentworld_local.engine.types import GenerationDone, SamplingConfig, ThinkBudget
from agentworld_local.errors import GenerationError
from bench.serve_load import free_port, wait_ready
from tests.cli.helpers import REPO, awl, awl_env
from tests.remote.conftest import SERVED
from tests.remote.test_llama_server import short_prompt_pack

SESSIONS = 8
#: top_k 0: llama-cpp-python's server samples the fixture's large vocabulary slowly with a top-k.
QUICK = SamplingConfig(temperature=1.0, top_k=0, max_tokens=12)


def test_it_is_recognised_and_gets_one_turn_at_a_time(llama_server):
    backend = OpenAIBackend(RemoteOptions(llama_server.base_url, SERVED))
    assert backend.facts.kind == ONE_AT_A_TIME and backend.parallel == 1
    assert [n for n in backend.notices if "one turn at a time" in n and "llama-cpp-python" in n] and len(backend.notices) == 1
    backend.close()
    declared = OpenAIBackend(RemoteOptions(llama_server.base_url, SERVED), parallel=3)
    assert declared.parallel == 3 and any("--interrupt_requests false" in n for n in declared.notices)
    declared.close()
    quiet = OpenAIBackend(RemoteOptions(llama_server.base_url, SERVED), parallel=1)  # a one-session command
    assert quiet.parallel == 1 and quiet.notices == []
    quiet.close()


def test_eight_views_at_once_all_finish_none_cut(llama_server):
    """Without the gate the server ended 7 of 8 streams after their first chunk."""
    backend = OpenAIBackend(RemoteOptions(llama_server.base_url, SERVED))
    go = threading.Event()

    def one(number: int) -> GenerationDone:
        view = backend.for_session()
        go.wait()
        messages = [{"role": "system", "content": "You simulate a Linux terminal."},
                    {"role": "user", "content": f"echo {number}"}]
        return list(view.generate(messages, sampling=QUICK, think=ThinkBudget("off"), seed=number))[-1]

    with ThreadPoolExecutor(SESSIONS) as pool:
        running = [pool.submit(one, number) for number in range(SESSIONS)]
        go.set()
        done = [future.result() for future in running]
    backend.close()
    assert all(isinstance(d, GenerationDone) and d.stats.finish in ("stop", "length") for d in done)
    assert all(d.stats.generated_tokens > 0 for d in done)


@pytest.fixture(scope="module")
def awl_serve(llama_server, tmp_path_factory):
    """`awl serve --backend openai` in front of the llama-cpp-python server, with a short prompt pack
    (the server evaluates each hybrid prompt whole) set in the config file."""
    folder = tmp_path_factory.mktemp("serve")
    pack = short_prompt_pack(folder / "prompts")
    (folder / "home" / "config").mkdir(parents=True)
    (folder / "home" / "config" / "config.toml").write_text(f'version = 1\n[session]\nprompts = "{pack}"\n')
    port = free_port()
    log = (folder / "serve.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "agentworld_local.cli.main", "serve", "--backend", "openai", "--base-url",
         llama_server.base_url, "--api-model", SERVED, "--dir", str(folder / "sessions"), "--port", str(port)],
        cwd=REPO, env=awl_env(folder / "home"), stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, server, timeout=float("inf"))  # no deadline: pytest-timeout stops a hang
        yield base, folder
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()
        log.close()


def test_eight_sessions_through_awl_serve_lose_no_step(awl_serve):
    base, folder = awl_serve
    assert httpx2.get(f"{base}/health", timeout=None).json()["parallel"] == 1
    assert "one turn at a time" in (folder / "serve.log").read_text(errors="replace")
    options = {"domain": "terminal", "think": "off", "max_tokens": 8, "seed": 1}
    sids = [httpx2.post(f"{base}/sessions", json=options, timeout=None).json()["id"] for _ in range(SESSIONS)]

    def first_step(sid: str) -> tuple[int, str]:
        reply = httpx2.post(f"{base}/sessions/{sid}/step", json={"action": f"echo {sid}"}, timeout=None)
        return reply.status_code, reply.text

    with ThreadPoolExecutor(SESSIONS) as pool:
        answers = list(pool.map(first_step, sids))
    assert [status for status, _ in answers] == [200] * SESSIONS, answers


def test_a_vector_env_of_eight_loses_no_step(awl_serve):
    gymnasium = pytest.importorskip("gymnasium")
    import agentworld_local.env.gym  # noqa: F401 - registers the ids

    base, _ = awl_serve
    env = gymnasium.make_vec("agentworld/Terminal-v0", num_envs=SESSIONS, base_url=base, think="off", max_tokens=8)
    try:
        env.reset(seed=3)
        observations, rewards, terminated, truncated, infos = env.step(tuple(f"ls /tmp/{n}" for n in range(SESSIONS)))
    finally:
        env.close()
    assert len(observations) == SESSIONS and not any(terminated)


def _rows(trajectories: int, turns: int) -> list[dict]:
    out = []
    for number in range(trajectories):
        prompts = [f"### Turn {turn}\n**Action:**\n```\ncmd-{number}-{turn}\n```" for turn in range(1, turns + 1)]
        responses = [f"**Environment Observation:**\nout-{number}-{turn}" for turn in range(1, turns + 1)]
        out += [{"task": "terminal", "id": f"traj-{number}", "turn_idx": turn, "total_turns": turns,
                 "system_str": "You simulate a terminal.", "prompt": prompts, "response": responses,
                 "current_prompt": ""} for turn in range(1, turns + 1)]
    return out


@pytest.mark.parametrize("concurrency", [None, 4])
def test_bench_predict_writes_every_row(llama_server, tmp_path, concurrency):
    """9 rows, 3 trajectories: by default one at a time; with --concurrency 4 the trajectories wait
    for the server in awl (every row predicted, none failed either way)."""
    bench = tmp_path / "terminal_test.jsonl"
    bench.write_text("".join(json.dumps(row) + "\n" for row in _rows(3, 3)), encoding="utf-8")
    out = tmp_path / "predictions.jsonl"
    extra = ["--concurrency", str(concurrency)] if concurrency else []
    result = awl("bench", "predict", str(bench), "--backend", "openai", "--base-url", llama_server.base_url,
                 "--api-model", SERVED, "--ctx", "4096", "--max-tokens", "8", "--think", "off", "--out", str(out),
                 *extra, home=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 9 and not [row for row in rows if row.get("failed") or not row.get("gen") and row.get("error")]
    assert "stopped mid-answer" not in result.stderr


def test_a_prompt_past_its_context_is_said_to_not_fit(llama_server):
    """The server closes the stream before its first piece when the prompt overflows its context."""
    turn_one = [{"role": "system", "content": "You simulate a Linux terminal."},
                {"role": "user", "content": "echo " + "word " * 20_000}]  # 100 KB
    unknown = OpenAIBackend(RemoteOptions(llama_server.base_url, SERVED), parallel=1)  # it says no context
    with pytest.raises(GenerationError) as raised:
        list(unknown.generate(turn_one, sampling=QUICK, think=ThinkBudget("off"), seed=1))
    assert "may not fit the server's context" in raised.value.message and "--ctx" in raised.value.message
    assert "stopped mid-answer" not in raised.value.message
    assert "shorter action" in raised.value.hint and "earlier turn" not in raised.value.hint
    unknown.close()
    # Stated larger than it is (--ctx 8192 on a 4096 server): a prompt near the stated context.
    stated = OpenAIBackend(RemoteOptions(llama_server.base_url, SERVED), parallel=1, n_ctx=8192)
    later = [turn_one[0], {"role": "user", "content": "ls"}, {"role": "assistant", "content": "a b c"},
             {"role": "user", "content": "echo " + "word " * 3_400}]
    with pytest.raises(GenerationError) as raised:
        list(stated.generate(later, sampling=QUICK, think=ThinkBudget("off"), seed=1))
    assert "may not fit the server's context of 8,192 tokens (--ctx)" in raised.value.message
    assert "earlier turn" in raised.value.hint
    stated.close()
