"""The system-prompt state cache as a user meets it: `awl run` twice on the same model (the
second session's first turn starts after the cached system prompt), `awl cache info` and
`clear`, `awl doctor`, and the config key that turns it off."""

from __future__ import annotations

import json

import pytest

from tests.cli.helpers import assert_one_line_error, awl

# --no-prefetch: the runner evaluates a turn's known start while awl waits for the action, and a
# turn counts only what it evaluates after the action: how much that is would depend on timing.
FAST = ["--think", "off", "--max-tokens", "6", "--ctx", "4096", "--seed", "3", "--json", "--no-prefetch"]


def first_turn_tokens(out) -> dict:
    turn = next(json.loads(line) for line in out.read_text().splitlines()[1:] if '"turn"' in line)
    return turn["tokens"]


def write_config(home, text: str) -> None:
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "config.toml").write_text(text, encoding="utf-8")


def test_a_second_session_starts_after_the_cached_system_prompt(qwen_gguf, tmp_path):
    home = tmp_path / "home"
    runs = []
    for name in ("one", "two"):
        out = tmp_path / f"{name}.jsonl"
        result = awl("run", "-m", str(qwen_gguf), "-o", str(out), *FAST, home=home, stdin="ls\n")
        assert result.returncode == 0, result.stderr
        runs.append(first_turn_tokens(out))
    first, second = runs
    assert first["prompt_evaluated"] == first["prompt_total"]
    assert second["prompt_total"] == first["prompt_total"]
    assert second["prompt_evaluated"] * 5 < second["prompt_total"], "the system prompt came from the cache"

    info = awl("cache", "info", "--json", home=home)
    facts = json.loads(info.stdout)
    # The system prompt's state and the first turn's start (the process's first: written at once).
    assert (facts["entries"], facts["files"], facts["enabled"]) == (2, 4, True) and facts["bytes"] > 0
    doctor = json.loads(awl("doctor", "--json", home=home).stdout)
    assert doctor["files"]["state_cache"]["bytes"] == facts["bytes"]

    cleared = awl("cache", "clear", home=home)
    assert cleared.returncode == 0 and "Removed 4 files" in cleared.stdout
    assert json.loads(awl("cache", "info", "--json", home=home).stdout)["files"] == 0
    out = tmp_path / "three.jsonl"
    assert awl("run", "-m", str(qwen_gguf), "-o", str(out), *FAST, home=home, stdin="ls\n").returncode == 0
    assert first_turn_tokens(out)["prompt_evaluated"] == first["prompt_total"], "cleared: evaluated again"


def test_the_config_turns_the_cache_off(qwen_gguf, tmp_path):
    home = tmp_path / "home"
    write_config(home, 'version = 1\n[cache]\nprompt_states = "off"\n')
    for name in ("one", "two"):
        out = tmp_path / f"{name}.jsonl"
        assert awl("run", "-m", str(qwen_gguf), "-o", str(out), *FAST, home=home, stdin="ls\n").returncode == 0
        tokens = first_turn_tokens(out)
        assert tokens["prompt_evaluated"] == tokens["prompt_total"]
    facts = json.loads(awl("cache", "info", "--json", home=home).stdout)
    assert (facts["files"], facts["enabled"]) == (0, False)


@pytest.mark.parametrize("value", ['"lots"', "5", '"-1GB"'])
def test_a_budget_awl_cannot_read_is_one_clear_line(tmp_path, value):
    home = tmp_path / "home"
    write_config(home, f"version = 1\n[cache]\nprompt_states = {value}\n")
    assert_one_line_error(awl("cache", "info", home=home), "cache.prompt_states", "config.toml")
