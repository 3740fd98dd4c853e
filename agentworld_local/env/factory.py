"""`make()`: an environment by id, domain or scenario name, with the session's options."""

from __future__ import annotations

from typing import Any

from agentworld_local.env.ids import resolve_env
from agentworld_local.env.simulated import ENV_OPTIONS, SPEC_OPTIONS, SimulatedEnv, control_list
from agentworld_local.errors import refuse_unknown
from agentworld_local.session.spec import SessionSpec


def make(id_or_domain: str, model: str | None = None, **options: Any) -> SimulatedEnv:
    """`make("agentworld/Terminal-v0", model="scripted:answers.json", task="...")`.

    `options`: the session's (task, initial_state, controls, tools, world, state_format,
    temperature, max_tokens, think, seed, prompts, shared_world: a shared world to join by name, in
    which the same seed and actions meet the same observations) and the env's (backend, load_options, out_dir,
    reward, reward_timeout, reveal_simulator: `info` also carries the world model's thinking, token
    counts and the trajectory's path, off by default; defaults.REVEAL_SIMULATOR_HELP).
    """
    refuse_unknown(options, (*SPEC_OPTIONS, *ENV_OPTIONS), "an environment", shown="model, ", also=("model",))
    chosen = resolve_env(id_or_domain)
    spec_options = {name: value for name, value in options.items() if name in SPEC_OPTIONS}
    if "controls" in spec_options:
        spec_options["controls"] = control_list(spec_options["controls"])
    spec = SessionSpec(domain=chosen.domain, scenario=chosen.scenario, **spec_options)
    return SimulatedEnv(spec, model=model, **{name: value for name, value in options.items() if name in ENV_OPTIONS})
