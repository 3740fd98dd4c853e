"""The MCP domain: a tool call to a Model Context Protocol server, the tool's result out.

The server's tool definitions are part of the world: a session or scenario gives them
(`get_domain("mcp", tools=[...])`); without them a small file-workspace server is used.
"""

from __future__ import annotations

import json
from typing import Any

from agentworld_local.domains.prompting import PromptSpec, compose_prompt
from agentworld_local.domains.tools import ToolCallDomain, tools_json

# Modelled on the shape of the reference file-system MCP server; the words are ours.
WORKSPACE_TOOLS: list[dict[str, Any]] = [
    {
        "name": "list_directory",
        "description": "List the entries of a directory, each prefixed with [DIR] or [FILE].",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
    {
        "name": "read_file",
        "description": "Return the complete text content of a file.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
    {
        "name": "write_file",
        "description": "Create a file or replace its content.",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
    {
        "name": "search_files",
        "description": "Find files and directories whose name matches a pattern, below a directory.",
        "inputSchema": {
            "type": "object",
            "properties": {"pattern": {"type": "string"}, "path": {"type": "string", "description": "Default: the workspace root."}},
            "required": ["pattern"],
        },
    },
    {
        "name": "get_file_info",
        "description": "Size, timestamps, type and permissions of a file or directory.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
]


class MCPDomain(ToolCallDomain):
    name = "mcp"
    title = "MCP tool server"
    state_lexer = "json"
    default_tools = WORKSPACE_TOOLS
    friendly_examples = ["read_file path=README.md", 'write_file path=notes.txt content="hello world"']

    def system_prompt(self) -> str:
        return compose_prompt(
            PromptSpec(
                role="MCP Tool World Model",
                objective=(
                    "You simulate a Model Context Protocol (MCP) server and the world behind its tools, "
                    "answering the tool calls an agent makes."
                ),
                state=(
                    "the server session as JSON (server name, protocol version, the tools it offers) on "
                    "the first turn; afterwards the state is implied by the earlier results."
                ),
                action=(
                    "one JSON tool call, `{\"name\": TOOL, \"arguments\": {...}}`, inside a ```json block, "
                    "naming one of the tools defined below."
                ),
                responsibilities=[
                    "**Result prediction**: return the result the server would send for this call, as "
                    'MCP writes it: `{"content": [{"type": "text", "text": "..."}], "isError": false}` '
                    "(structured tools may also return `structuredContent`).",
                    "**Continuity**: whatever earlier calls created, changed or revealed (records, files, "
                    "identifiers, balances, timestamps) stays true in later results.",
                    "**Faithful errors**: invalid arguments, missing resources, permission problems and "
                    'server-side failures come back the way a real server reports them (`"isError": true` '
                    "with its message).",
                ],
                sections=[("Tool Definitions", f"```json\n{tools_json(self.specs)}\n```")],
                state_rules=[
                    "Keep every identifier, name and number consistent with earlier results.",
                    "Results are data in the tool's own format, never a description of data.",
                    "Invent only what the tools' domain makes plausible, and keep it realistic in size.",
                ],
                action_rules=[
                    "The tool call is given; simulate it exactly as sent, never a corrected one.",
                    "A call that does not match the tool's input schema fails as the server would fail it.",
                ],
            )
        )

    def initial_state(self) -> str:
        default = [spec.name for spec in self.specs] == [tool["name"] for tool in WORKSPACE_TOOLS]
        session = {
            "server": {"name": "workspace-files" if default else "mcp-server", "version": "1.0.0"},
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": False}},
            "tools": [spec.name for spec in self.specs],
        }
        if default:
            session["roots"] = ["file:///home/user/workspace"]
        return json.dumps(session, indent=2)
