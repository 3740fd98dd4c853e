"""Scenarios: ready-made starting worlds (domain, task, initial state, tools, controls)."""

from agentworld_local.scenarios.by_name import scenario_by_name, unknown_scenario_name
from agentworld_local.scenarios.loader import (
    bundled_dir,
    list_scenarios,
    load_scenario,
    read_scenario_file,
    user_dir,
)
from agentworld_local.scenarios.schema import SCENARIO_VERSION, Scenario, scenario_from_dict

__all__ = [
    "SCENARIO_VERSION",
    "Scenario",
    "bundled_dir",
    "list_scenarios",
    "load_scenario",
    "read_scenario_file",
    "scenario_by_name",
    "scenario_from_dict",
    "unknown_scenario_name",
    "user_dir",
]
