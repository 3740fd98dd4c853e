"""A session file says how llama.cpp ran its model: context, GPU layers, flash attention, the
KV cache type and the experts kept in RAM (optional ModelRef fields added within schema v1:
older files read as before, a damaged value is refused)."""

from __future__ import annotations

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.scripted import ScriptedBackend
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.world import World
from agentworld_local.models.offload_options import OffloadOptions
from agentworld_local.session.core import Session
from agentworld_local.trajectory import read_trajectory
from agentworld_local.trajectory.schema import Header, ModelRef

SETTINGS = SessionSettings(sampling=SamplingConfig(max_tokens=4), think=ThinkBudget.parse("off"), seed=1)


@pytest.mark.parametrize(("options", "flash"), [
    (OffloadOptions(cpu_moe=2, kv_type="q8_0", flash_attn="on"), True),
    (OffloadOptions(flash_attn="off"), False),
])
def test_the_header_records_how_llama_cpp_ran_the_model(tmp_path, qwen_gguf, options, flash):
    backend = LlamaBackend(qwen_gguf, n_ctx=2048, gpu_layers=0, offload=options)
    try:
        session = Session.create(World(backend, get_domain("terminal"), SETTINGS), tmp_path / "s.jsonl")
        session.step("ls")
        session.close()
    finally:
        backend.close()
    model = read_trajectory(tmp_path / "s.jsonl").header.model
    assert (model.n_ctx, model.gpu_layers) == (2048, 0)
    assert (model.flash_attention, model.kv_type, model.cpu_moe) == (flash, options.kv_type, options.cpu_moe)


def test_a_scripted_session_records_no_load_and_an_older_header_reads_as_before(tmp_path):
    answer = "<predicted_observation>\nfile.txt\n</predicted_observation>"
    session = Session.create(World(ScriptedBackend([answer]), get_domain("terminal"), SETTINGS), tmp_path / "s.jsonl")
    session.step("ls")
    session.close()
    stored = read_trajectory(tmp_path / "s.jsonl").header.model.to_dict()
    assert not {"n_ctx", "gpu_layers", "flash_attention", "kv_type", "cpu_moe"} & set(stored)
    old = Header.from_dict({"type": "header", "schema": "agentworld-local/trajectory", "version": 1,
                            "model": {"name": "m.gguf", "sha256": None}})
    assert (old.model.flash_attention, old.model.kv_type, old.model.cpu_moe, old.model.n_ctx) == (None,) * 4


def test_a_damaged_load_field_is_refused_with_its_name():
    with pytest.raises(ValueError, match="flash_attention"):
        ModelRef.from_dict({"name": "m.gguf", "flash_attention": "yes"})
    with pytest.raises(ValueError, match="cpu_moe"):
        ModelRef.from_dict({"name": "m.gguf", "cpu_moe": True})
    ref = ModelRef.from_dict({"name": "m.gguf", "n_ctx": 4096, "kv_type": "f16", "cpu_moe": -1, "flash_attention": False})
    assert ModelRef.from_dict(ref.to_dict()) == ref
