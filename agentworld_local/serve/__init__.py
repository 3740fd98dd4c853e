"""Faces that serve worlds to programs: the MCP server (mcp.py; `awl mcp`)."""
