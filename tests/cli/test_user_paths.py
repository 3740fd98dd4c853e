"""One rule for a path a user writes, in an option or in the config file: `~` is their home,
`~name` that user's home, and a user the system does not know is one line (it was a traceback
in the config's `prompts`, `--prompts`, `-s FILE` and `scenarios show`)."""

from __future__ import annotations

import pytest

from tests.cli.helpers import assert_one_line_error, awl, scripted_model

UNKNOWN = "~no-such-user-awl-9f3a"


@pytest.mark.parametrize("args", [
    ["scenarios", "show", f"{UNKNOWN}/world.toml"],
    ["run", "-s", f"{UNKNOWN}/world.toml"],
    ["run", "--prompts", f"{UNKNOWN}/pack"],
    ["run", "-m", f"{UNKNOWN}/model.gguf"],
])
def test_a_home_of_an_unknown_user_in_an_option_is_one_line(tmp_path, args):
    if args[0] == "run" and "-m" not in args:
        args = [*args, "-m", scripted_model(tmp_path, "ls")]
    result = awl(*args, home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, f"there is no user `{UNKNOWN[1:]}`")


def test_a_home_of_an_unknown_user_in_the_config_file_is_one_line(tmp_path):
    config = tmp_path / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(f'version = 1\n\n[session]\nprompts = "{UNKNOWN}/pack"\n')
    result = awl("run", "-m", scripted_model(tmp_path, "ls"), home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, f"there is no user `{UNKNOWN[1:]}`")
