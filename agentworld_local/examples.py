"""The bundled example sessions (assets/examples/): hand-written, one or more per domain,
for offline demos (`awl demo`) and replays. `assets/examples/make_examples.py` regenerates them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentworld_local.errors import InputError
from agentworld_local.paths import package_assets
from agentworld_local.trajectory.reader import read_trajectory

#: The example `awl demo` shows when no domain is asked for.
DEFAULT_EXAMPLE = "terminal-demo"


@dataclass(frozen=True)
class Example:
    name: str  # file stem, e.g. "web-online-shop"
    domain: str
    title: str
    path: Path


def examples_dir() -> Path:
    return package_assets() / "examples"


def bundled_examples() -> list[Example]:
    """Every bundled example, sorted by domain then name (the default example first in its domain)."""
    found = []
    for path in sorted(examples_dir().glob("*.jsonl")):
        header = read_trajectory(path).header
        scenario = header.scenario or {}
        title = str(scenario.get("title") or scenario.get("name") or header.task or path.stem)
        found.append(Example(path.stem, header.domain, title, path))
    return sorted(found, key=lambda e: (e.domain, e.name != DEFAULT_EXAMPLE, e.name))


def pick_example(domain: str | None = None) -> Example:
    """The example for `domain` (the first of that domain), or the default terminal demo."""
    examples = bundled_examples()
    if not examples:
        raise InputError(f"No bundled example sessions were found in {examples_dir()}.",
                         "Reinstall with `pip install -e .` from the repository.")
    if domain is None:
        return next((e for e in examples if e.name == DEFAULT_EXAMPLE), examples[0])
    wanted = domain.strip().lower()
    for example in examples:
        if example.domain == wanted:
            return example
    domains = sorted({e.domain for e in examples})
    raise InputError(f"There is no bundled example for the domain `{domain}`.",
                     f"Pick one of: {', '.join(domains)}.")
