"""Every server failure a user meets is one line that names the next step (exit 2, no
traceback), against a real HTTP server on 127.0.0.1 that answers with that failure; the
failures the client retries (429, 5xx) are retried with backoff and the turn goes on."""

from __future__ import annotations

import json

import pytest

from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.errors import InputError
from agentworld_local.testing.answers import answer
from tests.cli.helpers import assert_one_line_error, awl, awl_env
from tests.remote.conftest import free_port
from tests.remote.fake_openai import Reply

SECRET = "sk-test-not-to-be-written-9f3a"


def assert_turn_error(result, *fragments: str) -> None:
    """A failure during a turn: exit 2, one `awl: error:` line (after the turn's own header), no traceback."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("awl: error:")]
    assert len(errors) == 1, result.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]


def run_remote(fake_url: str, tmp_path, *extra: str, stdin: str = "ls\n", env: dict | None = None):
    out = tmp_path / "s.jsonl"
    args = ["run", "--backend", "openai", "--base-url", fake_url, "--api-model", "world", "--think", "off",
            "--out", str(out), *extra]
    return awl(*args, home=tmp_path, stdin=stdin, env=env), out


@pytest.fixture
def answering(fake):
    fake.replies[:] = [Reply(answer("thinking_then_tags").raw, separate=True)]
    return fake


def test_a_whole_session_records_the_server_and_never_the_key(answering, tmp_path):
    answering.key = SECRET
    env = awl_env(tmp_path, WORLD_KEY=SECRET)
    result, out = run_remote(answering.base_url, tmp_path, "--api-key-env", "WORLD_KEY",
                             stdin="ls\n:undo\npwd\n:regenerate\n", env=env)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    model = lines[0]["model"]
    assert (model["backend"], model["endpoint"], model["name"]) == ("openai", answering.base_url, "world")
    assert [line.get("type") for line in lines[1:]].count("turn") >= 2
    for text in (out.read_text(encoding="utf-8"), result.stdout, result.stderr):
        assert SECRET not in text
    assert all(h["authorization"] == f"Bearer {SECRET}" for h in answering.headers)


def test_the_endpoint_is_recorded_without_credentials():
    options = RemoteOptions("http://user:pw@127.0.0.1:8000/v1/?key=abc#x", "world")
    assert options.endpoint == "http://127.0.0.1:8000/v1"


def test_a_wrong_key_is_one_line_naming_the_variable(answering, tmp_path):
    answering.key = "the-right-one"
    result, out = run_remote(answering.base_url, tmp_path, "--api-key-env", "WORLD_KEY",
                             env=awl_env(tmp_path, WORLD_KEY=SECRET))
    assert_one_line_error(result, "refused the API key (401", "WORLD_KEY")
    assert SECRET not in result.stderr and not out.exists()


def test_a_named_key_variable_that_is_not_set_is_one_line(answering, tmp_path):
    result, _ = run_remote(answering.base_url, tmp_path, "--api-key-env", "NO_SUCH_KEY_VAR")
    assert_one_line_error(result, "NO_SUCH_KEY_VAR", "is not set")


def test_an_unknown_model_names_the_served_ones(answering, tmp_path):
    answering.models[:] = ["qwen-agentworld", "other"]
    result, _ = run_remote(answering.base_url, tmp_path)
    assert_one_line_error(result, "does not serve the model `world`", "qwen-agentworld, other", "--api-model qwen-agentworld")


def test_a_base_url_without_the_api_path_is_one_line(answering, tmp_path):
    result, _ = run_remote(answering.base_url.removesuffix("/v1"), tmp_path)
    assert_one_line_error(result, "404", "--base-url", "/v1")


def test_429_and_5xx_are_retried_and_the_turn_goes_on(answering, tmp_path):
    answering.errors[:] = [(429, "slow down"), (503, "warming up")]
    result, out = run_remote(answering.base_url, tmp_path)
    assert result.returncode == 0, result.stderr
    assert answering.calls == 3  # two refusals, then the answer
    assert "root@sandbox:/app#" in result.stdout


def test_5xx_after_every_retry_is_one_line(answering, tmp_path):
    answering.errors[:] = [(500, "model crashed")] * 3
    result, _ = run_remote(answering.base_url, tmp_path, "--retries", "2")
    assert_turn_error(result, "HTTP 500 after 2 retries", "model crashed")
    assert answering.calls == 3


def test_a_conversation_longer_than_the_servers_context_is_one_line(answering, tmp_path):
    answering.context_chars = 200
    result, _ = run_remote(answering.base_url, tmp_path)
    assert_turn_error(result, "longer than the context", "maximum context length", "--max-model-len")


def test_a_server_that_does_not_answer_in_time_is_one_line(answering, tmp_path):
    answering.delay = 3.0  # before the answer's first byte
    result, _ = run_remote(answering.base_url, tmp_path, "--timeout", "0.5", "--retries", "0")
    assert_turn_error(result, "did not answer within 0.5 seconds", "--timeout")


def test_no_server_at_the_address_is_one_line(tmp_path):
    result, _ = run_remote(f"http://127.0.0.1:{free_port()}/v1", tmp_path, "--retries", "0")
    assert_one_line_error(result, "Cannot reach the server", "--base-url")


@pytest.mark.parametrize(("args", "fragment"), [
    (["--backend", "openai", "--api-model", "world"], "needs --base-url"),
    (["--backend", "openai", "--base-url", "http://127.0.0.1:1/v1"], "needs --api-model"),
    (["--backend", "openai", "--base-url", "ftp://x/v1", "--api-model", "world"], "not an http(s) URL"),
    (["--backend", "openai", "--base-url", "http://127.0.0.1:1/v1", "--api-model", "w", "-m", "x.gguf"], "Drop --model"),
    (["--base-url", "http://127.0.0.1:1/v1", "-m", "x.gguf"], "Add `--backend openai`"),
    (["--backend", "vllm", "-m", "x.gguf"], "Unknown --backend"),
])
def test_options_that_cannot_work_are_one_line(tmp_path, args, fragment):
    assert_one_line_error(awl("run", *args, home=tmp_path, stdin="ls\n"), fragment)


def test_a_bad_option_is_refused_before_connecting():
    with pytest.raises(InputError, match="--timeout"):
        RemoteOptions("http://127.0.0.1:1/v1", "world", timeout_s=0)


def test_a_connection_dropped_mid_answer_is_one_line_and_the_finished_turns_stay(fake, tmp_path):
    raw = answer("thinking_then_tags").raw
    fake.replies[:] = [Reply(raw, separate=True), Reply(raw, separate=True, die_after=6)]
    result, out = run_remote(fake.base_url, tmp_path, stdin="ls\npwd\n")
    assert_turn_error(result, "stopped mid-answer", "was not saved", "1 completed")
    saved = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [line.get("action") for line in saved[1:]] == ["ls"]
