"""A simulated machine as an MCP server (the official `mcp` SDK; `awl mcp` serves it on stdio).

An agent connected over MCP sees three tools: `act` (run a command or an action in the
session's domain: one turn of the trajectory), `state` (the current screen or state, no
turn) and `undo` (drop the last turn). Nothing is executed: the world model predicts every
answer, and the session is an ordinary trajectory file (SimulatedEnv, over the runner).

The one module that imports `mcp`. Tool calls run on the SDK's worker threads; a lock lets
one reach the environment at a time, so concurrent calls queue instead of racing.
"""

from __future__ import annotations

import threading
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from agentworld_local import __version__
from agentworld_local.env.simulated import SimulatedEnv
from agentworld_local.errors import AwlError


def build_server(env: SimulatedEnv) -> MCPServer:
    """The MCP server over `env`, which has a session open (env.reset() was called)."""
    domain = env.domain
    lock = threading.Lock()

    def guarded(call: Any) -> str:
        with lock:
            try:
                return call()
            except AwlError as error:  # one line and the next step, as an MCP tool error
                raise ToolError(f"{error.message} {error.hint or ''}".strip()) from None

    server: MCPServer = MCPServer(
        name="agentworld-local", version=__version__, log_level="WARNING",  # a failed call is the client's to show
        instructions=(f"A simulated {domain.title}. A world model predicts what it answers; nothing you send is "
                      f"executed anywhere. Call `act` with one action, `state` to read the current state, `undo` to "
                      f"take back the last action. Every call to `act` is a turn in the session file."),
    )

    @server.tool(name="act", structured_output=False,
                 description=f"Send one action to the simulated {domain.title} and get what it shows next. "
                             f"{domain.action_help()}")
    def act(action: str) -> str:
        def step() -> str:
            observation, _, terminated, truncated, info = env.step(action)
            if "invalid_action" in info:
                raise ToolError(info["invalid_action"])
            notes = [*(["[the answer reached its token limit and may be cut]"] if truncated else []),
                     *(["[the task was declared finished]"] if terminated else [])]
            return "\n".join([observation, *notes]) if notes else observation
        return guarded(step)

    @server.tool(name="state", structured_output=False,
                 description=f"The current state of the simulated {domain.title} (no action is sent).")
    def state() -> str:
        return guarded(lambda: env.observation)

    @server.tool(name="undo", structured_output=False,
                 description="Take back the last action; returns the state that is current again.")
    def undo() -> str:
        def take_back() -> str:
            if env.turns == 0:
                raise ToolError("There is no action to undo.")
            return env.undo()
        return guarded(take_back)

    return server


def serve_stdio(env: SimulatedEnv) -> None:
    """Serve `env` on stdin/stdout until the client disconnects; the env is closed (saved) after."""
    try:
        build_server(env).run("stdio")
    finally:
        env.close()
