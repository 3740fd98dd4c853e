"""`awl serve`'s front door: a foreign Host or Origin, scenario names that are never paths, one
error contract for every answer that is not 2xx (the framework's own included), damaged files
in the folder, docs that load nothing from another site, tokens, and bookkeeping freed."""

from __future__ import annotations

import json
import re

import pytest

from agentworld_local.errors import InputError
from agentworld_local.scenarios import list_scenarios
from agentworld_local.serve.app import make_app
from agentworld_local.serve.limits import ServeLimits
from agentworld_local.serve.registry import CLOSED_REMEMBERED
from agentworld_local.serve.server import MIN_TOKEN_CHARS, check_exposure
from agentworld_local.testing import ScriptedBackend
from agentworld_local.testing.answers import ANSWERS
from tests.serve.helpers import served

SHOWN = [item for item in ANSWERS if not item.several_blocks]


def scripted() -> ScriptedBackend:
    return ScriptedBackend([item.scripted(3) for item in SHOWN])


def is_problem(response, status: int) -> dict:
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert isinstance(body["error"], str) and body["error"] and isinstance(body["hint"], str) and body["hint"]
    return body


def port_of(client) -> int:
    return client.base_url.port


def test_a_foreign_host_is_421_and_a_foreign_origin_403_while_a_request_without_origin_goes_on(tmp_path):
    with served(tmp_path, scripted(), limits=ServeLimits(allowed_hosts=("awl.lan",))) as client:
        port = port_of(client)
        for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1.evil.example:{port}", ""):
            body = is_problem(client.get("/health", headers={"Host": host}), 421)
            assert "does not answer to the host" in body["error"]
        rebound = client.post("/sessions", json={"domain": "terminal"}, headers={"Host": f"evil.example:{port}"})
        is_problem(rebound, 421)
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", f"AWL.lan:{port}", "localhost"):
            assert client.get("/health", headers={"Host": host}).status_code == 200, host
        for origin in ("http://evil.example", f"http://localhost:{port + 1}", "null", f"file://127.0.0.1:{port}"):
            body = is_problem(client.post("/sessions", json={"domain": "terminal"}, headers={"Origin": origin}), 403)
            assert origin in body["error"]
        assert client.get("/health").json()["sessions_open"] == 0  # nothing refused was opened
        own = client.post("/sessions", json={"domain": "terminal"}, headers={"Origin": f"http://127.0.0.1:{port}"})
        assert own.status_code == 201
        allowed = client.get("/health", headers={"Host": f"awl.lan:{port}", "Origin": f"http://awl.lan:{port}"})
        assert allowed.status_code == 200
        assert client.post("/sessions", json={"domain": "terminal"}).status_code == 201  # no Origin: curl, SDKs


def test_a_scenario_is_a_name_never_a_file_of_the_working_directory(tmp_path, monkeypatch):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    names = ["zz-no-such-scenario", ".env", "notes", "notes.toml", "sub/notes.toml", "..", ".", "C:notes"]
    with served(tmp_path / "sessions", scripted()) as client:
        def answers() -> list[tuple[int, str]]:
            said = []
            for name in names:
                response = client.post("/sessions", json={"scenario": name})
                body = is_problem(response, 400)
                assert "Unknown scenario" in body["error"] and "by name" in body["error"]
                assert "GET /scenarios" in body["hint"] and ".toml" not in body["hint"] and "path" not in body["hint"]
                said.append((response.status_code, response.text.replace(json.dumps(name)[1:-1], "NAME")))
            return said

        before = answers()
        (cwd / "sub").mkdir()
        scenario = 'name = "notes"\ndomain = "terminal"\ntitle = "x"\ntask = "x"\ninitial_state = "$ "\n'
        for name in ("zz-no-such-scenario", "notes", "notes.toml", "sub/notes.toml"):
            (cwd / name).write_text(scenario)
        (cwd / ".env").write_text("SECRET = 'hunter2'\n")
        assert answers() == before
        known = list_scenarios()[0].name
        assert client.post("/sessions", json={"scenario": known}).status_code == 201
        listed = client.get("/scenarios").json()
        assert known in [item["name"] for item in listed] and "notes" not in [item["name"] for item in listed]


def test_every_answer_that_is_not_2xx_is_the_error_contract(tmp_path):
    limits = ServeLimits(max_body_bytes=8000)
    with served(tmp_path, scripted(), limits=limits) as client:
        assert "No route" in is_problem(client.get("/no/such/route"), 404)["error"]
        wrong = client.delete("/health")
        assert "GET" in is_problem(wrong, 405)["hint"] and "GET" in wrong.headers["allow"]
        headers = {"content-type": "application/json"}
        for raw in (b'{"domain": "terminal"', b"\xff\xfe{\x80}", b"[" * 3000 + b"]" * 3000,
                    b'{"seed": ' + b"9" * 5000 + b"}", b'{"domain": "terminal",}'):
            is_problem(client.post("/sessions", content=raw, headers=headers), 400)
        is_problem(client.post("/sessions", json={"seed": "seven"}), 422)
        is_problem(client.post("/sessions", json=["terminal"]), 422)

        def chunks():
            for _ in range(10):
                yield b" " * 1000

        chunked = client.post("/sessions", content=chunks(), headers=headers)
        assert "8000 bytes" in is_problem(chunked, 413)["error"]
        is_problem(client.post("/sessions", content=b"{" + b" " * 9000 + b"}", headers=headers), 413)
        assert client.get("/health").json()["sessions_open"] == 0
        think = is_problem(client.post("/sessions", json={"domain": "terminal", "think": "lots"}), 400)
        assert '`think: "off"`' in think["hint"] and "--" not in think["hint"]
        blank = is_problem(client.post("/sessions", json={"domain": "terminal", "controls": [" "]}), 422)
        assert "controls" in blank["error"]
        terminal = next(item.name for item in list_scenarios() if item.domain == "terminal")
        clash = is_problem(client.post("/sessions", json={"domain": "web", "scenario": terminal}), 400)
        assert "--" not in clash["error"] + clash["hint"] and "GET /scenarios" in clash["hint"]


def test_the_openapi_document_lists_each_status_with_the_error_model(tmp_path):
    with served(tmp_path, scripted(), token="a-token-of-some-length") as client:
        document = client.get("/openapi.json").json()
    assert "HTTPValidationError" not in json.dumps(document)
    assert set(document["components"]["schemas"]["Problem"]["required"]) == {"error", "hint"}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            statuses = set(operation["responses"])
            assert {"401", "403", "421", "500"} <= statuses, (method, path)
            if "requestBody" in operation:
                assert {"400", "413", "422"} <= statuses, (method, path)
            if "{sid}" in path:
                assert "404" in statuses, (method, path)
            for status, answer in operation["responses"].items():
                if not status.startswith("2"):
                    assert answer["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Problem"}
    assert "application/x-ndjson" in document["paths"]["/sessions/{sid}/trajectory"]["get"]["responses"]["200"]["content"]
    assert "text/event-stream" in document["paths"]["/sessions/{sid}/step/stream"]["post"]["responses"]["200"]["content"]


def test_a_damaged_empty_or_foreign_file_in_the_folder_is_a_4xx_with_the_readers_reason(tmp_path):
    files = {"empty": b"", "garbage": bytes(range(256)) * 4, "truncated": b'{"type": "header", "version": 1, "dom',
             "foreign": b'{"level": "info", "msg": "started"}\n{"level": "info", "msg": "stopped"}\n'}
    for name, content in files.items():
        (tmp_path / f"{name}.jsonl").write_bytes(content)
    with served(tmp_path, scripted()) as client:
        listed = {entry["id"]: entry for entry in client.get("/sessions").json()}
        for name in files:
            assert listed[name]["problem"], name
            got = is_problem(client.get(f"/sessions/{name}"), 422)
            resumed = is_problem(client.post(f"/sessions/{name}/resume"), 422)
            assert got["error"] == resumed["error"] and f"Session {name} cannot be read: " in got["error"]
            assert "\n" not in got["error"] and listed[name]["problem"] in got["error"], name
            assert "POST /sessions" in got["hint"]
        assert client.get("/health").json()["sessions_open"] == 0


def test_the_docs_load_nothing_from_another_site_and_need_no_token(tmp_path):
    with served(tmp_path, scripted(), token="a-token-of-some-length") as client:
        for page in ("/docs", "/redoc"):
            html = client.get(page)
            assert html.status_code == 200 and "text/html" in html.headers["content-type"]
            assert re.findall(r"https?://[^\s\"'<>]+", html.text) == [], page
            assets = re.findall(r"(?:src|href)=\"(/[^\"]+)\"", html.text) + re.findall(r"url: '(/[^']+)'", html.text)
            assert assets, page
            for asset in assets:
                assert client.get(asset).status_code == 200, asset
        assert "swagger-ui-bundle.js" in client.get("/docs").text
        is_problem(client.get("/health"), 401)


def test_a_blank_token_is_refused_on_any_address_and_a_short_one_off_loopback(tmp_path, monkeypatch):
    monkeypatch.delenv("AWL_TEST_TOKEN", raising=False)
    long = "x" * MIN_TOKEN_CHARS
    for host in ("127.0.0.1", "0.0.0.0", "::1", "localhost"):
        for blank in ("", "   ", "\t\n"):
            with pytest.raises(InputError, match="set but empty"):
                check_exposure(host, blank, "AWL_TEST_TOKEN")
        monkeypatch.setenv("AWL_TEST_TOKEN", "")  # the CLI passes an empty variable as no token
        with pytest.raises(InputError, match="set but empty"):
            check_exposure(host, None, "AWL_TEST_TOKEN")
        monkeypatch.delenv("AWL_TEST_TOKEN")
        check_exposure(host, long, "AWL_TEST_TOKEN")
    check_exposure("127.0.0.1", None, "AWL_TEST_TOKEN")
    check_exposure("127.0.0.1", "short", "AWL_TEST_TOKEN")
    with pytest.raises(InputError, match="is not set"):
        check_exposure("0.0.0.0", None, "AWL_TEST_TOKEN")
    with pytest.raises(InputError, match=f"at least {MIN_TOKEN_CHARS} characters"):
        check_exposure("0.0.0.0", "x" * (MIN_TOKEN_CHARS - 1), "AWL_TEST_TOKEN")
    with pytest.raises(InputError, match="empty"):
        make_app(folder=tmp_path, backend=scripted(), token="  ")


def test_a_thousand_sessions_opened_and_closed_leave_the_servers_structures_as_they_were(tmp_path):
    apps = []
    with served(tmp_path, scripted(), wrap=lambda app: apps.append(app) or app) as client:
        registry = apps[0].state.registry
        runner = registry.bridge.runner

        def sizes() -> dict[str, int]:
            return {"open": len(registry._open), "resuming": len(registry._resuming),
                    "tasks": len(registry.bridge._tasks), "runner sessions": len(runner._sessions)}

        kept = client.post("/sessions", json={"domain": "terminal"}).json()["id"]
        client.post(f"/sessions/{kept}/step", json={"action": "ls"})
        client.delete(f"/sessions/{kept}")
        start = sizes()
        for _ in range(1000):
            sid = client.post("/sessions", json={"domain": "terminal", "think": "off"}).json()["id"]
            assert client.delete(f"/sessions/{sid}").status_code == 200
        for _ in range(20):  # resumed and closed again
            assert client.post(f"/sessions/{kept}/resume").status_code == 200
            assert client.delete(f"/sessions/{kept}").status_code == 200
        assert sizes() == start
        assert len(registry._closed) == CLOSED_REMEMBERED  # the reasons: the last ones only
        assert "closed by a client" in client.post(f"/sessions/{kept}/step", json={"action": "ls"}).json()["error"]


def damaged_copies(intact: bytes) -> dict[str, bytes]:
    """A session file damaged as disks and hands damage them: cut anywhere, a byte changed, a
    field of a line given another kind of value or dropped."""
    copies = {f"cut-{at}": intact[:at] for at in range(1, len(intact), max(1, len(intact) // 25))}
    for index, at in enumerate(range(7, len(intact), max(1, len(intact) // 25))):
        changed = bytearray(intact)
        changed[at] = (changed[at] + 0x41) % 256
        copies[f"byte-{index}"] = bytes(changed)
    lines = intact.decode().splitlines()
    for number, line in enumerate(lines):
        record = json.loads(line)
        for key in list(record)[:12]:
            for value in (None, "x", [], -1):
                edited = [*lines[:number], json.dumps({**record, key: value}), *lines[number + 1:]]
                copies[f"edit-{number}-{key}-{json.dumps(value)}"] = "\n".join(edited).encode() + b"\n"
    return copies


def test_get_and_resume_of_any_damaged_file_are_422_with_the_readers_reason_never_500(tmp_path):
    """A file damaged part-way reads (its intact turns are kept), but no turn may be added after
    the damage: resume said so with a 500; GET and resume now give the same 422."""
    made = tmp_path / "made"
    with served(made, scripted()) as client:
        sid = client.post("/sessions", json={"domain": "terminal"}).json()["id"]
        for action in ("ls", "pwd", "echo hi"):
            assert client.post(f"/sessions/{sid}/step", json={"action": action}).status_code == 200
        client.delete(f"/sessions/{sid}")
    copies = damaged_copies((made / f"{sid}.jsonl").read_bytes())
    folder = tmp_path / "folder"
    folder.mkdir()
    names = {}
    for index, (what, content) in enumerate(copies.items()):
        names[f"copy-{index}"] = what
        (folder / f"copy-{index}.jsonl").write_bytes(content)
    refused = 0
    with served(folder, scripted()) as client:
        for name, what in names.items():
            got, resumed = client.get(f"/sessions/{name}"), client.post(f"/sessions/{name}/resume")
            assert got.status_code in (200, 422) and resumed.status_code in (200, 400, 422), (what, resumed.text)
            if resumed.status_code == 200:
                assert client.delete(f"/sessions/{name}").status_code == 200
            if got.status_code == 422:
                refused += 1
                assert resumed.status_code == 422 and resumed.json() == got.json(), what
                assert "\n" not in got.json()["error"] and f"Session {name} cannot be read: " in got.json()["error"]
        assert client.get("/health").json()["sessions_open"] == 0
    assert refused > len(names) // 3  # most damage is refused, and said so
