"""Find and read scenarios: bundled ones, the user's own, or any file by path.

A scenario in the user's dir (`<config dir>/scenarios/*.toml`) with the same name as a
bundled one replaces it, so a user can adapt a bundled world without forking awl.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from agentworld_local.errors import AwlError, InputError
from agentworld_local.files import check_name_length, read_text, user_path
from agentworld_local.paths import config_dir, package_assets
from agentworld_local.safe_parse import SyntaxProblem, load_toml
from agentworld_local.scenarios.schema import Scenario, scenario_from_dict


#: A scenario is a page of text; anything this large is the wrong file.
MAX_SCENARIO_BYTES = 4 * 1024 * 1024


def bundled_dir() -> Path:
    return package_assets() / "scenarios"


def user_dir() -> Path:
    return config_dir() / "scenarios"


def _sources() -> list[tuple[Path, str]]:
    """(directory, origin) pairs; later ones replace earlier ones with the same name."""
    return [(bundled_dir(), "bundled"), (user_dir(), "user")]


def read_scenario_file(path: Path, *, origin: str = "file") -> Scenario:
    """Parse and validate one TOML file; errors name the file and the field.

    Only regular files are read (a FIFO or /dev/zero is refused at once), with a size
    limit; a UTF-8 byte-order mark is accepted.
    """
    check_name_length(path, "scenario file")
    if not os.path.lexists(path):
        raise InputError(f"Scenario file not found: {path}.", "Check the path, or list scenarios with `awl scenarios list`.")
    text = read_text(path, "scenario file", limit=MAX_SCENARIO_BYTES)
    try:
        data = load_toml(text)
    except SyntaxProblem as problem:
        raise InputError(
            f"Scenario {path}: not valid TOML ({problem.reason}).",
            "Fix the line it names; see docs/scenarios.md for the format.",
        ) from None
    return scenario_from_dict(data, source=str(path), path=path.resolve(), origin=origin)


def list_scenarios(domain: str | None = None, *, problems: list[AwlError] | None = None) -> list[Scenario]:
    """Every scenario (bundled, then user ones replacing same-named bundled ones), sorted by domain and name.

    A damaged file raises, unless `problems` is given: then its error is added there and
    the file is skipped, so one bad user file does not hide the others.
    """
    found: dict[str, Scenario] = {}
    for directory, origin in _sources():
        for path in sorted(directory.glob("*.toml")) if directory.is_dir() else []:
            try:
                scenario = read_scenario_file(path, origin=origin)
            except AwlError as error:
                if problems is None:
                    raise
                problems.append(error)
                continue
            found[scenario.name] = scenario
    scenarios = sorted(found.values(), key=lambda s: (s.domain, s.name))
    return [s for s in scenarios if domain is None or s.domain == domain]


def _looks_like_path(value: str) -> bool:
    return "/" in value or "\\" in value or value.endswith(".toml")


def load_scenario(name_or_path: str) -> Scenario:
    """A scenario by name (user dir first, then bundled) or by path to a TOML file."""
    value = name_or_path.strip()
    if not value:
        raise InputError("The scenario name is empty.", "Pick one from `awl scenarios list`, or give a .toml path.")
    if _looks_like_path(value):
        return read_scenario_file(user_path(value))
    # Fast path: the file named after the scenario (the bundled convention).
    for directory, origin in reversed(_sources()):
        candidate = directory / f"{value}.toml"
        if os.path.isfile(candidate):  # False for a name too long to be a file
            scenario = read_scenario_file(candidate, origin=origin)
            if scenario.name == value:
                return scenario
    problems: list[AwlError] = []
    scenarios = list_scenarios(problems=problems)
    for scenario in scenarios:
        if scenario.name == value:
            return scenario
    if os.path.isfile(value):  # a file of the working directory named like no scenario: the user's own
        return read_scenario_file(Path(value))
    raise unknown_scenario(value, [s.name for s in scenarios])


def unknown_scenario(name: str, names: list[str]) -> InputError:
    contains = [n for n in names if name.lower() in n]
    close = contains[:2] or difflib.get_close_matches(name.lower(), names, n=2, cutoff=0.5)
    suggestion = f"Did you mean {' or '.join(f'`{n}`' for n in close)}? " if close else ""
    return InputError(f"Unknown scenario `{name}`.", f"{suggestion}See `awl scenarios list`, or give a path to a .toml file.")
