"""Every path a user gives, checked for a name too long for any file system before it is
used: one `awl: error:` line naming the limit, never a traceback (ENAMETOOLONG). The
options tests/cli/test_hostile_files.py already covers are not repeated here."""

from __future__ import annotations

import pytest

from tests.cli.helpers import assert_one_line_error, awl, scripted_model

LONG = "a" * 300
LS = "<think>\nNothing here yet.\n</think>\n<predicted_observation>\ntotal 0\n</predicted_observation>"
TOO_LONG = ("is 30", "bytes long; file systems allow at most 255 bytes per name", "shorter name")


@pytest.mark.parametrize(
    "command",
    [
        ["run", "-m", "MODEL", "--prompts", LONG],
        ["run", "-m", "MODEL", "--prompts", f"{LONG}/prompts"],
        ["run", "-m", "MODEL", "--resume", f"{LONG}.jsonl"],
        ["run", "-m", "MODEL", "--from-bench", f"{LONG}.jsonl", "--row", "1"],
        ["run", "-m", "MODEL", "--initial-state", f"{LONG}.txt"],
        ["run", "-m", "MODEL", f"{LONG}.txt"],
        ["run", "-m", "MODEL", "--scenario", f"{LONG}.toml"],
        ["run", "-m", f"scripted:{LONG}.json"],
        ["fork", f"{LONG}.jsonl", "--out", "x.jsonl"],
        ["export", f"{LONG}.jsonl", "--out", "x.jsonl"],
        ["play", "-m", "MODEL", "--prompts", LONG],  # refused before the screen opens
        ["bench", "judge", "PREDICTIONS", "--judge-base-url", "http://127.0.0.1:9/v1", "--judge-model", "j",
         "--prompts", LONG],
        ["bench", "judge", f"{LONG}.jsonl", "--judge-base-url", "http://127.0.0.1:9/v1", "--judge-model", "j",
         "--prompts", "."],
        ["bench", "score", f"{LONG}.jsonl"],
        ["models", "add", "x", f"{LONG}.gguf"],
    ],
    ids=lambda command: " ".join(part[:12] for part in command if part != "MODEL"),
)
def test_a_given_path_with_a_name_too_long_is_one_line(tmp_path, command):
    model = scripted_model(tmp_path, LS)
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("{}\n", encoding="utf-8")
    given = {"MODEL": model, "PREDICTIONS": str(predictions)}
    command = [given.get(part, part) for part in command]
    result = awl(*command, home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, *TOO_LONG)


def test_a_config_prompt_pack_with_a_name_too_long_is_one_line(tmp_path):
    """`prompts` in the config file, read for every new session."""
    config = tmp_path / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'version = 1\n[session]\nprompts = "{LONG}"\n', encoding="utf-8")
    result = awl("run", "-m", scripted_model(tmp_path, LS), home=tmp_path, stdin="ls\n")
    assert_one_line_error(result, *TOO_LONG)
    assert "prompt pack" in result.stderr
