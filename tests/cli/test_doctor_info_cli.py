"""`awl doctor`, `awl models info` and the out-of-memory retry, through the real entry point."""

from __future__ import annotations

import importlib.metadata
import json
import os
import stat
import sys
from pathlib import Path

import gguf
import llama_cpp
import numpy as np
import psutil
import pytest

from agentworld_local.fixtures import tiny_gguf
from tests.cli.helpers import assert_one_line_error, awl, awl_env
from tests.wide_kv_gguf import write_wide_kv_llama

CPU_BUILD = not llama_cpp.llama_supports_gpu_offload()
FAST = ["--think", "4", "--max-tokens", "8", "--seed", "1"]


@pytest.fixture(scope="module")
def mtp_gguf(tmp_path_factory) -> Path:
    return tiny_gguf.write_qwen35moe_fixture(tmp_path_factory.mktemp("mtp") / "tiny-qwen35moe-mtp.gguf", mtp=True)


# -- awl doctor ---------------------------------------------------------------------------------


def test_doctor_reports_this_machine(tmp_path):
    result = awl("doctor", "--json", home=tmp_path)
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    assert (facts["schema"], facts["version"]) == ("agentworld-local/doctor", 1)
    assert facts["llama_cpp_python"] == importlib.metadata.version("llama-cpp-python")
    assert facts["python"]["executable"] == sys.executable
    assert facts["build"]["gpu_offload"] == (not CPU_BUILD)
    assert "CPU" in facts["build"]["backends"]
    assert facts["ram"]["total_bytes"] == psutil.virtual_memory().total
    assert 0 < facts["ram"]["available_bytes"] <= facts["ram"]["total_bytes"]
    assert facts["cpu"]["threads"] == os.cpu_count()

    text = awl("doctor", home=tmp_path)
    assert text.returncode == 0, text.stderr
    assert f"llama-cpp-python  {facts['llama_cpp_python']}" in text.stdout
    assert ("no (CPU-only build)" in text.stdout) == CPU_BUILD
    assert f"{os.cpu_count()} threads" in text.stdout
    # Where the user's files are, so a config file can be found and written.
    assert facts["files"]["config"] == str(tmp_path / "config" / "config.toml")
    assert facts["files"]["config_exists"] is False
    assert str(tmp_path / "config" / "config.toml") in text.stdout


def _stand_in_nvidia_smi(folder: Path) -> dict[str, str]:
    """No NVIDIA GPU here: a stand-in `nvidia-smi` answers the query as a real one would."""
    folder.mkdir()
    tool = folder / "nvidia-smi"
    tool.write_text("#!/bin/sh\necho 'NVIDIA H200, 143771, 140112, 580.159.03'\n", encoding="utf-8")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.mark.skipif(not CPU_BUILD, reason="the rebuild advice is for CPU-only builds")
def test_doctor_prints_the_cuda_rebuild_command_for_a_cpu_build_next_to_an_nvidia_gpu(tmp_path):
    env = awl_env(tmp_path, **_stand_in_nvidia_smi(tmp_path / "bin"))
    result = awl("doctor", home=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "NVIDIA H200: 136.8 GiB free of 140.4 GiB, driver 580.159.03" in result.stdout
    version = importlib.metadata.version("llama-cpp-python")
    command = (f'CMAKE_ARGS="-DGGML_CUDA=on" {sys.executable} -m pip install --force-reinstall --no-cache-dir '
               f"llama-cpp-python=={version}")
    assert command in result.stdout.splitlines()  # on a line of its own, ready to copy
    facts = json.loads(awl("doctor", "--json", home=tmp_path, env=env).stdout)
    assert facts["advice"]["command"] == command
    assert facts["system_gpus"][0]["free_bytes"] == 140112 * 1024 * 1024

    plain = awl("doctor", home=tmp_path)  # without the GPU: no rebuild advice
    assert "CMAKE_ARGS" not in plain.stdout and "No GPU found" in plain.stdout


# -- awl models info ----------------------------------------------------------------------------


def test_info_reads_a_gguf_without_loading_it(tmp_path, mtp_gguf):
    result = awl("models", "info", str(mtp_gguf), home=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "qwen35moe  (tiny-qwen35moe-fixture)" in out
    assert "yes, llama-cpp-python" in out
    assert "9 blocks: 2 attention, 6 recurrent, 1 MTP/nextn (skipped when loading)" in out
    assert "8 (2 routed per token + 1 shared)" in out
    assert "65,536 tokens (trained)" in out
    assert f"{mtp_gguf.stat().st_size:,} bytes" in out
    assert "embedded" in out and "F16" in out

    facts = json.loads(awl("models", "info", str(mtp_gguf), "--json", home=tmp_path).stdout)
    assert (facts["schema"], facts["version"]) == ("agentworld-local/model-info", 1)
    gguf_facts = facts["gguf"]
    assert (gguf_facts["block_count"], gguf_facts["nextn_layers"], gguf_facts["n_layers"]) == (9, 1, 8)
    assert (gguf_facts["attention_layers"], gguf_facts["recurrent_layers"]) == (2, 6)
    assert gguf_facts["expert_count"] == 8 and gguf_facts["chat_template"] is True
    assert facts["llama_cpp"]["knows_architecture"] is True and facts["plan"] is None


def test_info_plan_shows_the_estimate_and_what_fits_here(tmp_path, qwen_gguf):
    facts = json.loads(awl("models", "info", str(qwen_gguf), "--plan", "--ctx", "8192", "--json", home=tmp_path).stdout)
    memory, plan = facts["memory"], facts["plan"]
    assert memory["n_ctx"] == 8192
    assert memory["kv_bytes"] == 2 * 8192 * 2 * (32 + 32) * 2  # 2 attention layers x cells x KV heads x K+V dims x f16
    assert memory["recurrent_bytes"] == 6 * (3 * (64 + 2 * 2 * 16) + 16 * 64) * 4
    assert memory["total_bytes"] == (memory["weights_bytes"] + memory["kv_bytes"] + memory["recurrent_bytes"]
                                     + memory["compute_bytes"] + memory["checkpoint_bytes"] + memory["prompt_state_bytes"]
                                     + memory["parked_state_bytes"])
    assert memory["parked_state_bytes"] == memory["kv_bytes"] + memory["recurrent_bytes"]  # one context's state
    assert memory["checkpoint_bytes"] == 8192 // 32 * memory["recurrent_bytes"]  # one state per turn, 32+ tokens each
    assert [layer["kind"] for layer in memory["layers"]].count("attention") == 2
    assert plan["fits"] and plan["n_ctx"] == 8192 and plan["max_layers"] == 9 and plan["ctx_reason"] == "as asked"
    if CPU_BUILD:
        assert plan["gpu_layers"] == 0 and plan["gpus"] == []
    assert facts["run_command"].endswith(f"--gpu-layers {plan['gpu_layers']} --ctx 8192")

    text = awl("models", "info", str(qwen_gguf), "--plan", "--ctx", "8192", home=tmp_path).stdout
    assert "memory at 8,192 tokens" in text and "KV cache" in text and "recurrent state" in text
    assert "offload plan" in text and "run with" in text


def test_info_says_when_llama_cpp_does_not_know_the_architecture(tmp_path):
    path = tmp_path / "future.gguf"
    writer = gguf.GGUFWriter(str(path), "qwen99moe")
    writer.add_uint32("qwen99moe.block_count", 1)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    result = awl("models", "info", str(path), home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "does not know `qwen99moe`" in result.stdout and "pip install -U llama-cpp-python" in result.stdout


def test_info_by_registry_name(tmp_path, mtp_gguf):
    missing = awl("models", "info", "qwen-agentworld-35b-a3b", home=tmp_path)
    assert missing.returncode == 0, missing.stderr
    assert "qwen-agentworld-35b-a3b:UD-Q4_K_M" in missing.stdout
    assert "awl models pull qwen-agentworld-35b-a3b:UD-Q4_K_M" in missing.stdout

    added = awl("models", "add", "tiny-world", str(mtp_gguf), home=tmp_path)
    assert added.returncode == 0, added.stderr
    facts = json.loads(awl("models", "info", "tiny-world", "--plan", "--json", home=tmp_path).stdout)
    assert facts["registry"]["name"] == "tiny-world" and facts["downloaded"]
    assert facts["gguf"]["architecture"] == "qwen35moe" and facts["plan"]["fits"]
    assert facts["run_command"].startswith("awl run --model tiny-world:")
    # Without --ctx the plan is for the context a load gets: the fixture is tiny, so the ceiling.
    assert facts["plan"]["n_ctx"] == facts["memory"]["n_ctx"] == 32768
    assert facts["plan"]["ctx_reason"] == "the default's ceiling (the model was trained for 65,536)"


def test_info_bad_input_is_one_line_with_the_next_step(tmp_path, mtp_gguf):
    text_file = tmp_path / "notes.gguf"
    text_file.write_text("not a model\n", encoding="utf-8")
    assert_one_line_error(awl("models", "info", str(text_file), home=tmp_path), "is not a GGUF file")

    cut = tmp_path / "cut.gguf"
    cut.write_bytes(mtp_gguf.read_bytes()[: mtp_gguf.stat().st_size // 2])
    assert_one_line_error(awl("models", "info", str(cut), "--plan", home=tmp_path), "truncated or damaged",
                          "Re-download it")
    header_only = tmp_path / "header.gguf"
    header_only.write_bytes(mtp_gguf.read_bytes()[:3000])
    assert_one_line_error(awl("models", "info", str(header_only), home=tmp_path), "header ends early")

    registered = tmp_path / "cut-world-F16.gguf"  # a registry name whose file was cut short
    registered.write_bytes(mtp_gguf.read_bytes()[:200_000])
    assert awl("models", "add", "cut-world", str(registered), home=tmp_path).returncode == 0
    assert_one_line_error(awl("models", "info", "cut-world", home=tmp_path), "`awl models pull cut-world:F16`")

    assert_one_line_error(awl("models", "info", str(tmp_path / "missing.gguf"), home=tmp_path), "not found")
    assert_one_line_error(awl("models", "info", str(tmp_path), home=tmp_path), "is a directory")


# -- out of memory: one retry with a smaller plan ------------------------------------------------


def _allocations_beyond_memory_fail() -> bool:
    # Linux's default heuristic refuses one allocation larger than RAM + swap; "always overcommit"
    # would hand the memory out and let the clear-to-zero exhaust the machine instead.
    try:
        return Path("/proc/sys/vm/overcommit_memory").read_text().strip() in ("0", "2")
    except OSError:
        return False


def test_a_context_beyond_memory_is_refused_before_the_load(tmp_path):
    """awl run refuses a context that cannot fit before loading; the out-of-memory retry
    below stays for loads that fail anyway (tested on the backend)."""
    model = tmp_path / "wide-kv.gguf"
    per_token = write_wide_kv_llama(model)
    impossible = psutil.virtual_memory().total + psutil.swap_memory().total
    n_ctx = (4 * impossible // per_token + 4095) // 4096 * 4096
    out = tmp_path / "s.jsonl"
    result = awl("run", "--model", str(model), "--gpu-layers", "0", "--ctx", str(n_ctx), "--out", str(out), *FAST,
                 home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, "--ctx")
    assert "memory estimate" not in result.stderr  # refused before anything was loaded
    assert not out.exists()


@pytest.mark.skipif(not _allocations_beyond_memory_fail(), reason="needs Linux that refuses impossible allocations")
def test_the_backend_after_a_retry_is_a_working_model(tmp_path):
    from agentworld_local.engine.llama import LlamaBackend
    from agentworld_local.engine.types import SamplingConfig, ThinkBudget

    model = tmp_path / "wide-kv.gguf"
    per_token = write_wide_kv_llama(model)
    n_ctx = (4 * (psutil.virtual_memory().total + psutil.swap_memory().total) // per_token + 4095) // 4096 * 4096
    notices: list[str] = []
    backend = LlamaBackend(model, n_ctx=n_ctx, gpu_layers=0, notice=notices.append)
    try:
        assert backend.n_ctx == 4096 and backend.gpu_layers == 0
        assert notices[0].startswith("memory estimate") and "It may not fit" in notices[0]
        assert len(notices) == 2 and "retrying once" in notices[1]
        events = list(backend.generate([{"role": "user", "content": "hi"}], sampling=SamplingConfig(max_tokens=3),
                                       think=ThinkBudget("off"), seed=0))
        assert events[-1].stats.generated_tokens >= 1
    finally:
        backend.close()
