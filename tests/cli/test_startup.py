"""`awl --help` starts fast: each command imports its heavy libraries when it runs, not at start-up.

No timing assertion: the time is measured by hand. This test checks the cause that made
start-up slow (0.56 to 0.9 s): modules that only some commands need, loaded for every command.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.cli.helpers import REPO

#: Each costs tens to hundreds of milliseconds to import, and `--help` needs none of them.
HEAVY = ("llama_cpp", "gguf", "numpy", "huggingface_hub", "textual", "psutil")


def modules_loaded_by(argv: list[str]) -> tuple[str, list[str]]:
    code = (
        "import contextlib, io, json, sys\n"
        "from agentworld_local.cli.main import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    code = main({argv!r})\n"
        f"print(json.dumps([out.getvalue(), sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))]))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
    shown, loaded = json.loads(result.stdout.splitlines()[-1])
    return shown, loaded


@pytest.mark.parametrize("argv", [["--help"], ["models", "--help"], ["run", "--help"], ["--version"]])
def test_help_loads_no_heavy_library(argv):
    shown, loaded = modules_loaded_by(argv)
    assert loaded == [], f"`awl {' '.join(argv)}` imported {loaded}"
    assert shown  # the help (or version) was really printed


def test_every_command_is_still_listed_in_the_help():
    shown, _ = modules_loaded_by(["--help"])
    for command in ("run", "demo", "replay", "models", "doctor", "scenarios", "export", "import"):
        assert command in shown, command
