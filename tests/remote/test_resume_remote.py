"""`awl run --resume` of a session made on a server (a server on 127.0.0.1 streaming
realistic answers): it goes on on the same server model without being told it, on the
options given, and refuses another model (session/resume_rules.py)."""

from __future__ import annotations

from agentworld_local.testing.answers import answer
from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import assert_one_line_error, awl, scripted_model
from tests.remote.fake_openai import Reply

ITEM = answer("thinking_then_tags")


def test_a_server_session_resumes_on_its_server_model(fake, tmp_path):
    fake.replies[:] = [Reply(ITEM.raw, separate=True)]
    out = tmp_path / "s.jsonl"
    server = ("--backend", "openai", "--base-url", fake.base_url)
    made = awl("run", *server, "--api-model", "world", "--think", "off", "-o", str(out), home=tmp_path, stdin="ls\n")
    assert made.returncode == 0, made.stderr
    again = awl("run", "--resume", str(out), home=tmp_path, stdin="pwd\n")  # the model from the file
    assert again.returncode == 0, again.stderr
    also = awl("run", "--resume", str(out), *server, "--api-model", "world", home=tmp_path, stdin="id\n")
    assert also.returncode == 0, also.stderr
    turns = read_trajectory(out).current_branch()
    assert [t.action for t in turns] == ["ls", "pwd", "id"] and all(t.model is None for t in turns)
    assert [request["model"] for request in fake.requests] == ["world"] * 3
    assert_one_line_error(awl("run", "--resume", str(out), *server, "--api-model", "other", home=tmp_path, stdin="id\n"),
                          f"was made with the server model world at {fake.base_url}")
    local = scripted_model(tmp_path, ITEM.raw)
    assert_one_line_error(awl("run", "--resume", str(out), "-m", local, home=tmp_path, stdin="id\n"), "is another model")
    assert len(fake.requests) == 3  # nothing more reached the server
