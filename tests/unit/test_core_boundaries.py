"""What import-linter (tests/unit/test_layers.py) does not see: importing the core loads no UI
library at run time, and only engine/llama/ touches llama_cpp.

The core is every module of the package except the faces (cli/, tui/, serve/): found by walking
the package, so a new core module (safe_parse.py, files.py, terminal_text.py, testing/, ...) is
covered the day it is added.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "agentworld_local"
FACES = ("cli", "tui", "serve")
UI_LIBRARIES = {"textual", "typer", "click", "rich"}


def core_files() -> list[Path]:
    return sorted(
        path for path in PACKAGE.rglob("*.py")
        if path.relative_to(PACKAGE).parts[0] not in FACES
    )


def module_name(path: Path) -> str:
    parts = ("agentworld_local", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Top-level names imported (absolute imports), plus `agentworld_local.X` for our own subpackages."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom):  # relative: resolve against the file's package
            package = module_name(path).split(".")
            if path.name != "__init__.py":
                package = package[:-1]
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            modules = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            names.add(parts[0])
            if parts[0] == "agentworld_local" and len(parts) > 1:
                names.add(f"agentworld_local.{parts[1]}")
    return names


def test_the_walk_covers_the_new_core_modules():
    names = {str(path.relative_to(PACKAGE)) for path in core_files()}
    assert {"safe_parse.py", "files.py", "terminal_text.py", "errors.py", "paths.py"} <= names
    assert any(name.startswith("testing/") for name in names)
    assert not any(name.startswith(FACES) for name in names)


def test_importing_the_core_loads_no_ui_library():
    modules = [module_name(path) for path in core_files()]
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {sorted(UI_LIBRARIES)!r})))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == []


def test_only_engine_llama_imports_llama_cpp():
    importers = {
        path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py") if "llama_cpp" in _imports(path)
    }
    assert importers and all(name.startswith("engine/llama/") for name in importers), sorted(importers)
