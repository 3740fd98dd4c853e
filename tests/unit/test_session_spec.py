"""SessionSpec.resolve: defaults < scenario < explicit options, one set of rules and errors
for every face (awl run, awl demo, the TUI)."""

from __future__ import annotations

import pytest

from agentworld_local import defaults
from agentworld_local.errors import InputError
from agentworld_local.session.spec import SessionSpec

SCENARIO = '''version = 1
name = "tiny-mcp"
domain = "mcp"
title = "A tiny notes server"
task = "Find the note about lunch."
controls = ["The server answers slowly."]
world = "Notes are written in Latin."
initial_state = "A notes MCP server with 3 notes."
tools = [{ name = "search_notes", description = "Search notes", parameters = { type = "object", properties = { q = { type = "string" } } } }]
'''


@pytest.fixture()
def scenario(tmp_path):
    path = tmp_path / "tiny-mcp.toml"
    path.write_text(SCENARIO, encoding="utf-8")
    return str(path)


def test_nothing_given_is_the_defaults_in_a_terminal():
    resolved = SessionSpec().resolve()
    settings = resolved.settings
    assert resolved.domain.name == "terminal" and resolved.scenario is None and resolved.scenario_ref is None
    assert settings.sampling.temperature == defaults.DEFAULT_TEMPERATURE
    assert settings.sampling.max_tokens == defaults.DEFAULT_MAX_TOKENS
    assert settings.think.label() == defaults.DEFAULT_THINK
    assert settings.seed == defaults.DEFAULT_SEED
    assert settings.task == "" and settings.initial_state is None and settings.controls == []


def test_the_scenario_fills_what_the_options_leave_out(scenario):
    resolved = SessionSpec(scenario=scenario).resolve()
    settings = resolved.settings
    assert resolved.domain.name == "mcp"
    assert [tool["name"] for tool in resolved.domain.tools()] == ["search_notes"]
    assert settings.task == "Find the note about lunch."
    assert settings.initial_state == "A notes MCP server with 3 notes."
    assert settings.world_description == "Notes are written in Latin."
    assert settings.controls == ["The server answers slowly."]
    assert resolved.scenario_ref == {"name": "tiny-mcp", "title": "A tiny notes server", "path": scenario}


def test_explicit_options_win_over_the_scenario_and_controls_add(scenario):
    tools = [{"name": "read_note", "description": "Read one note", "parameters": {"type": "object", "properties": {}}}]
    resolved = SessionSpec(
        scenario=scenario, domain="mcp", task="Delete every note.", initial_state="An empty server.",
        world="Notes are in Greek.", tools=tools, controls=["  Every call fails.  "],
        temperature=0.0, max_tokens=9, think="off", seed=5,
    ).resolve()
    settings = resolved.settings
    assert settings.task == "Delete every note."
    assert settings.initial_state == "An empty server."
    assert settings.world_description == "Notes are in Greek."
    assert [tool["name"] for tool in resolved.domain.tools()] == ["read_note"]
    assert settings.controls == ["The server answers slowly.", "Every call fails."]
    assert (settings.sampling.temperature, settings.sampling.max_tokens, settings.seed) == (0.0, 9, 5)
    assert settings.think.mode == "off"


def test_the_web_state_format_is_chosen():
    assert SessionSpec(domain="web", state_format="html").resolve().domain.state_format == "html"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (SessionSpec(domain="web", scenario="disk-full-server"), "--domain web conflicts with scenario `disk-full-server`"),
        (SessionSpec(controls=["   "]), "--control needs a text."),
        (SessionSpec(max_tokens=0), "--max-tokens 0 leaves no room for an observation."),
        (SessionSpec(temperature=float("nan")), "--temperature nan is not allowed"),
        (SessionSpec(think="lots"), "Invalid thinking budget `lots`."),
        (SessionSpec(task="bad \udcff byte"), "--task holds bytes that are not UTF-8 text (at character 5)."),
        (SessionSpec(scenario="no-such-scenario"), "no-such-scenario"),
        (SessionSpec(domain="terminal", state_format="html"), "The terminal domain has no state format `html`."),
        (SessionSpec(domain="nowhere"), "nowhere"),
    ],
)
def test_each_mistake_is_one_input_error_with_a_hint(spec, message):
    with pytest.raises(InputError) as refused:
        spec.resolve()
    assert message in refused.value.message
    assert refused.value.hint


def test_a_tool_list_for_a_domain_without_tools_is_refused():
    with pytest.raises(InputError, match="takes no tool definitions"):
        SessionSpec(domain="terminal", tools=[{"name": "x", "description": "", "parameters": {}}]).resolve()


# -- one set of sampling rules: the options' and a saved header's (issue 15) -------------------

BAD_SAMPLING = [
    ("temperature", "hot", "'hot' is not a number"),
    ("temperature", -1, "-1 is not allowed: it must be 0 (greedy) or more"),
    ("temperature", float("inf"), "inf is out of range"),
    ("max_tokens", -1, "-1 leaves no room for an observation"),
    ("max_tokens", 2.5, "2.5 is not a whole number"),
    ("max_tokens", True, "True is not a whole number"),
    ("top_p", 0, "0 is not allowed: it must be above 0 and at most 1"),
    ("top_k", 10**40, "is out of range"),
    ("min_p", 2, "2 is not allowed: it must be from 0 to 1"),
]


@pytest.mark.parametrize(("key", "value", "said"), BAD_SAMPLING)
def test_a_bad_sampling_option_and_the_same_value_in_a_header_are_refused_alike(key, value, said):
    from agentworld_local.errors import TrajectoryError
    from agentworld_local.session.sampling import check_sampling, option_name, saved_settings

    with pytest.raises(InputError) as option:
        check_sampling(**{key: value})
    assert option.value.message.startswith(f"{option_name(key)} ") and said in option.value.message
    with pytest.raises(TrajectoryError) as header:
        saved_settings({"temperature": 0.6, key: value}, "off")
    assert f"`sampling.{key}` " in header.value.message and said in header.value.message
    assert "line 1" in header.value.hint


def test_a_header_with_good_or_missing_settings_gives_them():
    from agentworld_local.session.sampling import saved_settings

    sampling, think = saved_settings({"temperature": 0, "max_tokens": 64}, "512")
    assert (sampling.temperature, sampling.max_tokens, sampling.top_k) == (0, 64, defaults.DEFAULT_TOP_K)
    assert think.tokens == 512


@pytest.mark.parametrize("think", ["²", "-3"])
def test_a_thinking_budget_that_is_not_plain_digits_is_an_input_error(think):
    with pytest.raises(InputError, match="Invalid thinking budget"):
        SessionSpec(think=think).check()


def test_a_thinking_budget_of_5000_digits_says_the_limit_in_one_short_line():
    with pytest.raises(InputError, match="too large: at most 999,999,999 tokens") as raised:
        SessionSpec(think="9" * 5000).check()
    assert len(raised.value.one_line()) < 300
