"""examples/trl_grpo.py as written, on this machine's CPU, against a real `awl serve` on
127.0.0.1 (scripted world model): it picks its device and precision itself, trains, saves the
policy, and leaves no session open on the server, when it ends and when it is interrupted.

The policy is a tiny Qwen3 made here from a config (no download): a byte-level tokenizer with
Qwen3's special tokens and TRL's own Qwen3 chat template (so TRL parses its tool calls), and
weights set so that after every prompt it calls `run_shell_command(command="df -h")` and ends
its turn. Every rollout therefore makes world-model turns until `--max-tool-calling-iterations`,
and its session stays open until the script closes it. Needs TRL, datasets and PyTorch
(`pip install trl datasets`); without them the tests skip and say so. Nothing reaches the
network (HF_HUB_OFFLINE and the rest are set).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentworld_local.testing import ScriptedAnswer, ScriptedBackend
from agentworld_local.trajectory.reader import read_trajectory
from tests.serve.helpers import served

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "trl_grpo.py"
NEEDED = ("torch", "trl", "datasets", "transformers", "tokenizers")
MISSING = [name for name in NEEDED if importlib.util.find_spec(name) is None]
# The slow tier (`pytest -m slow`): a real training run on the CPU, after building its policy.
pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    bool(MISSING), reason=f"examples/trl_grpo.py needs {', '.join(MISSING)} (pip install torch trl datasets)")]

#: The one tool call the tiny policy makes, as one token of its own.
CALL = "\n" + json.dumps({"name": "run_shell_command", "arguments": {"command": "df -h"}}) + "\n"
OFFLINE = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TRL_EXPERIMENTAL_SILENCE": "1", "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
           "CUDA_VISIBLE_DEVICES": "", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(ROOT)}
TINY = ["--steps", "2", "--num-generations", "2", "--max-completion-length", "200", "--max-tool-calling-iterations", "2"]


def build_policy(folder: str) -> None:
    """The tiny policy (run in a subprocess: torch stays out of the test process)."""
    import torch
    import trl
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    vocab = {char: index for index, char in enumerate(bytes_to_unicode().values())}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tokenizer.add_special_tokens({"additional_special_tokens": [
        "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<think>", "</think>",
        "<tool_response>", "</tool_response>"]})
    tokenizer.add_tokens([CALL])
    # TRL's own copy of Qwen3's template: TRL recognises it and parses `<tool_call>` blocks.
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text(encoding="utf-8")
    hidden = 8
    model = Qwen3ForCausalLM(Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=16, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, head_dim=4, max_position_embeddings=4096,
        tie_word_embeddings=False, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id))
    (newline,) = tokenizer.encode("\n", add_special_tokens=False)  # every generation prompt ends with it
    chain = [newline, *tokenizer.convert_tokens_to_ids(["<tool_call>", CALL, "</tool_call>", "<|im_end|>"])]
    # A bigram model: attention and MLP add nothing, so the next token follows from the current
    # one alone; each token of the chain points at the next, with a margin that leaves no doubt.
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.model.embed_tokens.weight.zero_()
        model.model.embed_tokens.weight[:, hidden - 1] = 1.0
        model.lm_head.weight.zero_()
        for place, (token, following) in enumerate(zip(chain, chain[1:])):
            model.model.embed_tokens.weight[token].zero_()
            model.model.embed_tokens.weight[token, place] = 1.0
            model.lm_head.weight[following, place] = 20.0
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


@pytest.fixture(scope="module")
def policy(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("policy")
    made = subprocess.run([sys.executable, "-c", f"from tests.env.test_trl_recipe import build_policy; "
                           f"build_policy({str(folder)!r})"], capture_output=True, text=True, env=OFFLINE,
                          cwd=ROOT)
    assert made.returncode == 0, made.stderr
    return folder


def backend() -> ScriptedBackend:
    # Short screens: two calls and their results fit in the 200 tokens of a tiny rollout.
    return ScriptedBackend([ScriptedAnswer("<predicted_observation>\n/dev/sda1 49G 49G 0 100% /\n"
                                           "</predicted_observation>")], parallel=2)


def example(url: str, policy: Path, out: Path, *more: str, **options) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(EXAMPLE), "--base-url", url, "--policy", str(policy),
                             "--out", str(out), *more], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=OFFLINE, cwd=out.parent, **options)


def test_the_example_trains_on_the_cpu_and_closes_every_session_it_opened(tmp_path, policy):
    with served(tmp_path / "sessions", backend()) as client:
        run = example(str(client.base_url), policy, tmp_path / "out", *TINY)
        stdout, stderr = run.communicate()
        assert run.returncode == 0, stderr
        assert "on cpu in fp32, 200 completion tokens, 2 tool calls per rollout at most" in stdout
        assert "Trained 2 steps" in stdout and "Every session is closed" in stderr
        assert client.get("/health").json()["sessions_open"] == 0
        listed = client.get("/sessions").json()
    assert (tmp_path / "out" / "model.safetensors").is_file()  # the trained policy
    # 2 steps x 2 rollouts, each a session of 2 turns (the tool-call limit), none left open.
    assert len(listed) == 4 and not any(session["open"] for session in listed)
    for session in listed:
        assert [turn.action for turn in read_trajectory(session["file"]).turns] == ["df -h", "df -h"]


def test_an_interrupted_run_closes_its_sessions_too(tmp_path, policy):
    with served(tmp_path / "sessions", backend()) as client:
        run = example(str(client.base_url), policy, tmp_path / "out", *TINY[2:], "--steps", "1000")
        try:
            # Until a rollout made a turn: no deadline, pytest-timeout stops a hang.
            while not any(session["open"] and session["turns"] for session in client.get("/sessions").json()):
                assert run.poll() is None, run.communicate()[1]
                time.sleep(0.1)
            run.send_signal(signal.SIGINT)  # Ctrl+C, mid-training, sessions open
            _, stderr = run.communicate()
        finally:
            if run.poll() is None:
                run.kill()
        assert run.returncode == 130, stderr
        assert "Every session is closed, its file in the server's folder.\nInterrupted.\n" in stderr
        assert "Traceback" not in stderr
        assert client.get("/health").json()["sessions_open"] == 0
