"""A simulated machine as an MCP server (the official `mcp` SDK; `awl mcp` serves it on stdio).

An agent connected over MCP sees four tools: `act` (run a command or an action in the
session's domain: one turn of the trajectory), `state` (the current screen or state, no
turn), `undo` (drop the last turn) and `reset` (a new episode in a new file), and one
resource, `awl://trajectory` (the current episode's session file; only with `--reveal-simulator`,
as the `trajectory` field of `act` and `reset`: a file path is the simulator's side, not the
agent's, defaults.REVEAL_SIMULATOR_HELP). Nothing is executed: the
world model predicts every answer, and the session is an ordinary trajectory file
(SimulatedEnv, over the runner).

`act`, `state`, `undo` and `reset` declare an output schema and return structured content
beside the text a text-only client reads; every tool refuses arguments it
does not declare, and a bad argument is said in one line (pydantic's own text and URL stay
here). After an action that ends the task (`[]` in the terminal) the episode is over: `act` is
refused until `reset` (or an `undo` of the ending). While `act` runs, a client that sent a
progressToken hears the turn's phases as progress notifications (serve/mcp_progress.py).

The one module that imports `mcp`. Tool calls run on the SDK's worker threads; the runner
orders them (the session's mailbox): concurrent calls queue there, in order, and what the
tools say of the session is the runner's view after each command. A client's cancel
notification for an `act` in flight stops its turn (nothing is saved for it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, TextContent, ToolAnnotations, jsonrpc_message_adapter
from pydantic import BaseModel, Field, ValidationError, WithJsonSchema

from agentworld_local import __version__
from agentworld_local.engine import events
from agentworld_local.env.simulated import SimulatedEnv
from agentworld_local.errors import AwlError
from agentworld_local.files import os_error_text
from agentworld_local.scenarios import scenario_by_name
from agentworld_local.serve.jsonrpc_lines import claimed_stdio
from agentworld_local.serve.mcp_progress import Progress, TurnProgress
from agentworld_local.terminal_text import shorten

TRAJECTORY_URI = "awl://trajectory"

# The hints, in the spec's terms. The host is never touched and nothing outside the server
# is reached, so every tool's world is closed. `act` only adds a turn (the file grows, a
# simulated `rm` is a prediction); `undo` and `reset` throw away the live state (no redo,
# no going back to an episode), though the file keeps every line: destructive.
ACT_HINTS = ToolAnnotations(title="Act", read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                            open_world_hint=False)
STATE_HINTS = ToolAnnotations(title="State", read_only_hint=True, idempotent_hint=True, open_world_hint=False)
UNDO_HINTS = ToolAnnotations(title="Undo", read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                             open_world_hint=False)
RESET_HINTS = ToolAnnotations(title="Reset", read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                              open_world_hint=False)


class Observed(BaseModel):
    """What `act` and `reset` share in their structured content."""

    observation: str = Field(description="What the simulated environment shows now (the world model's prediction, "
                                         "or the starting state).")
    turn: int = Field(description="The turn's number on the current branch: 1 for the first action, 0 before it.")
    trajectory: str | None = Field(None, description="The session file (JSONL) the episode's turns are saved in "
                                                     "(only from a server started with --reveal-simulator).")


class Step(Observed):
    """What `act` returns as structured content: one turn of the episode."""

    terminated: bool = Field(description="The action ended the task: call `reset` for a new episode.")
    truncated: bool = Field(description="The episode was cut by a step limit (as in Gymnasium; awl mcp has none).")
    cut_short: bool = Field(description="The answer hit its token limit or looped and was stopped; it may be cut.")
    reward: float = Field(description="What the turn earned (0.0 unless the session has a reward hook).")


class Current(Observed):
    """What `state` and `undo` return as structured content: where the episode is, no turn run."""

    ended: bool = Field(description="The last action ended the task: `act` is refused until `reset` (or an `undo`).")


class Episode(Observed):
    """What `reset` returns as structured content: a new episode, before its first action."""

    task: str = Field(description="The agent's task in this episode.")
    seed: int = Field(description="The sampling seed of this episode.")


class StrictTool(Tool):
    """A tool that refuses arguments it does not declare. The SDK drops them silently, so a
    misspelt `action` would look like a call without one."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        takes = list(self.parameters.get("properties", {}))
        unknown = [name for name in arguments if name not in takes]
        known = ", ".join(f"`{name}`" for name in takes) or "no arguments"
        if unknown:
            raise ToolError(f"Error executing tool {self.name}: unknown argument "
                            f"{', '.join(f'`{name}`' for name in unknown)}; `{self.name}` takes {known}.")
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as error:
            if not isinstance(error.__cause__, ValidationError):
                raise
            # pydantic's text is several lines and a URL: one line, in the tool's terms.
            raise ToolError(f"Error executing tool {self.name}: {_invalid(error.__cause__)}; "
                            f"`{self.name}` takes {known}.") from None


def _invalid(error: ValidationError) -> str:
    """A ValidationError of a tool's arguments as one line: each bad argument and why."""
    said = []
    for problem in error.errors(include_url=False, include_context=False):
        name = ".".join(str(part) for part in problem["loc"]) or "arguments"
        if problem["type"] == "missing":
            said.append(f"`{name}` is missing")
            continue
        given = shorten(repr(problem.get("input")), 40)
        said.append(f"`{name}`: {problem['msg'].rstrip('.')} (got {given})")
    return "; ".join(said) or "invalid arguments"


def strict_tool(fn: Callable[..., Any], **options: Any) -> StrictTool:
    tool = StrictTool.from_function(fn, **options)
    tool.parameters["additionalProperties"] = False  # said in the input schema too, for clients that check
    return tool


class SimulatedMachine:
    """The tools' side of the server: the env, over the runner that orders its commands."""

    def __init__(self, env: SimulatedEnv) -> None:
        self.env = env

    @contextmanager
    def _said(self) -> Iterator[None]:
        try:
            yield
        except AwlError as error:  # one line and the next step, as an MCP tool error
            raise ToolError(f"{error.message} {error.hint or ''}".strip()) from None

    async def act(self, action: Annotated[str, Field(description="One action, as the tool's description shows.")],
                  ctx: Context) -> Annotated[CallToolResult, Step]:
        progress = TurnProgress()
        cancelled = False

        def tell(event: events.SessionEvent) -> None:
            """On the turn's thread: a notification when the phase is worth saying (a no-op
            for a request without a progressToken). It never stops the turn."""
            said = progress.update(event)
            if said is None or cancelled:
                return
            try:
                anyio.from_thread.run(_notify, ctx, said)
            except Exception:  # noqa: BLE001 - a client gone or a closed loop: the turn goes on
                pass

        try:
            # Abandoned on the client's cancel: the turn is stopped below, and the thread ends with it.
            return await anyio.to_thread.run_sync(self._act, action, tell, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            cancelled = True  # no notification for a request that is over
            self.env.cancel()  # the turn stops at its next token; nothing is saved for it
            raise

    def _act(self, action: str, tell: Callable[[events.SessionEvent], None] | None = None) -> CallToolResult:
        with self._said():
            if self.env.ended:
                raise ToolError(f"The episode is over: turn {self.env.turns} ended the task. Call `reset` to start a "
                                f"new episode (or `undo` to take the ending back).")
            observation, reward, terminated, truncated, info = self.env.step(action, on_event=tell)
            if "invalid_action" in info:
                raise ToolError(info["invalid_action"])
            notes = [*(["[the answer reached its token limit and may be cut]"] if info["cut_short"] else []),
                     *(["[the task was declared finished]"] if terminated else [])]
            step = Step(observation=observation, turn=info["turn"], terminated=terminated, truncated=truncated,
                        cut_short=info["cut_short"],
                        reward=reward, trajectory=info.get("trajectory"))
            return _result("\n".join([observation, *notes]), step)

    def state(self) -> Annotated[CallToolResult, Current]:
        with self._said():
            return self._current(self.env.observation)

    def undo(self) -> Annotated[CallToolResult, Current]:
        with self._said():
            if self.env.turns == 0:
                raise ToolError("There is no action to undo.")
            return self._current(self.env.undo())  # only the last turn can have ended the task: it is gone

    def _current(self, observation: str) -> CallToolResult:
        path = self.env.trajectory if self.env.reveal_simulator else None
        return _result(observation, Current(observation=observation, turn=self.env.turns, ended=self.env.ended,
                                            trajectory=str(path) if path is not None else None))

    def reset(
        self,
        task: Annotated[str | None, Field(description="The agent's task for this episode (default: as started).")] = None,
        controls: Annotated[list[str] | None, Field(description="Instructions to the world model for this episode, "
                                                    "in place of the server's --control ones.")] = None,
        initial_state: Annotated[str | None, Field(description="The starting state's text (default: as started).")] = None,
        world: Annotated[str | None, Field(description="A fictional-world description (default: as started).")] = None,
        seed: Annotated[int | None, Field(description="The sampling seed (default: drawn from the last one).")] = None,
        scenario: Annotated[str | None, Field(description="Another bundled scenario of this domain (`awl scenarios "
                                              "list`): its task, starting state and controls.")] = None,
        # Any value reaches the one check every face makes (worlds/names.py), which says what a name is.
        shared_world: Annotated[Any, WithJsonSchema({"type": "string", "description": "The shared world to join, by "
                                                     "name (never a path): the same seed and actions meet the same "
                                                     "observations (default: as started).",
                                                     "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"})] = None,
    ) -> Annotated[CallToolResult, Episode]:
        options = {name: value for name, value in (("task", task), ("controls", controls),
                                                   ("initial_state", initial_state), ("world", world),
                                                   ("scenario", scenario), ("shared_world", shared_world))
                   if value is not None}
        with self._said():
            if scenario is not None:  # by name only, as on every face: never a file (scenarios/by_name.py)
                options["scenario"] = scenario_by_name(scenario).name
            observation, info = self.env.reset(seed=seed, options=options or None)
            episode = Episode(observation=observation, turn=0, task=info["task"], seed=info["seed"],
                              trajectory=info.get("trajectory"))
            return _result(observation, episode)

    def trajectory(self) -> str:
        path = self.env.trajectory
        if path is None:
            raise ResourceError("No episode has started yet.")
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            raise ResourceError(f"Cannot read {path} ({os_error_text(error)}).") from None
        return text[:text.rfind("\n") + 1]  # a line being written now is not whole yet


async def _notify(ctx: Context, said: Progress) -> None:
    await ctx.report_progress(said.progress, None, said.message)


def _result(text: str, structured: BaseModel) -> CallToolResult:
    # The text is what a text-only client read before structured content: the observation.
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=structured.model_dump(mode="json", exclude_none=True))


def build_server(env: SimulatedEnv) -> MCPServer:
    """The MCP server over `env`, which has a session open (env.reset() was called)."""
    domain = env.domain
    machine = SimulatedMachine(env)
    tools = [
        strict_tool(machine.act, name="act", annotations=ACT_HINTS,
                    description=f"Send one action to the simulated {domain.title} and get what it shows next. "
                                f"{domain.action_help()} After an action that ends the task, call `reset`."),
        strict_tool(machine.state, name="state", annotations=STATE_HINTS,
                    description=f"The current state of the simulated {domain.title} (no action is sent)."),
        strict_tool(machine.undo, name="undo", annotations=UNDO_HINTS,
                    description="Take back the last action (the one that ended the task too); returns the state "
                                "that is current again."),
        strict_tool(machine.reset, name="reset", annotations=RESET_HINTS,
                    description=f"End this episode (its file is kept) and start a new one of the simulated "
                                f"{domain.title} in a new session file, at turn 0; optionally with another task, "
                                f"starting state, world, control instructions or shared world."),
    ]
    server: MCPServer = MCPServer(
        name="agentworld-local", version=__version__, log_level="WARNING",  # a failed call is the client's to show
        tools=tools,
        instructions=(f"A simulated {domain.title}. A world model predicts what it answers; nothing you send is "
                      f"executed anywhere. Call `act` with one action, `state` to read the current state, `undo` to "
                      f"take back the last action, `reset` for a new episode."
                      + (f" Every call to `act` is a turn in the session file, readable as the resource "
                         f"{TRAJECTORY_URI}." if env.reveal_simulator else "")),
    )
    if env.reveal_simulator:  # a file of the host is the simulator's side (the module's doc)
        server.resource(TRAJECTORY_URI, name="trajectory", title="Session file", mime_type="application/jsonl",
                        description="The current episode's session file: a header line, then a line for each turn, "
                                    "undo or control (JSON Lines).")(machine.trajectory)
    return server


def serve_stdio(env: SimulatedEnv) -> None:
    """Serve `env` on stdin/stdout until the client disconnects; the env is closed (saved) after."""
    try:
        server = build_server(env)
        with claimed_stdio(lambda line: jsonrpc_message_adapter.validate_json(line, by_name=False)) as wire:
            anyio.run(_serve_on, server, wire)
    finally:
        env.close()


async def _serve_on(server: MCPServer, wire: Any) -> None:
    """The SDK's stdio transport on a Wire, which answers a line the SDK would drop (jsonrpc_lines.py)."""
    async with stdio_server(stdin=wire, stdout=wire) as (read_stream, write_stream):
        lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, on other streams
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
