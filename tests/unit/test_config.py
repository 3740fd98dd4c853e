"""The user's config file: a prompt pack for every new session, and clear refusals."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentworld_local.config import config_path, load_config
from agentworld_local.errors import InputError
from agentworld_local.session.spec import SessionSpec
from tests.unit.test_prompt_packs import write_pack

PACK_TEXT = "# Role and Objective\nA shell from the config's pack.\n"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("AWL_HOME", str(tmp_path / "home"))
    config_path().parent.mkdir(parents=True)
    return tmp_path


def write_config(text: str) -> None:
    config_path().write_text(text, encoding="utf-8")


def test_no_config_file_means_no_settings(home):
    assert load_config().prompts is None
    assert SessionSpec().resolve().settings.prompt_pack is None


def test_the_config_pack_is_used_for_a_new_session_and_recorded(home):
    pack = write_pack(home / "pack", {"terminal": PACK_TEXT})
    write_config(f'version = 1\n[session]\nprompts = "{pack}"\n')
    resolved = SessionSpec().resolve()
    assert "A shell from the config's pack." in resolved.settings.system_prompt
    assert resolved.settings.prompt_pack["path"] == str(pack.resolve())
    assert resolved.prompts_from_config == config_path()


def test_a_relative_pack_path_is_read_from_the_config_folder(home):
    write_pack(config_path().parent / "mine", {"terminal": PACK_TEXT})
    write_config('version = 1\n[session]\nprompts = "mine"\n')
    assert load_config().prompts == config_path().parent / "mine"


def test_prompts_given_as_an_option_win_over_the_config(home):
    write_config(f'version = 1\n[session]\nprompts = "{write_pack(home / "a", {"terminal": PACK_TEXT})}"\n')
    other = write_pack(home / "b", {"terminal": "# Role and Objective\nThe option's pack.\n"})
    resolved = SessionSpec(prompts=other).resolve()
    assert "The option's pack." in resolved.settings.system_prompt and resolved.prompts_from_config is None


def test_a_config_pack_without_the_domain_says_where_it_was_set(home):
    write_config(f'version = 1\n[session]\nprompts = "{write_pack(home / "p", {"terminal": PACK_TEXT})}"\n')
    with pytest.raises(InputError) as caught:
        SessionSpec(domain="web").resolve()
    assert str(config_path()) in caught.value.message and "--prompts" in caught.value.hint


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("version = 1\n[session\n", "is not valid TOML"),
        ("[session]\nprompts = 'x'\n", "version = None"),
        ("version = 7\n", "version = 7"),
        ("version = 1\n[sesion]\nprompts = 'x'\n", "unknown setting `sesion`"),
        ("version = 1\n[session]\nprompt = 'x'\n", "unknown setting `session.prompt`"),
        ("version = 1\n[session]\nprompts = 3\n", "not a directory path"),
    ],
)
def test_a_config_awl_cannot_use_is_refused_with_its_path(home, text, fragment):
    write_config(text)
    with pytest.raises(InputError) as caught:
        load_config()
    assert fragment in caught.value.message and str(config_path()) in caught.value.message
    assert caught.value.hint


def test_awl_run_uses_the_config_pack_and_says_so(home, tmp_path):
    pack = write_pack(home / "pack", {"terminal": PACK_TEXT})
    write_config(f'version = 1\n[session]\nprompts = "{pack}"\n')
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"version": 1, "answers": [{"raw": "<predicted_observation>\nok\n</predicted_observation>"}]}))
    out = tmp_path / "s.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "agentworld_local.cli.main", "run", "-m", f"scripted:{answers}", "--out", str(out)],
        input="ls\n", capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "prompt pack" in result.stderr and str(config_path()) in result.stderr
    header = json.loads(out.read_text().splitlines()[0])
    assert header["prompt_pack"]["path"] == str(pack.resolve())
