"""The software-engineering domain: tool calls against a repository, tool results out."""

from __future__ import annotations

from typing import Any

from agentworld_local.domains.prompting import PromptSpec, compose_prompt
from agentworld_local.domains.tools import ToolCallDomain, tools_json


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


SWE_TOOLS: list[dict[str, Any]] = [
    {
        "name": "bash",
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

    def system_prompt(self) -> str:
        return compose_prompt(
            PromptSpec(
                role="Software Engineering World Model",
                objective=(
                    "You simulate a code repository in a Linux container, as a coding agent sees it "
                    "through a small set of tools: shell commands, file reads and edits, code search "
                    "and test runs."
                ),
                state=(
                    "on the first turn, a description of the repository and the output of earlier "
                    "commands; afterwards the state is implied by the tool results so far."
                ),
                action=(
                    "one JSON tool call, `{\"name\": TOOL, \"arguments\": {...}}`, inside a ```json "
                    "block, calling one of the tools defined below."
                ),
                responsibilities=[
                    "**Result prediction**: return exactly what the called tool would return: command "
                    "output with its exit code, numbered file lines, match lists, test runner reports.",
                    "**An implicit file system**: the repository's files, their contents, the git state "
                    "and installed packages follow from the state and from every earlier result; edits "
                    "and writes change them for all later turns.",
                    "**Faithful failures**: a missing file, a `str_replace` whose `old_str` is absent or "
                    "ambiguous, a failing test or a syntax error produce the real tool's error text.",
                ],
                sections=[("Tool Definitions", f"```json\n{tools_json(self.specs)}\n```")],
                state_rules=[
                    "Code you have shown stays the same unless an action changed it; line numbers move "
                    "when lines are added or removed above them.",
                    "Test results follow the code as it is now: a fix makes the test pass, a new bug "
                    "makes it fail with a realistic traceback.",
                    "Keep paths, package versions and tool output formats stable across turns.",
                ],
                action_rules=[
                    "The tool call is given; simulate it, never a different or corrected call.",
                    "A call with arguments the tool rejects returns that tool's error message.",
                    "Long outputs are shown the way the tool shows them (test summaries, truncated logs).",
                ],
            )
        )

    def initial_state(self) -> str:
        return DEFAULT_INITIAL_STATE
