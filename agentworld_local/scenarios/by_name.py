"""The one lookup of a scenario a client names: every face that takes a scenario from a client
(`awl serve`'s REST and OpenEnv apps, `awl mcp`'s `reset`, the TRL adapter's dataset rows,
Gymnasium's reset options) asks here.

A client names a scenario; it never gives a file. Only the bundled scenarios and the user's
(`<config dir>/scenarios/`) are looked at, by their `name`: a path, a name with a separator,
a drive (`C:notes`), `.`/`..` or a file of the working directory answers exactly as a name
nobody has, so the answer never tells whether some file exists, and no error quotes what a
file holds. (The command line's `--scenario` still opens a .toml path: scenarios/loader.py.)
"""

from __future__ import annotations

from typing import Any

from agentworld_local.errors import InputError, did_you_mean, shown_name
from agentworld_local.scenarios.loader import list_scenarios
from agentworld_local.scenarios.schema import Scenario

#: What a scenario's name can never hold (scenarios/schema.py allows lowercase, digits, dashes).
_NOT_IN_A_NAME = ("/", "\\", ":", "\0")


def scenario_by_name(value: Any) -> Scenario:
    """The bundled or user scenario named `value` (a user's replaces a bundled one of the same
    name); anything else raises `unknown_scenario_name` (one line, the same on every face)."""
    name = value.strip() if isinstance(value, str) else None
    if not name or not name.strip(".") or any(mark in name for mark in _NOT_IN_A_NAME):
        raise unknown_scenario_name(value, [])
    found = list_scenarios(problems=[])  # a damaged user file is skipped, never quoted
    for scenario in found:
        if scenario.name == name:
            return scenario
    raise unknown_scenario_name(value, [scenario.name for scenario in found])


def unknown_scenario_name(value: Any, names: list[str]) -> InputError:
    """The one refusal of a scenario name, whatever it was (unknown, a path, a file that exists)."""
    shown = shown_name(value)
    suggestion = did_you_mean(shown.lower(), names) if names and isinstance(value, str) else ""
    return InputError(f"Unknown scenario `{shown}`: scenarios are opened by name (the bundled ones and the "
                      "user's), never from a file.",
                      f"{suggestion + ' ' if suggestion else ''}GET /scenarios or `awl scenarios list` lists them; "
                      "a scenario of your own goes in `<config dir>/scenarios/`.")
