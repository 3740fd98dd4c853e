"""Defaults live once, in agentworld_local/defaults.py: no other module defines its own copy
(a second `DEFAULT_CTX = 16384` drifts the day the real default changes)."""

from __future__ import annotations

import ast
from pathlib import Path

from agentworld_local import defaults

PACKAGE = Path(__file__).resolve().parents[2] / "agentworld_local"
NAMES = {name for name in vars(defaults) if name.isupper() and not name.endswith("_HELP")}


def _assigned_names(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        found |= {target.id for target in targets if isinstance(target, ast.Name)}
    return found


def test_no_module_redefines_a_default():
    clashes = {
        path.relative_to(PACKAGE).as_posix(): sorted(_assigned_names(path) & NAMES)
        for path in PACKAGE.rglob("*.py") if path.name != "defaults.py"
    }
    assert {path: names for path, names in clashes.items() if names} == {}


def test_scripted_backend_uses_the_default_context():
    from agentworld_local.engine.scripted import ScriptedBackend

    assert ScriptedBackend(["<predicted_observation>\nx\n</predicted_observation>"]).info.n_ctx == defaults.DEFAULT_CTX
