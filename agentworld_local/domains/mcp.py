"""The MCP domain: a tool call to a Model Context Protocol server, the tool's result out.

The server's tool definitions are part of the world: a session or scenario gives them
(`get_domain("mcp", tools=[...])`); without them a small file-workspace server is used.
Results are the tool's raw output (the official prompt asks for no extra envelope).
"""

from __future__ import annotations

from typing import Any

from agentworld_local.domains.tools import ToolCallDomain

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

    # The official mcp turns carry no Current State: the tool definitions (in the system
    # prompt) and the earlier results are the whole state. A scenario may still give one.
    def initial_state(self) -> str:
        return ""
