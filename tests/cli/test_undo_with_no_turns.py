"""An undo before any turn says there is nothing to undo and what to do, in one line, on every
face (`awl run`, the Python env, the REST API); never a "turn -1"."""

from __future__ import annotations

import pytest

import agentworld_local
from agentworld_local.errors import InputError
from agentworld_local.testing import ScriptedBackend
from agentworld_local.testing.answers import answer
from tests.cli.helpers import assert_one_line_error, awl, scripted_model
from tests.serve.helpers import served

LS = "<think>\nNothing here yet.\n</think>\n<predicted_observation>\ntotal 0\n</predicted_observation>"
NOTHING = "There is no turn to undo yet."
NEXT = "Run an action first."


@pytest.mark.parametrize("given", ["script", "stdin"])
def test_awl_run_whose_first_line_is_undo_says_there_is_nothing_to_undo(tmp_path, given):
    script = tmp_path / "actions.txt"
    script.write_text(":undo\nls\n", encoding="utf-8")
    model = scripted_model(tmp_path, LS)
    if given == "script":
        result = awl("run", str(script), "-m", model, home=tmp_path)
    else:
        result = awl("run", "-m", model, home=tmp_path, stdin=":undo\nls\n")
    assert_one_line_error(result, NOTHING, NEXT)
    assert "-1" not in result.stderr


def test_the_env_says_there_is_nothing_to_undo_before_a_turn_and_after_the_last_undo(tmp_path):
    backend = ScriptedBackend([answer("thinking_then_tags").scripted()])
    with agentworld_local.make("agentworld/Terminal-v0", backend=backend, out_dir=tmp_path, think="full") as env:
        start, _ = env.reset()
        with pytest.raises(InputError) as before:
            env.undo()
        env.step("ls -la")
        assert env.undo() == start
        with pytest.raises(InputError) as after:
            env.undo()
    for raised in (before.value, after.value):
        assert (raised.message, raised.hint) == (NOTHING, NEXT) and "-1" not in raised.one_line()


def test_the_rest_api_says_there_is_nothing_to_undo(tmp_path):
    with served(tmp_path, ScriptedBackend([answer("thinking_then_tags").scripted()])) as client:
        opened = client.post("/sessions", json={"domain": "terminal", "think": "full"})
        assert opened.status_code == 201, opened.text
        response = client.post(f"/sessions/{opened.json()['id']}/undo")
    assert 400 <= response.status_code < 500
    assert NOTHING in response.text and NEXT in response.text and "-1" not in response.text
