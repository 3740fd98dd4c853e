"""--speculate through the real entry point: a bad value is one line; `on` reaches the sampling
loop (the turn records the drafts it verified), `off` verifies none, and the turns are the same."""

from __future__ import annotations

import json

from tests.cli.helpers import assert_one_line_error, awl

FLAGS = ["--think", "off", "--max-tokens", "40", "--temperature", "0", "--seed", "1", "--ctx", "4096", "--gpu-layers", "0"]


def test_a_bad_speculate_value_is_one_line_before_the_load(tmp_path, llama_gguf):
    result = awl("run", "--model", str(llama_gguf), *FLAGS, "--speculate", "maybe", home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, "Unknown --speculate `maybe`", "--speculate auto")


def test_speculate_on_verifies_drafts_and_records_them(tmp_path, llama_gguf):
    turns = {}
    for mode in ("on", "off"):
        out = tmp_path / f"{mode}.jsonl"
        result = awl("run", "--model", str(llama_gguf), *FLAGS, "--speculate", mode, "--out", str(out),
                     home=tmp_path, stdin="cat notes.txt\ncat notes.txt\n")
        assert result.returncode == 0, result.stderr
        turns[mode] = [json.loads(line) for line in out.read_text().splitlines() if '"raw_output"' in line]
    assert len(turns["on"]) == 2
    assert sum(turn["tokens"].get("accepted", 0) for turn in turns["on"]) > 0
    assert all("drafted" not in turn["tokens"] for turn in turns["off"])
    assert [turn["raw_output"] for turn in turns["on"]] == [turn["raw_output"] for turn in turns["off"]]


def test_mtp_on_a_model_without_an_mtp_layer_is_one_error_line(tmp_path, qwen_gguf):
    result = awl("run", "--model", str(qwen_gguf), *FLAGS, "--speculate", "mtp", home=tmp_path, stdin="ls\n")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("awl: error:")]
    assert len(errors) == 1 and "no multi-token-prediction (MTP) layer" in errors[0] and "--speculate on" in errors[0]
    assert not list(tmp_path.rglob("*.jsonl"))  # no session was started
