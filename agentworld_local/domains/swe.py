"""The software-engineering domain: tool calls against a repository, tool results out."""

from __future__ import annotations

from typing import Any

from agentworld_local.domains.tools import Shortcut, ToolCallDomain

#: The shell tool's name in the official template (and so in the model's training data).
SHELL_TOOL = "run_shell_command"


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


SWE_TOOLS: list[dict[str, Any]] = [
    {
        "name": SHELL_TOOL,
        "description": "Run a shell command in the repository's working directory and return its output and exit code.",
        "inputSchema": _schema(
            {
                "command": {"type": "string", "description": "The command line, e.g. `git status`."},
                "timeout": {"type": "integer", "description": "Seconds before the command is killed (default 120)."},
            },
            ["command"],
        ),
    },
    {
        "name": "read_file",
        "description": "Show a file with line numbers, optionally only a range of lines.",
        "inputSchema": _schema(
            {
                "path": {"type": "string", "description": "Path relative to the repository root, or absolute."},
                "start_line": {"type": "integer", "description": "First line to show (1-based)."},
                "end_line": {"type": "integer", "description": "Last line to show (inclusive)."},
            },
            ["path"],
        ),
    },
    {
        "name": "write_file",
        "description": "Create a file, or overwrite it, with the given content.",
        "inputSchema": _schema(
            {"path": {"type": "string"}, "content": {"type": "string", "description": "The whole new content."}},
            ["path", "content"],
        ),
    },
    {
        "name": "str_replace",
        "description": "Replace the single occurrence of `old_str` in a file with `new_str`; fails if it occurs zero or several times.",
        "inputSchema": _schema(
            {"path": {"type": "string"}, "old_str": {"type": "string"}, "new_str": {"type": "string"}},
            ["path", "old_str", "new_str"],
        ),
    },
    {
        "name": "search",
        "description": "Search file contents with a regular expression (like `grep -rn`), returning path:line:text matches.",
        "inputSchema": _schema(
            {
                "pattern": {"type": "string", "description": "A regular expression."},
                "path": {"type": "string", "description": "Directory or file to search (default: the repository root)."},
                "include": {"type": "string", "description": "Only files matching this glob, e.g. `*.py`."},
            },
            ["pattern"],
        ),
    },
    {
        "name": "run_tests",
        "description": "Run the project's test suite (or part of it) and return the runner's output.",
        "inputSchema": _schema(
            {"target": {"type": "string", "description": "A test file, directory or node id; empty for all tests."}},
            [],
        ),
    },
]

DEFAULT_INITIAL_STATE = """\
Repository /workspace/invoice-service (git, branch main, working tree clean).
Python 3.11.9 in .venv with the project's dependencies installed; tests run with pytest 8.2.

$ ls -a /workspace/invoice-service
.  ..  .git  .gitignore  README.md  invoices  pyproject.toml  tests
$ ls invoices tests
invoices:
__init__.py  api.py  models.py  totals.py

tests:
__init__.py  conftest.py  test_api.py  test_totals.py
"""


class SweDomain(ToolCallDomain):
    name = "swe"
    title = "Software engineering (repository tools)"
    state_lexer = "text"
    shows_file_system = True
    default_tools = SWE_TOOLS
    friendly_examples = ["bash ls -la", "read_file path=src/app.py", "run_tests tests/test_api.py"]

    def shortcuts(self) -> dict[str, Shortcut]:
        # `bash ls -la` and `sh ls` stay friendly words for the shell tool.
        return {"bash": self._shell, "sh": self._shell, "shell": self._shell}

    def _shell(self, rest: str) -> tuple[str, dict[str, Any]]:
        if SHELL_TOOL not in self._by_name:
            return "bash", {}  # check_call names the session's tools
        return SHELL_TOOL, self.friendly_arguments(self._by_name[SHELL_TOOL], rest)

    def initial_state(self) -> str:
        return DEFAULT_INITIAL_STATE
