"""The names of the environments: one per domain and one per bundled scenario.

`agentworld/Terminal-v0` is the terminal domain with its default starting screen;
`agentworld/DiskFullServer-v0` is the bundled scenario `disk-full-server`. `make()` also takes
a bare domain or scenario name (`terminal`, `disk-full-server`). Gymnasium registers the same
ids (env/gym.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentworld_local.domains import domain_names
from agentworld_local.errors import InputError, did_you_mean
from agentworld_local.scenarios import bundled_dir, list_scenarios, load_scenario, read_scenario_file

NAMESPACE = "agentworld"
VERSION = 0
#: How each domain is spelled in an id (Gymnasium ids are CamelCase).
DOMAIN_IDS = {"terminal": "Terminal", "swe": "SWE", "mcp": "MCP", "search": "Search", "web": "Web",
              "os": "OS", "android": "Android"}


@dataclass(frozen=True)
class EnvId:
    id: str
    domain: str
    #: A bundled scenario's name, or None for the domain's default world.
    scenario: str | None = None


def _id(name: str) -> str:
    return f"{NAMESPACE}/{name}-v{VERSION}"


def scenario_id(name: str) -> str:
    """`disk-full-server` -> `agentworld/DiskFullServer-v0`."""
    return _id("".join(part[:1].upper() + part[1:] for part in name.replace("_", "-").split("-")))


def env_ids() -> list[EnvId]:
    """Every environment id: the domains first, then the bundled scenarios."""
    found = [EnvId(_id(DOMAIN_IDS[name]), name) for name in domain_names()]
    # Read from the package, so the ids are the same on every machine (a user's scenario of
    # the same name still replaces the world, as everywhere in awl).
    bundled = [read_scenario_file(path, origin="bundled") for path in sorted(bundled_dir().glob("*.toml"))]
    found += [EnvId(scenario_id(s.name), s.domain, s.name) for s in bundled]
    return found


def resolve_env(name: str) -> EnvId:
    """An id, a domain name, a scenario name (a user's own scenario too) or a scenario file -> what to open."""
    if not isinstance(name, str) or not name:
        raise InputError("An environment needs a name.", "E.g. `agentworld/Terminal-v0`, `terminal` or a scenario name.")
    if name.endswith(".toml"):  # a scenario file of the user's: no id, its world as it is
        scenario = load_scenario(name)
        return EnvId(scenario_id(scenario.name), scenario.domain, name)
    known = env_ids()
    for entry in known:
        if name in (entry.id, entry.id.partition("/")[2], entry.domain if entry.scenario is None else entry.scenario):
            return entry
    for scenario in list_scenarios():  # a user's scenario has no id, but its name works
        if scenario.name == name:
            return EnvId(scenario_id(scenario.name), scenario.domain, scenario.name)
    names = [entry.id for entry in known] + domain_names()
    raise InputError(f"Unknown environment `{name}`.",
                     f"{did_you_mean(name, names)} Known: {', '.join(entry.id for entry in known)}; "
                     "or a domain or scenario name (`awl scenarios list`).".lstrip())
