"""The remote backend against a real OpenAI-compatible server: llama-cpp-python's own
(`python -m llama_cpp.server`, its `server` extra) over the generated qwen35moe fixture,
started on 127.0.0.1 by the test and stopped after. Random weights write no tags, so these
check the engine path: whole sessions with undo and regenerate, streaming, cancel, and a
server killed in the middle of a turn."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

from agentworld_local.engine.remote.backend import OpenAIBackend
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.engine.types import AnswerChunk, GenerationDone, SamplingConfig, ThinkBudget
from tests.cli.helpers import REPO, awl, awl_env
from tests.remote.conftest import SERVED, LlamaServer

#: top_k 0: llama-cpp-python's server samples the fixture's large vocabulary slowly with a top-k.
QUICK = SamplingConfig(temperature=1.0, top_k=0, max_tokens=100)
PROMPT = [{"role": "system", "content": "You simulate a Linux terminal."}, {"role": "user", "content": "ls -la"}]


def short_prompt_pack(directory):
    """A prompt pack with a one-line system prompt: the server re-evaluates the whole prompt
    of the hybrid fixture every turn, and the bundled terminal prompt is thousands of tokens."""
    (directory / "terminal").mkdir(parents=True)
    (directory / "terminal" / "system_prompt.txt").write_text("You simulate a Linux terminal.\n", encoding="utf-8")
    return directory


def test_a_whole_session_with_undo_and_regenerate(llama_server, tmp_path):
    out = tmp_path / "s.jsonl"
    result = awl("run", "--backend", "openai", "--base-url", llama_server.base_url, "--api-model", SERVED,
                 "--prompts", str(short_prompt_pack(tmp_path / "prompts")),
                 "--think", "off", "--max-tokens", "8", "--out", str(out), home=tmp_path,
                 stdin="ls\npwd\n:undo\ncat notes.txt\n:regenerate\n")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    header = lines[0]
    assert header["model"]["backend"] == "openai" and header["model"]["name"] == SERVED
    assert header["model"]["endpoint"] == llama_server.base_url
    kinds = [line.get("type") for line in lines[1:]]
    # ls, pwd, undo, cat, then regenerate: an undo and the turn again
    assert kinds == ["turn", "turn", "undo", "turn", "undo", "turn"]
    turns = [line for line in lines[1:] if line.get("type") == "turn"]
    assert all(t["tokens"]["generated"] > 0 and t["raw_output"] for t in turns)
    assert "saved 2 turns" in result.stderr


def test_answers_stream_piece_by_piece(llama_server):
    backend = OpenAIBackend(RemoteOptions(llama_server.base_url, SERVED))
    events = list(backend.generate(PROMPT, sampling=QUICK, think=ThinkBudget("off"), seed=3))
    pieces = [e for e in events if isinstance(e, AnswerChunk)]
    done = events[-1]
    assert isinstance(done, GenerationDone) and len(pieces) > 3
    assert "".join(p.text for p in pieces) == done.raw_output
    backend.close()


def test_cancel_ends_the_turn_at_once(llama_server):
    backend = OpenAIBackend(RemoteOptions(llama_server.base_url, SERVED))
    for seed in range(3):  # a race with the server's own pace: several times
        cancel = threading.Event()
        events = backend.generate(PROMPT, sampling=QUICK, think=ThinkBudget("off"), seed=seed, cancel=cancel)
        asked = None
        for event in events:
            if asked is None:
                cancel.set()
                asked = time.perf_counter()
            if isinstance(event, GenerationDone):
                assert event.stats.finish in ("cancelled", "stop")  # a very short answer may end first
                break
        assert time.perf_counter() - asked < 0.5
    backend.close()


def test_a_server_killed_mid_turn_loses_nothing_and_says_one_line(qwen_gguf, tmp_path):
    server = LlamaServer(qwen_gguf, tmp_path / "server.log")
    out = tmp_path / "s.jsonl"
    command = [sys.executable, "-m", "agentworld_local.cli.main", "run", "--json", "--backend", "openai",
               "--base-url", server.base_url, "--api-model", SERVED, "--think", "off", "--max-tokens", "64",
               "--prompts", str(short_prompt_pack(tmp_path / "prompts")),
               "--retries", "0", "--out", str(out)]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=awl_env(tmp_path), cwd=REPO)
    try:
        process.stdin.write("ls\n")
        process.stdin.flush()
        for line in process.stdout:
            if json.loads(line).get("event") == "turn_done":
                break
        process.stdin.write("pwd\n")
        process.stdin.flush()
        for line in process.stdout:
            if json.loads(line).get("event") == "action":
                break
        server.kill()  # while the second turn's request is on its way or streaming
        stdout, stderr = process.communicate()
    finally:
        server.stop()
        if process.poll() is None:
            process.kill()
    assert process.returncode == 2, stderr
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("awl: error:")]
    assert len(errors) == 1 and server.base_url in errors[0], stderr
    assert "1 completed" in errors[0]  # the finished turn is said to be kept
    saved = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [line.get("type") for line in saved[1:]] == ["turn"] and saved[1]["action"] == "ls"


def test_a_fork_goes_on_from_its_turn_on_the_server(llama_server, tmp_path):
    out, fork = tmp_path / "s.jsonl", tmp_path / "fork.jsonl"
    server = ("--backend", "openai", "--base-url", llama_server.base_url, "--api-model", SERVED)
    pack = str(short_prompt_pack(tmp_path / "prompts"))
    made = awl("run", *server, "--prompts", pack, "--think", "off", "--max-tokens", "8", "--out", str(out),
               home=tmp_path, stdin="ls\npwd\n")
    assert made.returncode == 0, made.stderr
    assert awl("fork", str(out), "--turn", "1", "--out", str(fork), home=tmp_path).returncode == 0
    going_on = awl("run", "--resume", str(fork), *server, home=tmp_path, stdin="whoami\n")
    assert going_on.returncode == 0, going_on.stderr
    turns = [json.loads(line) for line in fork.read_text(encoding="utf-8").splitlines()[1:]]
    assert [t["action"] for t in turns if t.get("type") == "turn"] == ["ls", "whoami"]
    assert json.loads(fork.read_text(encoding="utf-8").splitlines()[0])["model"]["endpoint"] == llama_server.base_url
