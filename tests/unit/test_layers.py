"""The layering in pyproject.toml's [tool.importlinter] holds, and it would catch a new breach.

Contracts (docs/ARCHITECTURE.md, "Layers"): the core never imports a face or a UI library;
the layers faces > session > agentworldbench > scenarios/views/testing > engine >
contract/domains/models/trajectory > shared guards (so trajectory never imports the engine,
and the TUI never imports the CLI); and inside a layer, whose siblings may import each other:
only engine/llama imports llama_cpp, trajectory imports neither models.hub nor domains,
views does not import testing. Each rule is proved by adding one breach to a copy of the
package and watching import-linter name the broken contract.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "agentworld_local"
FACES = {"cli", "tui", "serve"}
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
CONTRACTS = {contract["id"]: contract for contract in CONFIG["contracts"]}
CORE_CONTRACT = "The core never imports a face (cli, tui, serve) or a UI library"
LAYERS_CONTRACT = "Layers: faces > session"
LLAMA_CONTRACT = "Only engine/llama imports llama_cpp"
OPENAI_CONTRACT = "Only engine/remote imports openai"
TRAJECTORY_CONTRACT = "trajectory imports neither models.hub nor domains"
VIEWS_CONTRACT = "views does not import testing"
GYM_CONTRACT = "Only env/gym imports gymnasium"
MCP_CONTRACT = "Only serve/mcp imports the MCP SDK"
PSYCOPG_CONTRACT = "Only worlds/postgres_store imports psycopg"


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter over the package under `root`, with the config in root/pyproject.toml."""
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))"
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True)


def top_level_modules() -> set[str]:
    names = {path.stem for path in PACKAGE.glob("*.py") if path.stem != "__init__"}
    return names | {path.parent.name for path in PACKAGE.glob("*/__init__.py")}


def test_the_contracts_hold():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_every_core_module_is_a_source_of_the_core_contract():
    listed = {name.removeprefix("agentworld_local.") for name in CONTRACTS["core-knows-no-face"]["source_modules"]}
    missing = top_level_modules() - FACES - listed
    assert not missing, f"add {sorted(missing)} to the core-knows-no-face sources in pyproject.toml"
    assert not listed & FACES


def test_the_layers_contract_places_every_module_and_the_faces_on_top():
    layers = CONTRACTS["layers"]
    assert layers["exhaustive"] is True  # a new top-level module breaks it until it is placed
    assert layers["layers"][0] == "cli" and set(layers["layers"][1].replace("(", "").replace(")", "").split(" | ")) == {"tui", "serve"}
    # The Python API for agents and the agent-in-the-loop sit on the runner, independent of each other.
    assert layers["layers"][2:4] == ["env | agent", "session"]
    order = [set(layer.replace("(", "").replace(")", "").replace("|", ":").replace(" ", "").split(":")) for layer in layers["layers"]]
    position = {module: index for index, layer in enumerate(order) for module in layer}
    assert position["engine"] < position["trajectory"]  # the engine writes records; trajectory never imports it
    forbidden = set(CONTRACTS["core-knows-no-face"]["forbidden_modules"])
    assert {"textual", "typer", "rich", "agentworld_local.cli", "agentworld_local.tui"} <= forbidden


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    """The package's Python files and pyproject.toml under tmp_path (a copy to break)."""
    def not_python(folder: str, names: list[str]) -> set[str]:
        return {name for name in names if not (name.endswith(".py") or Path(folder, name).is_dir()) or name == "__pycache__"}

    shutil.copytree(PACKAGE, tmp_path / "agentworld_local", ignore=not_python)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_an_unchanged_copy_keeps_the_contracts(package_copy):
    result = lint_imports(package_copy)
    assert result.returncode == 0, result.stdout + result.stderr


BREACHES = [
    ("domains/base.py", "import rich", CORE_CONTRACT),
    ("session/core.py", "import textual", CORE_CONTRACT),
    ("engine/world.py", "import typer", CORE_CONTRACT),
    ("models/plan.py", "import agentworld_local.cli.main", CORE_CONTRACT),
    ("trajectory/reader.py", "import agentworld_local.engine.world", LAYERS_CONTRACT),
    ("engine/world.py", "import agentworld_local.session.core", LAYERS_CONTRACT),
    ("tui/__init__.py", "import agentworld_local.cli.main", LAYERS_CONTRACT),
    ("contract/parse.py", "import agentworld_local.engine.types", LAYERS_CONTRACT),
    # Inside the core: siblings of one layer may import each other, so these need their own rules.
    ("engine/loading.py", "import llama_cpp", LLAMA_CONTRACT),
    ("engine/world.py", "import llama_cpp", LLAMA_CONTRACT),
    ("cli/doctor.py", "import llama_cpp", LLAMA_CONTRACT),
    ("agentworldbench/predict.py", "import openai", OPENAI_CONTRACT),
    ("trajectory/reader.py", "import agentworld_local.models.hub", TRAJECTORY_CONTRACT),
    ("trajectory/writer.py", "import agentworld_local.domains", TRAJECTORY_CONTRACT),
    ("views/web_page.py", "import agentworld_local.testing", VIEWS_CONTRACT),
    ("env/simulated.py", "import agentworld_local.serve.mcp", CORE_CONTRACT),
    ("session/runner/runner.py", "import agentworld_local.env.simulated", LAYERS_CONTRACT),
    ("agent/episode.py", "import agentworld_local.tui.app", CORE_CONTRACT),
    ("session/core.py", "import agentworld_local.agent.episode", LAYERS_CONTRACT),
    ("agent/prompt.py", "import agentworld_local.env.simulated", LAYERS_CONTRACT),
    ("agent/model_agent.py", "import openai", OPENAI_CONTRACT),
    ("env/simulated.py", "import gymnasium", GYM_CONTRACT),
    ("cli/mcp.py", "import mcp", MCP_CONTRACT),
    ("worlds/sqlite_store.py", "import psycopg", PSYCOPG_CONTRACT),
]


@pytest.mark.parametrize(("module", "line", "contract"), BREACHES, ids=[f"{m}:{line}" for m, line, _ in BREACHES])
def test_a_new_breach_breaks_its_contract(package_copy, module, line, contract):
    path = package_copy / "agentworld_local" / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}  # the breach under test\n", encoding="utf-8")
    result = lint_imports(package_copy)
    assert result.returncode != 0
    broken = [text for text in result.stdout.splitlines() if text.endswith(" BROKEN")]
    assert any(text.startswith(contract) for text in broken), result.stdout
    importer = "agentworld_local." + module.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    assert f"{importer} -> {line.split()[1]}" in result.stdout  # the breach is named


def test_a_new_top_level_module_must_be_placed_in_a_layer(package_copy):
    (package_copy / "agentworld_local" / "newcomer.py").write_text('"""Not yet placed in a layer."""\n', encoding="utf-8")
    result = lint_imports(package_copy)
    assert result.returncode != 0 and "newcomer" in result.stdout + result.stderr
