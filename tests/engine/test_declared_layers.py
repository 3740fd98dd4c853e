"""A GGUF that declares an MTP block it holds no tensors for (some community Qwen-AgentWorld
files: `block_count = 41`, 40 layers held) loads as the layers it holds, says so once, and
`--speculate mtp` on it says that it has no MTP layer. A load failure advises downloading
again only when the file is shorter than its tensor data.

The files are the project's fixture (tiny_gguf, mtp="declared": the header declares the MTP
block, no tensor of it is written), loaded through the real `awl` entry point and llama.cpp.
"""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import pytest
from llama_cpp import Llama

from agentworld_local.engine.llama.loading import explain_load_failure
from agentworld_local.fixtures.tiny_gguf import write_llama_fixture, write_qwen35moe_fixture
from agentworld_local.models.inspect import held_blocks, inspect_gguf
from tests.cli.helpers import assert_one_line_error, awl

NOTICE = "declared.gguf declares 9 layers but holds 8 (no MTP layer): loading it as 8."
RUN = ["run", "--think", "off", "--max-tokens", "8", "--seed", "1", "--ctx", "4096", "--gpu-layers", "0"]


@pytest.fixture(scope="module")
def declared(tmp_path_factory) -> Path:
    return write_qwen35moe_fixture(tmp_path_factory.mktemp("declared") / "declared.gguf", mtp="declared")


def _set_key(path: Path, key: str, value: int) -> None:
    """Change one integer of a GGUF's header in place (its size and tensor data stay as they are)."""
    reader = gguf.GGUFReader(path, "r+")
    reader.fields[key].parts[-1][0] = value
    del reader


def test_llama_cpp_alone_refuses_the_file(declared):
    # What users saw: the header's 9th block has no tensors.
    with pytest.raises(ValueError):
        Llama(model_path=str(declared), n_ctx=256, verbose=False)


def test_the_summary_counts_the_layers_the_file_holds(declared):
    summary = inspect_gguf(declared)
    assert (summary.block_count, summary.nextn_layers, summary.header_block_count) == (8, 0, 9)
    assert [layer.kind for layer in summary.layers].count("mtp") == 0 and len(summary.layers) == 8
    assert summary.kv_overrides() == {"qwen35moe.block_count": 8, "qwen35moe.nextn_predict_layers": 0}
    assert summary.layers_notice() == NOTICE


@pytest.mark.parametrize(("declared", "nextn", "held", "loaded"), [
    (41, 1, 40, (40, 0)),  # the community files: the MTP block declared, none of it held
    (42, 2, 41, (41, 1)),  # one of two MTP blocks held
    (41, 1, 41, (41, 1)),  # everything held: as declared
    (41, 0, 40, (41, 0)),  # a trunk block missing: not papered over (the load says which tensor)
    (42, 1, 40, (42, 1)),  # more missing than the MTP blocks: the same
])
def test_only_missing_mtp_blocks_are_left_out(declared, nextn, held, loaded):
    assert held_blocks(declared, nextn, set(range(held))) == loaded


def test_it_loads_as_the_layers_it_holds_says_so_once_and_generates(tmp_path, declared):
    result = awl(*RUN, "--model", str(declared), stdin="ls -la\n", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count(NOTICE) == 1, result.stderr
    assert "Traceback" not in result.stderr and "saved 1 turn" in result.stderr
    session = next((tmp_path / "data" / "sessions").glob("*.jsonl"))
    turns = [json.loads(line) for line in session.read_text(encoding="utf-8").splitlines()]
    assert any(record.get("type") == "turn" for record in turns), turns  # a turn was generated and saved


def test_speculate_mtp_says_the_file_has_no_mtp_layer(tmp_path, declared):
    result = awl(*RUN, "--speculate", "mtp", "--model", str(declared), stdin="ls\n", home=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    error = [line for line in result.stderr.splitlines() if line.startswith("awl: error:")]
    assert len(error) == 1, result.stderr
    assert ("declared.gguf has no multi-token-prediction (MTP) layer (its header declares one, but the file holds "
            "none of its tensors)") in error[0]
    assert "--speculate on" in error[0]
    assert NOTICE not in result.stderr  # no "loading it as 8" before a refusal


def test_info_and_the_plan_count_the_layers_held(tmp_path, declared):
    result = awl("models", "info", str(declared), "--plan", "--ctx", "4096", "--json", home=tmp_path)
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    assert (facts["gguf"]["block_count"], facts["gguf"]["declared_block_count"]) == (8, 9)
    assert facts["plan"]["max_layers"] == 9  # 8 blocks + the output layer, as llama.cpp counts them
    assert len(facts["memory"]["layers"]) == 8
    text = awl("models", "info", str(declared), home=tmp_path).stdout
    assert "8 blocks: 2 attention, 6 recurrent; the header declares 9, but the file holds no tensors for its MTP layer" in text


def test_a_truncated_file_is_to_be_downloaded_again(tmp_path, declared):
    data = declared.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: len(data) - 4096])
    result = awl(*RUN, "--model", str(cut), stdin="ls\n", home=tmp_path)
    assert_one_line_error(result, "truncated or damaged", f"{len(data) - 4096:,} bytes", "Re-download it")
    # The load's own explanation says the same when llama.cpp is the first to notice.
    error = explain_load_failure(cut, "llama_model_load: error loading model: tensor data is not within the file bounds")
    assert "truncated or damaged" in error.one_line() and "Download it again" in error.one_line()


def test_a_complete_file_that_lacks_a_layer_names_the_missing_tensor(tmp_path):
    # 10 blocks declared, 1 of them MTP, 8 held: a trunk layer is missing, not only the MTP one.
    broken = write_qwen35moe_fixture(tmp_path / "trunk.gguf", mtp="declared")
    _set_key(broken, "qwen35moe.block_count", 10)
    result = awl(*RUN, "--model", str(broken), stdin="ls\n", home=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("awl: error: llama.cpp could not load trunk.gguf: it has no tensor `blk.8.")
    assert "(its header declares 10 layers; it holds 8)" in error
    assert "downloading it again will not help" in error
    assert "Re-download" not in error and "download is complete" not in error


def test_a_complete_file_llama_cpp_refuses_is_not_blamed_on_the_download(tmp_path):
    broken = write_llama_fixture(tmp_path / "shape.gguf")
    _set_key(broken, "llama.embedding_length", 72)  # every tensor is there, in the wrong shape for the header
    result = awl(*RUN, "--model", str(broken), stdin="ls\n", home=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("awl: error: llama.cpp could not load shape.gguf: ")
    assert "not the download" in error and "--verbose" in error
    assert "Re-download" not in error and "download is complete" not in error
