"""One type for `think` on every face: an integer, or the strings "off", "full" and "512", read by
one parser (ThinkBudget.parse); a bad value is the same one line everywhere. REST `POST /sessions`
refused an integer (422) while OpenEnv, Gymnasium and TRL took one."""

from __future__ import annotations

import json

import httpx2
import pytest

from agentworld_local.errors import InputError
from agentworld_local.session.spec import SessionSpec
from agentworld_local.testing import ScriptedBackend
from agentworld_local.testing.answers import ANSWERS
from agentworld_local.trajectory.reader import read_trajectory
from tests.serve.helpers import served

SHOWN = [item for item in ANSWERS if not item.several_blocks]


def scripted() -> ScriptedBackend:
    return ScriptedBackend([item.scripted(3) for item in SHOWN])


def the_parsers_line(value) -> str:
    with pytest.raises(InputError) as raised:
        SessionSpec(domain="terminal", think=value).resolve()
    return raised.value.message


@pytest.mark.parametrize("value, kept", [(16, "16"), ("16", "16"), ("512", "512"), ("off", "off"), ("full", "full"),
                                         (0, "off")])
def test_rest_takes_an_integer_and_the_strings(tmp_path, value, kept):
    with served(tmp_path, scripted()) as client:
        response = client.post("/sessions", json={"domain": "terminal", "think": value})
        assert response.status_code == 201, response.text
        sid = response.json()["id"]
        assert client.post(f"/sessions/{sid}/step", json={"action": "ls"}).status_code == 200
    header = read_trajectory(tmp_path / f"{sid}.jsonl").header
    assert header.think == kept


@pytest.mark.parametrize("value", ["lots", -3, "1.5", 10**12])
def test_a_bad_budget_is_the_parsers_one_line_on_rest(tmp_path, value):
    with served(tmp_path, scripted()) as client:
        response = client.post("/sessions", json={"domain": "terminal", "think": value})
    assert response.status_code == 400, response.text
    assert response.json()["error"] == the_parsers_line(value)


def test_the_schema_says_both_types(tmp_path):
    with served(tmp_path, scripted()) as client:
        document = client.get("/openapi.json").json()
    think = document["components"]["schemas"]["CreateSession"]["properties"]["think"]
    assert {"string", "integer", "null"} == {choice["type"] for choice in think["anyOf"]}


def test_trl_and_openenv_take_an_integer_and_say_a_bad_one_the_same(tmp_path):
    from agentworld_local.env.trl import environment_factory

    with served(tmp_path, scripted()) as client:
        env = environment_factory("terminal", base_url=str(client.base_url), think=16)()
        assert env.reset() is not None
        bad = environment_factory("terminal", base_url=str(client.base_url), think="lots")()
        with pytest.raises(Exception) as raised:
            bad.reset()
    assert the_parsers_line("lots") in str(raised.value)
    openenv = pytest.importorskip("openenv")  # noqa: F841 - the `openenv` extra
    from tests.serve.test_openenv import openenv_served

    with openenv_served(tmp_path / "openenv", scripted()) as url:
        fine = httpx2.post(f"{url}/reset", content=json.dumps({"think": 16}),
                           headers={"Content-Type": "application/json"}, timeout=None)
        wrong = httpx2.post(f"{url}/reset", content=json.dumps({"think": "lots"}),
                            headers={"Content-Type": "application/json"}, timeout=None)
    assert fine.status_code == 200, fine.text
    assert wrong.status_code == 400 and wrong.json()["detail"].startswith(the_parsers_line("lots"))
