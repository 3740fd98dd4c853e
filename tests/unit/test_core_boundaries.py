"""The core knows nothing of the UI libraries, and only engine/llama.py touches llama_cpp."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "agentworld_local"
CORE = ["contract", "domains", "engine", "models", "scenarios", "trajectory"]


def test_importing_the_core_loads_neither_textual_nor_typer():
    modules = [
        "agentworld_local.errors",
        "agentworld_local.paths",
        "agentworld_local.contract",
        "agentworld_local.domains",
        "agentworld_local.domains.terminal",
        "agentworld_local.engine.world",
        "agentworld_local.engine.llama",
        "agentworld_local.trajectory",
        "agentworld_local.models.registry",
        "agentworld_local.models.hub",
        "agentworld_local.models.inspect",
        "agentworld_local.models.plan",
        "agentworld_local.scenarios",
        "agentworld_local.trajectory.agentworldbench",
        "agentworld_local.domains.filesystem",
    ]
    modules += [f"agentworld_local.domains.{name}" for name in ("swe", "mcp", "search", "web", "desktop", "android")]
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'typer', 'click'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent, check=True)
    assert json.loads(result.stdout) == []


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_only_engine_llama_imports_llama_cpp():
    importers = {
        str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py") if "llama_cpp" in _imports(path)
    }
    assert importers == {"engine/llama.py"}


def test_core_packages_never_import_ui_libraries():
    for package in CORE:
        for path in (PACKAGE / package).rglob("*.py"):
            assert not _imports(path) & {"textual", "typer", "click"}, path
