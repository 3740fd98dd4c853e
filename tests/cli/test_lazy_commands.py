"""`awl --help` is answered from cli/main.py's COMMANDS table, without importing any command,
typer or a model library; the table says what the commands themselves say."""

from __future__ import annotations

import json
import subprocess
import sys

import typer

from agentworld_local.cli.main import COMMANDS, _register_commands, app, main, root_help
from tests.cli.helpers import REPO

#: What neither `import agentworld_local` nor `awl --help` may load.
HEAVY = ("llama_cpp", "textual", "fastapi")


def loaded_by(code: str) -> list[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))\n"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_importing_the_package_loads_no_model_library_ui_or_server():
    assert not set(loaded_by("import agentworld_local")) & set(HEAVY)


def test_the_help_loads_no_model_library_ui_server_or_typer():
    code = ("import contextlib, io\nfrom agentworld_local.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(['--help'])")
    assert not set(loaded_by(code)) & {*HEAVY, "typer", "rich"}


def test_the_table_is_what_the_commands_say_in_their_order():
    _register_commands()
    group = typer.main.get_command(app)
    context = typer.Context(group)
    real = {}
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        real[name] = " ".join((command.short_help or command.help or "").split("\n\n")[0].split())
    assert real == {name: " ".join(text.split()) for name, (_, text) in COMMANDS.items()}
    assert list(real) == list(COMMANDS)


def test_each_command_runs_with_only_its_own_modules(capsys):
    for name in COMMANDS:
        code = (f"import contextlib, io\nfrom agentworld_local.cli.main import main\n"
                f"with contextlib.redirect_stdout(io.StringIO()):\n    assert main({[name, '--help']!r}) == 0")
        assert not set(loaded_by(code)) & {"llama_cpp", "fastapi"} or name == "serve", name


def test_the_help_lists_every_command_and_version_is_said(capsys):
    assert main(["--help"]) == 0
    shown = capsys.readouterr().out
    assert shown == root_help() and shown.startswith("Usage: awl")
    for name in COMMANDS:
        assert f"\n  {name} " in shown, name
    assert main(["--version"]) == 0 and capsys.readouterr().out.startswith("awl ")
