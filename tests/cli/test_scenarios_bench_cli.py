"""`awl scenarios`, `awl run --scenario/--control/--from-bench`, `awl export`, `awl import`
through the real entry point, on the tiny GGUF fixtures."""

from __future__ import annotations

import json

from agentworld_local.trajectory.reader import read_trajectory
from tests.cli.helpers import assert_one_line_error, awl
from tests.unit.test_agentworldbench import OBS, bench_job

FAST = ["--think", "4", "--max-tokens", "12", "--ctx", "8192", "--seed", "3"]
SEVEN = {"terminal", "swe", "mcp", "search", "web", "os", "android"}


def test_scenarios_list_and_show(tmp_path):
    listed = awl("scenarios", "list", home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split("\t") for line in listed.stdout.splitlines()]
    assert {row[1] for row in rows} == SEVEN and len(rows) >= 14
    assert ["python-web-app", "terminal", "bundled", "A Flask to-do service with a failing test"] in rows

    web = json.loads(awl("scenarios", "list", "--domain", "web", "--json", home=tmp_path).stdout)
    assert {s["domain"] for s in web} == {"web"} and {"online-shop", "webmail-inbox"} <= {s["name"] for s in web}

    shown = awl("scenarios", "show", "notes-mcp-server", home=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "domain: mcp" in shown.stdout and '"name": "search_notes"' in shown.stdout and "Cabin info" in shown.stdout
    assert "awl run --scenario notes-mcp-server" in shown.stdout


def test_a_user_scenario_is_listed_and_shown_by_path(tmp_path):
    own = tmp_path / "config" / "scenarios" / "cron.toml"
    own.parent.mkdir(parents=True)
    own.write_text('version = 1\nname = "cron-debugging"\ndomain = "terminal"\ntitle = "Cron"\ntask = "Fix cron."\n'
                   "initial_state = '''\nadmin@box:~$ '''\n", encoding="utf-8")
    assert "cron-debugging\tterminal\tuser\tCron" in awl("scenarios", "list", home=tmp_path).stdout
    by_path = json.loads(awl("scenarios", "show", str(own), "--json", home=tmp_path).stdout)
    assert by_path["task"] == "Fix cron." and by_path["initial_state"] == "admin@box:~$ " and by_path["source"] == "file"


def test_run_with_a_scenario_and_controls(tmp_path, qwen_gguf):
    script = tmp_path / "actions.txt"
    script.write_text('list_issues state=open\n:control The tracker is read-only for one hour.\nget_issue number=12\n', encoding="utf-8")
    out = tmp_path / "s.jsonl"
    result = awl("run", str(script), "--scenario", "issue-tracker-rate-limit", "--control", "Comments take a minute to appear.",
                 "-m", str(qwen_gguf), "-o", str(out), *FAST, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "control for the next turn: The tracker is read-only" in result.stderr
    traj = read_trajectory(out)
    header = traj.header
    assert header.scenario == {"name": "issue-tracker-rate-limit", "title": "An issue-tracker MCP server that starts rate-limiting"}
    assert header.domain == "mcp" and header.task.startswith("Find the open bug about CSV export")
    assert header.controls[1] == "Comments take a minute to appear." and "HTTP 429" in header.controls[0]
    assert [tool["name"] for tool in header.tools] == ["list_issues", "get_issue", "add_comment", "close_issue"]
    assert '"name": "close_issue"' in header.system_prompt and '"LEDG"' in header.initial_state
    first, second = traj.turns
    assert header.task in first.prompt and '"LEDG"' in first.prompt
    assert "Control instructions:\n- The next tool call fails with HTTP 429" in first.prompt
    assert "- Comments take a minute to appear." in first.prompt and first.controls_added == []
    assert second.controls_added == ["The tracker is read-only for one hour."]
    assert "**Task Instruction:**\nControl instructions:\n- The tracker is read-only for one hour." in second.prompt
    assert second.action_payload == {"name": "get_issue", "arguments": {"number": 12}}
    replayed = awl("replay", str(out), "--plain", home=tmp_path)
    assert "control: Comments take a minute to appear." in replayed.stdout
    assert "control added: The tracker is read-only for one hour." in replayed.stdout


def test_explicit_options_override_the_scenario(tmp_path, qwen_gguf):
    state = tmp_path / "screen.txt"
    state.write_text("me@host:/srv$ ", encoding="utf-8")
    out = tmp_path / "s.jsonl"
    result = awl("run", "-s", "python-web-app", "--task", "Just look around.", "--initial-state", str(state),
                 "--domain", "terminal", "-m", str(qwen_gguf), "-o", str(out), *FAST, home=tmp_path, stdin="ls\n")
    assert result.returncode == 0, result.stderr
    header = read_trajectory(out).header
    assert (header.task, header.initial_state, header.scenario["name"]) == ("Just look around.", "me@host:/srv$ ", "python-web-app")


def test_scenario_errors_are_one_line_before_the_model_loads(tmp_path):
    # The model file does not exist: each error must come before awl tries to load it.
    run = ["-m", str(tmp_path / "never-loaded.gguf"), "-o", str(tmp_path / "s.jsonl")]
    assert_one_line_error(awl("run", "-s", "shop", *run, home=tmp_path, stdin="ls\n"), "Unknown scenario `shop`", "`online-shop`")
    assert_one_line_error(awl("run", "-s", "online-shop", "--domain", "terminal", *run, home=tmp_path, stdin="ls\n"),
                          "--domain terminal conflicts with scenario `online-shop`", "awl scenarios list --domain terminal")
    bad = tmp_path / "bad.toml"
    bad.write_text('version = 1\nname = "x"\ndomain = "web"\ntitle = "X"\ninitial_state = "<html/>"\n', encoding="utf-8")
    assert_one_line_error(awl("run", "-s", str(bad), *run, home=tmp_path, stdin="ls\n"), str(bad), "field `task` is missing")
    bad.write_text(bad.read_text().replace("version = 1", "version = 3"), encoding="utf-8")
    assert_one_line_error(awl("scenarios", "show", str(bad), home=tmp_path), "field `version` is 3", "pip install -U")
    assert_one_line_error(awl("scenarios", "list", "--domain", "andriod", home=tmp_path), "Unknown domain `andriod`", "`android`")
    script = tmp_path / "a.txt"
    script.write_text("ls\n:control\n", encoding="utf-8")
    assert_one_line_error(awl("run", str(script), *run, home=tmp_path), f"{script}:2", "`:control` needs a text")
    assert_one_line_error(awl("run", "-c", " ", *run, home=tmp_path, stdin="ls\n"), "--control needs a text")
    assert not (tmp_path / "s.jsonl").exists()


def test_export_import_replay_round_trip(tmp_path, qwen_gguf):
    session = tmp_path / "s.jsonl"
    result = awl("run", "-m", str(qwen_gguf), "-o", str(session), "-c", "The network is down.", *FAST,
                 home=tmp_path, stdin="ls\ncurl example.com\npwd\n")
    assert result.returncode == 0, result.stderr
    original = read_trajectory(session)

    exported = awl("export", str(session), "--format", "agentworldbench", home=tmp_path)
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [r["turn_idx"] for r in rows] == [1, 2, 3] and {r["total_turns"] for r in rows} == {3}
    assert rows[2]["prompt"] == [t.prompt for t in original.turns] and rows[1]["current_prompt"] == original.turns[1].prompt
    assert rows[0]["response"] == [OBS + t.observation for t in original.turns]
    assert rows[0]["system_str"] == original.header.system_prompt and rows[0]["task"] == "terminal"

    bench = tmp_path / "bench.jsonl"
    assert awl("export", str(session), "--out", str(bench), home=tmp_path).returncode == 0
    assert bench.read_text(encoding="utf-8") == exported.stdout
    imported = awl("import", str(bench), "--out-dir", str(tmp_path / "imported"), home=tmp_path)
    assert imported.returncode == 0, imported.stderr
    [path] = imported.stdout.split()
    again = read_trajectory(path)
    assert [t.observation for t in again.turns] == [t.observation for t in original.turns]
    assert again.header.controls == ["The network is down."] and again.header.task == ""
    replayed = awl("replay", path, "--plain", home=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert "imported from AgentWorldBench" in replayed.stdout and "curl example.com" in replayed.stdout

    # Re-simulating an exported row of our own session sends the same prompt the session sent.
    out = tmp_path / "resim.jsonl"
    resim = awl("run", "--from-bench", str(bench), "--row", "3", "-m", str(qwen_gguf), "-o", str(out), *FAST, home=tmp_path)
    assert resim.returncode == 0, resim.stderr
    predicted = read_trajectory(out).turns[-1]
    assert predicted.prompt == original.turns[2].prompt
    assert predicted.tokens["prompt_total"] == original.turns[2].tokens["prompt_total"]


def test_from_bench_shows_the_prediction_beside_the_ground_truth(tmp_path, qwen_gguf):
    bench = tmp_path / "terminal_test.jsonl"
    bench.write_text("".join(json.dumps(bench_job("terminal", n)) + "\n" for n in (1, 2, 3)), encoding="utf-8")
    out = tmp_path / "resim.jsonl"
    result = awl("run", "--from-bench", str(bench), "--row", "2", "-m", str(qwen_gguf), "-o", str(out), *FAST, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.index("== prediction (model) ==") < result.stdout.index("== ground truth (benchmark) ==")
    assert result.stdout.rstrip().endswith("7\nroot@box:/app#"), "turn 2's real observation"
    traj = read_trajectory(out)
    truth, predicted = traj.turns
    assert truth.observation == "main.py  tests  README.md\nroot@box:/app# " and truth.parse_method == "agentworldbench"
    assert predicted.prompt == bench_job("terminal", 2)["current_prompt"] and predicted.extra["ground_truth"] == "7\nroot@box:/app# "
    assert traj.header.extra["agentworldbench"]["rows"] == [2] and traj.header.model.architecture == "qwen35moe"
    assert traj.header.system_prompt == bench_job("terminal", 2)["system_str"]
    assert predicted.observation in result.stdout

    as_json = awl("run", "--from-bench", str(bench), "--row", "1", "--json", "-m", str(qwen_gguf),
                  "-o", str(tmp_path / "r1.jsonl"), *FAST, home=tmp_path)
    payload, saved = (json.loads(line) for line in as_json.stdout.splitlines())
    assert saved == {"event": "saved", "path": str(tmp_path / "r1.jsonl"), "turns": 1}  # as awl run --json ends
    assert payload["row"] == 1 and payload["ground_truth"] == "main.py  tests  README.md\nroot@box:/app# "
    assert payload["record"]["prompt"] == bench_job("terminal", 1)["current_prompt"]


def test_bench_errors_are_one_line_before_the_model_loads(tmp_path):
    bench = tmp_path / "rows.jsonl"
    bad = {**bench_job("swe", 2), "response": "ok", "prompt": {"turn": 1}}
    bench.write_text(json.dumps(bench_job("swe", 1)) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    model = ["-m", str(tmp_path / "never-loaded.gguf")]
    assert_one_line_error(awl("run", "--from-bench", str(bench), "--row", "2", *model, home=tmp_path),
                          f"{bench}: row 2: field 'prompt' should be a list of strings, not an object")
    assert_one_line_error(awl("import", str(bench), "--out-dir", str(tmp_path / "x"), home=tmp_path), "row 2", "field 'prompt'")
    assert not (tmp_path / "x").exists()
    assert_one_line_error(awl("run", "--from-bench", str(bench), "--row", "5", *model, home=tmp_path), "has 2 lines", "from 1 to 2")
    assert_one_line_error(awl("run", "--from-bench", str(bench), *model, home=tmp_path), "--from-bench needs --row")
    assert_one_line_error(awl("run", "--row", "1", *model, home=tmp_path, stdin=""), "--row only works with --from-bench")
    assert_one_line_error(awl("run", "--from-bench", str(bench), "--row", "1", "-s", "online-shop", *model, home=tmp_path),
                          "--scenario cannot change it")
    assert_one_line_error(awl("export", str(bench), "--format", "csv", home=tmp_path), "Unknown export format `csv`", "agentworldbench")
    assert_one_line_error(awl("export", str(bench), home=tmp_path), "is not an awl trajectory")


def test_import_then_export_through_the_cli_gives_back_every_row(tmp_path):
    from tests.unit.test_agentworldbench_roundtrip import thirteen_rows

    rows = thirteen_rows()
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    imported = awl("import", str(bench), "--out-dir", str(tmp_path / "imported"), home=tmp_path)
    assert imported.returncode == 0, imported.stderr
    exported = []
    for path in imported.stdout.split():
        result = awl("export", path, home=tmp_path)
        assert result.returncode == 0, result.stderr
        exported += [json.loads(line) for line in result.stdout.splitlines()]
    assert len(exported) == 13 and sorted(map(json.dumps, exported)) == sorted(map(json.dumps, rows))


def test_a_row_without_turn_idx_is_refused_before_the_model_loads(tmp_path):
    bench = tmp_path / "rows.jsonl"
    row = {k: v for k, v in bench_job("mcp", 2).items() if k != "turn_idx"}
    bench.write_text(json.dumps(row) + "\n", encoding="utf-8")
    model = ["-m", str(tmp_path / "missing.gguf")]  # never loaded: the row is checked first
    assert_one_line_error(awl("run", "--from-bench", str(bench), "--row", "1", *model, home=tmp_path),
                          f"{bench}: row 1: field 'turn_idx' is missing")
    assert_one_line_error(awl("import", str(bench), "--out-dir", str(tmp_path / "x"), home=tmp_path), "row 1", "'turn_idx'")
    bench.write_text("")
    assert_one_line_error(awl("run", "--from-bench", str(bench), "--row", "1", *model, home=tmp_path), "holds no rows")


def test_a_failed_resimulation_leaves_no_file_and_a_retry_works(tmp_path, qwen_gguf):
    bench = tmp_path / "rows.jsonl"
    job = bench_job("terminal", 2, system_str="sys \ud800 " + "word " * 5000)  # a surrogate, and too long for --ctx
    bench.write_text(json.dumps(job) + "\n", encoding="utf-8")
    out = tmp_path / "resim.jsonl"
    run = ["run", "--from-bench", str(bench), "--row", "1", "-m", str(qwen_gguf), "-o", str(out), *FAST]
    failed = awl(*run, home=tmp_path)
    assert failed.returncode != 0 and "Traceback" not in failed.stderr, failed.stderr
    assert not out.exists()
    job["system_str"] = "sys \ud800"
    bench.write_text(json.dumps(job) + "\n", encoding="utf-8")
    retry = awl(*run, home=tmp_path)
    assert retry.returncode == 0, retry.stderr
    assert read_trajectory(out).header.system_prompt == "sys \ufffd", "what the model could be sent"
    errors = [line for line in failed.stderr.splitlines() if line.startswith("awl: error:")]
    assert len(errors) == 1 and "larger `--ctx`" in errors[0], failed.stderr
