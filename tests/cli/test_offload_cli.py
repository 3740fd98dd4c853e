"""--cpu-moe, --n-cpu-moe, --flash-attn and --kv-type through the real entry point."""

from __future__ import annotations

import json

import pytest

from tests.cli.helpers import assert_one_line_error, awl

FAST = ["--think", "off", "--max-tokens", "2", "--seed", "1", "--ctx", "4096", "--gpu-layers", "0"]


def test_a_bad_offload_value_is_one_line_before_the_load(tmp_path, qwen_gguf):
    # Every value's message is checked in tests/unit/test_inspect_memory_plan.py; this is the path to the user.
    result = awl("run", "--model", str(qwen_gguf), *FAST, "--kv-type", "q4", home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, "Unknown --kv-type `q4`", "--kv-type q8_0")


def test_experts_in_ram_for_a_dense_model_is_one_line_before_the_load(tmp_path, llama_gguf):
    result = awl("run", "--model", str(llama_gguf), *FAST, "--cpu-moe", home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, "has no experts", "Drop --cpu-moe")


def test_a_session_with_experts_in_ram_runs_and_llama_cpp_says_where_they_went(tmp_path, qwen_gguf):
    out = tmp_path / "s.jsonl"
    result = awl("run", "--model", str(qwen_gguf), *FAST, "--n-cpu-moe", "2", "--verbose", "--out", str(out),
                 home=tmp_path, stdin="ls -la\n")
    assert result.returncode == 0, result.stderr
    overridden = [line for line in result.stderr.splitlines() if "buffer type overridden to CPU" in line]
    assert len(overridden) == 6 and all("blk.0." in line or "blk.1." in line for line in overridden)
    assert out.exists()


def test_info_plan_counts_experts_in_ram_flash_attention_and_the_kv_type(tmp_path, qwen_gguf):
    tuned = json.loads(awl("models", "info", str(qwen_gguf), "--plan", "--ctx", "8192", "--cpu-moe", "--kv-type", "q8_0",
                           "--json", home=tmp_path).stdout)
    assert tuned["memory"]["kv_bytes"] == 2 * 8192 * 2 * (32 + 32) * 34 // 32  # q8_0: 34 bytes per 32 values
    assert tuned["memory"]["flash_attn"] is True and tuned["plan"]["kv_type"] == "q8_0"
    assert tuned["plan"]["cpu_moe"] == -1 and tuned["plan"]["cpu_expert_bytes"] == tuned["memory"]["expert_bytes"] > 0
    assert "--cpu-moe" in tuned["run_command"] and "--kv-type q8_0" in tuned["run_command"]
    text = awl("models", "info", str(qwen_gguf), "--plan", "--n-cpu-moe", "3", home=tmp_path).stdout
    assert "experts in RAM" in text and "the first 3 layers" in text
