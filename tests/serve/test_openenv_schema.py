"""`awl serve --openenv`'s HTTP routes against its own OpenAPI document, on a real server on
127.0.0.1: Schemathesis `--checks all` finds nothing (bench/serve_schemathesis.py --openenv);
`/reset` refuses a seed of the wrong type and a field awl does not take with its one-line 400
(documented), a field named like a Python parameter is no server error, and `/step`'s
documented examples are actions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("openenv")
pytest.importorskip("schemathesis")
import httpx2  # noqa: E402

from agentworld_local.testing import ScriptedBackend  # noqa: E402
from agentworld_local.testing.answers import ANSWERS  # noqa: E402
from bench.serve_schemathesis import run  # noqa: E402
from tests.serve.test_openenv import openenv_served  # noqa: E402

JSON = {"content-type": "application/json"}


def scripted() -> ScriptedBackend:
    return ScriptedBackend([item.scripted(3) for item in ANSWERS if not item.several_blocks])


def test_schemathesis_checks_all_find_nothing_on_the_openenv_app(tmp_path):
    if shutil.which("schemathesis", path=str(Path(__import__("sys").executable).parent)) is None:
        pytest.skip("schemathesis's command is not installed")
    report = tmp_path / "schemathesis.txt"
    with report.open("w") as output:
        status = run(max_examples=20, seed=1, timeout_s=None, openenv=True, output=output)  # pytest-timeout stops a hang
    text = report.read_text()
    assert status == 0 and "No issues found" in text, text[-4000:]


@pytest.mark.parametrize("body, fragment", [
    ({"seed": False}, "A seed is a whole number of 0 or more, not False."),
    ({"seed": "3"}, "A seed is a whole number of 0 or more, not '3'."),
    ({"seed": 1.5}, "A seed is a whole number of 0 or more, not 1.5."),
    ({"seed": -1}, "A seed is a whole number of 0 or more, not -1."),
    ({"colour": "red"}, "Unknown reset option `colour`."),
    ({"self": 1}, "Unknown reset option `self`."),
    ({"func": 1}, "Unknown reset option `func`."),
    ({"reward": "yes"}, "The reset option `reward` cannot be 'yes'."),
])
def test_a_reset_refuses_in_one_documented_line(tmp_path, body, fragment):
    with openenv_served(tmp_path, scripted()) as url:
        response = httpx2.post(f"{url}/reset", content=json.dumps(body), headers=JSON, timeout=None)
        document = httpx2.get(f"{url}/openapi.json", timeout=None).json()
    assert response.status_code == 400, response.text
    assert response.json()["detail"].startswith(fragment)
    reset = document["paths"]["/reset"]["post"]
    assert "400" in reset["responses"] and "400" in document["paths"]["/step"]["post"]["responses"]
    schema = document["components"]["schemas"][reset["requestBody"]["content"]["application/json"]["schema"]["$ref"]
                                                .rsplit("/", 1)[1]]
    assert schema["additionalProperties"] is False and {"seed", "scenario", "task", "reward"} <= set(schema["properties"])
    assert list(tmp_path.glob("*.jsonl")) == []


def test_steps_documented_examples_are_actions_and_a_step_takes_any_extra_field(tmp_path):
    with openenv_served(tmp_path, scripted()) as url:
        document = httpx2.get(f"{url}/openapi.json", timeout=None).json()
        step = document["paths"]["/step"]["post"]
        name = step["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        examples = document["components"]["schemas"][name]["examples"]
        assert examples
        for example in [*examples, {"action": {"action": "ls"}, "self": 1, "func": 2}]:
            response = httpx2.post(f"{url}/step", content=json.dumps(example), headers=JSON, timeout=None)
            assert response.status_code == 200, (example, response.text)
            assert "No episode is open here" in response.json()["observation"]["observation"]
        for wrong in [{"action": {"value": 1}}, {"action": {"action": ""}}, {"action": {"action": "ls", "final": "yes"}}]:
            response = httpx2.post(f"{url}/step", content=json.dumps(wrong), headers=JSON, timeout=None)
            assert response.status_code == 422, (wrong, response.text)
