"""`awl models info NAME --plan` before the download (estimates from the registry), labels that
say where a file came from, and a `models list` legend that explains every symbol it prints."""

from __future__ import annotations

import json
import shutil

from agentworld_local.cli.models import LIST_LEGEND
from agentworld_local.models.hardware import GpuInfo, Hardware
from agentworld_local.models.plan import plan_before_download
from tests.cli.helpers import awl, awl_env

GIB = 2**30


def offline(home):
    return awl_env(home, HF_HUB_OFFLINE="1", HF_HOME=str(home / "hf"), HF_HUB_CACHE=str(home / "hf" / "hub"))


def test_plan_of_a_registry_model_before_download_is_marked_as_an_estimate(tmp_path):
    result = awl("models", "info", "qwen3.5-0.8b", "--plan", "--json", home=tmp_path, env=offline(tmp_path))
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    assert not facts["downloaded"] and facts["plan"] is None
    before = facts["plan_before_download"]
    assert before["estimate"] is True and before["weights_exact"] is False and before["weights_bytes"] > 0
    shown = awl("models", "info", "qwen3.5-0.8b", "--plan", home=tmp_path, env={**offline(tmp_path), "COLUMNS": "200"})
    assert "plan (estimate)" in shown.stdout and "run --plan again once it is downloaded" in shown.stdout


def test_the_weights_alone_decide_what_the_registry_can_tell():
    ram_only = Hardware(ram_total=16 * GIB, ram_available=12 * GIB, cpu_threads=8, cpu_cores=4)
    assert plan_before_download(4 * GIB, True, ram_only)["weights_fit"]
    assert not plan_before_download(40 * GIB, True, ram_only)["weights_fit"]
    gpu = GpuInfo("GPU", 24 * GIB, 24 * GIB, "llama.cpp")
    with_gpu = Hardware(ram_total=16 * GIB, ram_available=12 * GIB, cpu_threads=8, cpu_cores=4, gpus=(gpu,))
    on_gpu = plan_before_download(10 * GIB, False, with_gpu)
    assert on_gpu["weights_fit_gpu"] and "about" in on_gpu["reason"]
    split = plan_before_download(30 * GIB, True, with_gpu)
    assert split["weights_fit"] and not split["weights_fit_gpu"] and "GPU and RAM together" in split["reason"]


def test_a_file_you_added_is_a_local_file_not_a_hub_file(tmp_path, qwen_gguf):
    mine = tmp_path / "my-world.gguf"
    shutil.copyfile(qwen_gguf, mine)
    env = {**offline(tmp_path), "COLUMNS": "200"}
    assert awl("models", "add", "my-world", str(mine), home=tmp_path, env=env).returncode == 0
    shown = awl("models", "info", "my-world", home=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "local file" in shown.stdout and str(mine) in shown.stdout and "hub file" not in shown.stdout


def test_every_symbol_of_the_list_is_in_its_legend(tmp_path):
    config = tmp_path / "config" / "models.toml"
    config.parent.mkdir(parents=True)
    config.write_text('version = 1\n[models.mystery]\nrepo = "x/y"\ndefault_quant = "Q4"\n'
                      '[models.mystery.quants.Q4]\nfile = "m.gguf"\n')
    result = awl("models", "list", home=tmp_path, env=offline(tmp_path))
    assert result.returncode == 0, result.stderr
    table = result.stdout.split("\n\n")[0]
    legend = " ".join(LIST_LEGEND)
    assert "?" in table and "~" in table and "* " in table
    for symbol in ("* default", "~ estimated", "? not in the registry", "differs"):
        assert symbol in legend and symbol in result.stdout, symbol
