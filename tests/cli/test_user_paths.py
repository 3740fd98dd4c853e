"""One rule for a path a user writes, in an option or in the config file: `~` is their home,
`~name` that user's home, and a user the system does not know is one line (it was a traceback
in the config's `prompts`, `--prompts`, `-s FILE` and `scenarios show`)."""

from __future__ import annotations

import shutil

import pytest

from tests.cli.helpers import REPO, assert_one_line_error, awl, awl_env, scripted_model

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


DEMO = "assets/examples/terminal-demo.jsonl"


@pytest.mark.parametrize("args", [
    ["run", "-o", f"{UNKNOWN}/x.jsonl"],
    ["run", f"--out={UNKNOWN}/x.jsonl"],
    ["fork", DEMO, "-o", f"{UNKNOWN}/x.jsonl"],
    ["export", DEMO, "-o", f"{UNKNOWN}/x.jsonl"],
    ["import", "bench.jsonl", "--out-dir", f"{UNKNOWN}/bench"],
    ["bench", "predict", "bench.jsonl", "-m", "MODEL", "-o", f"{UNKNOWN}/p.jsonl"],
    ["bench", "judge", "p.jsonl", "--judge-base-url", "http://127.0.0.1:9/v1", "--judge-model", "j",
     "--prompts", "prompts", "-o", f"{UNKNOWN}/j.jsonl"],
    ["demo", "-o", f"{UNKNOWN}/x.jsonl"],
    ["mcp", "--model", "MODEL", "--out-dir", f"{UNKNOWN}/s"],
    ["serve", "--model", "MODEL", "--dir", f"{UNKNOWN}/s"],
    ["replay", f"{UNKNOWN}/x.jsonl"],
    ["run", "--resume", f"{UNKNOWN}/x.jsonl"],
])
def test_an_output_path_in_the_home_of_an_unknown_user_is_one_line_and_makes_no_folder(tmp_path, args):
    """`-o ~nosuchuser/x.jsonl` made a folder literally named `~nosuchuser` (in the working
    directory); every path option follows the one rule (files.user_path)."""
    args = [str(tmp_path / "answers.json") if arg == "MODEL" else arg for arg in args]
    if args[0] == "run" and "--resume" not in args:
        args = [*args, "-m", scripted_model(tmp_path, "ls")]
    try:
        result = awl(*args, home=tmp_path, stdin="ls\n")
        assert_one_line_error(result, f"there is no user `{UNKNOWN[1:]}`")
    finally:
        made = REPO / UNKNOWN
        existed = made.exists()
        shutil.rmtree(made, ignore_errors=True)  # what the old code left in the working directory
    assert not existed


LS = "<think>\nNothing here yet.\n</think>\n<predicted_observation>\ntotal 0\n</predicted_observation>"


@pytest.mark.parametrize("command", ["run", "fork", "export"])
def test_a_tilde_in_an_output_path_is_the_users_home_whatever_the_shell_did(tmp_path, command):
    """`--out=~/x.jsonl` reaches awl unexpanded (the shell expands `~` only at a word's start)."""
    home = tmp_path / "home"
    home.mkdir()
    env = awl_env(tmp_path, HOME=str(home))
    out = "--out=~/made/x.jsonl"
    if command == "run":
        result = awl("run", "-m", scripted_model(tmp_path, LS), out, home=tmp_path, stdin="ls\n", env=env)
    else:
        result = awl(command, DEMO, out, home=tmp_path, env=env)
    try:
        assert result.returncode == 0, result.stderr
        assert (home / "made" / "x.jsonl").is_file()
    finally:
        existed = (REPO / "~").exists()
        shutil.rmtree(REPO / "~", ignore_errors=True)
    assert not existed
