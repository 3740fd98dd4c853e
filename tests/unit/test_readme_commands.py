"""The README's commands work as written after set-up, in a new shell: it says to activate
the venv before them, every `awl` command it shows exists with the options it gives, and the
ones that need no model or earlier file run in a fresh shell that followed that step."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import typer.main

from agentworld_local.cli.main import _register_commands, app

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```bash\n(.*?)```", README, re.S)
SETUP = 2  # the two set-up blocks at the top create the venv and call it by path
AWL = re.compile(r"(?:^|\| |&& )awl\b(.*)")
#: Commands that need no model, no network and no file from an earlier line.
STANDALONE = (("scenarios", "list"), ("scenarios", "show"), ("models", "list"), ("sessions", "list"))


def awl_lines() -> list[str]:
    """Every bare `awl ...` line after the set-up blocks, without its trailing comment."""
    lines = []
    for block in BLOCKS[SETUP:]:
        for line in block.splitlines():
            line = re.split(r"\s#\s", line)[0].strip()
            if AWL.search(line):
                lines.append(line)
    return lines


def command_of(line: str) -> tuple[tuple[str, ...], list[str]]:
    """The subcommand path and the remaining words of an `awl` line."""
    _register_commands()
    command = typer.main.get_command(app)
    words = shlex.split(AWL.search(line).group(1))
    path = []
    while words and getattr(command, "commands", None) and words[0] in command.commands:
        command = command.commands[words[0]]
        path.append(words.pop(0))
    flags = {flag for param in command.params for flag in (*param.opts, *param.secondary_opts)}
    unknown = [word for word in words if word.startswith("-") and word.split("=")[0] not in flags]
    assert not getattr(command, "commands", None), f"`{line}` names a group, not a command"
    return tuple(path), unknown


def test_the_readme_activates_the_venv_before_its_first_bare_awl_command():
    activate = README.find("source .venv/bin/activate")
    first_awl = min(README.find(f"\n{line}") for line in awl_lines())
    assert 0 < activate < first_awl


def test_every_awl_command_in_the_readme_exists_with_its_options():
    lines = awl_lines()
    assert len(lines) > 20
    for line in lines:
        path, unknown = command_of(line)
        assert path, f"`{line}`: no such command"
        assert not unknown, f"`{line}`: {unknown} are not options of awl {' '.join(path)}"


def test_standalone_readme_commands_run_in_a_new_shell_after_activation(tmp_path):
    activate = next(line for block in BLOCKS for line in block.splitlines() if "bin/activate" in line)
    activate = re.split(r"\s#\s", activate)[0].strip()
    venv = Path(sys.prefix)
    if venv != ROOT / ".venv":  # the suite runs from another venv: activate that one
        activate = activate.replace(".venv", shlex.quote(str(venv)))
    runnable = [line for line in awl_lines() if command_of(line)[0] in STANDALONE]
    assert len(runnable) >= 3
    script = " && ".join([activate, *runnable])
    # A new shell: no venv on PATH, no profile, a private awl home.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "AWL_HOME": str(tmp_path / "awl"), "LANG": "C.UTF-8"}
    result = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=ROOT, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, f"{script}\n{result.stderr}"
    assert "Traceback" not in result.stderr
