"""Worlds as environments for agents: a synchronous Python API over the session runner.

`make(id_or_domain, model=..., **options)` gives a SimulatedEnv (reset, step, undo, close);
env/gym.py adapts it to Gymnasium (the `gym` extra), serve/mcp.py exposes it over MCP;
env/trl.py makes a TRL `environment_factory` class whose tools are a domain's actions, over
`awl serve` (docs/trl.md); serve/openenv.py serves OpenEnv (docs/openenv.md).
"""

from agentworld_local.env.factory import make
from agentworld_local.env.ids import EnvId, env_ids, resolve_env
from agentworld_local.env.simulated import SimulatedEnv

__all__ = ["EnvId", "SimulatedEnv", "env_ids", "make", "resolve_env"]
