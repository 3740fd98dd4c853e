"""`awl scenarios list|show`: the ready-made starting worlds, bundled and your own."""

from __future__ import annotations

import json
import sys

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agentworld_local.cli.main import app
from agentworld_local.domains import get_domain
from agentworld_local.errors import AwlError
from agentworld_local.scenarios import Scenario, list_scenarios, load_scenario, user_dir

scenarios_app = typer.Typer(
    help="Ready-made starting worlds: domain, task, initial state, tools and control instructions.\n\n"
    "Example: `awl scenarios list --domain web`, then `awl run --scenario online-shop -m world.gguf`.",
    no_args_is_help=True,
)
app.add_typer(scenarios_app, name="scenarios")


@scenarios_app.command("list")
def list_command(
    domain: str = typer.Option(None, "--domain", "-d", help="Only this domain's scenarios.", show_default=False),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list (every field)."),
) -> None:
    """List the bundled scenarios and your own.

    Your own go in the user scenarios dir (shown below the table); one with the same name as a bundled scenario replaces it.

    Example: `awl scenarios list --domain terminal`
    """
    if domain is not None:
        get_domain(domain)  # an unknown domain is an error with suggestions
    problems: list[AwlError] = []
    scenarios = list_scenarios(domain, problems=problems)
    for problem in problems:
        typer.echo(f"awl: warning: skipped {problem.one_line()}", err=True)
    if as_json:
        typer.echo(json.dumps([scenario.to_dict() for scenario in scenarios], ensure_ascii=False, indent=2))
        return
    if not sys.stdout.isatty():  # one tab-separated line per scenario, for scripts
        for s in scenarios:
            typer.echo(f"{s.name}\t{s.domain}\t{s.source}\t{s.title}")
        return
    console = Console(highlight=False)
    table = Table("name", "domain", "title", "source", box=None, pad_edge=False)
    for s in scenarios:
        table.add_row(Text(s.name, style="bold"), s.domain, Text(s.title), s.source)
    console.print(table)
    console.print(Text(f"\nyour own scenarios: {user_dir()}/*.toml   details: awl scenarios show NAME", style="dim"))


@scenarios_app.command("show")
def show_command(
    name: str = typer.Argument(..., metavar="NAME|PATH", help="A scenario name from `awl scenarios list`, or a .toml file."),
    as_json: bool = typer.Option(False, "--json", help="Print the scenario as JSON."),
) -> None:
    """Show everything a scenario gives the world model.

    Example: `awl scenarios show notes-mcp-server`, or check your own file: `awl scenarios show ./my-world.toml`
    """
    scenario = load_scenario(name)
    if as_json:
        typer.echo(json.dumps(scenario.to_dict(), ensure_ascii=False, indent=2))
        return
    typer.echo(render_scenario(scenario))


def render_scenario(scenario: Scenario) -> str:
    """Plain sections, readable in a pipe and unwrapped (so states keep their layout)."""
    where = str(scenario.path) if scenario.path else scenario.source
    lines = [
        f"{scenario.name}: {scenario.title}",
        f"domain: {scenario.domain}   source: {scenario.source} ({where})",
    ]
    if scenario.think is not None:  # the scenario's own budget (--think overrides it)
        lines[-1] += f"   thinking budget: {scenario.think}"
    if scenario.description:
        lines += ["", scenario.description]
    lines += ["", "task:", scenario.task, "", "initial state:", scenario.initial_state.rstrip("\n")]
    if scenario.controls:
        lines += ["", "control instructions:", *(f"- {c}" for c in scenario.controls)]
    if scenario.world:
        lines += ["", "world:", scenario.world]
    if scenario.tools:
        lines += ["", f"tools ({len(scenario.tools)}):", json.dumps(scenario.tools, ensure_ascii=False, indent=2)]
    lines += ["", f"run it: awl run --scenario {scenario.path if scenario.source == 'file' else scenario.name} --model MODEL"]
    return "\n".join(lines)
