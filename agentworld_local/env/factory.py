"""`make()`: an environment by id, domain or scenario name, with the session's options."""

from __future__ import annotations

from typing import Any

from agentworld_local.env.ids import resolve_env
from agentworld_local.env.simulated import ENV_OPTIONS, SPEC_OPTIONS, SimulatedEnv, control_list
from agentworld_local.errors import InputError, refuse_unknown
from agentworld_local.session.spec import SessionSpec


def make(id_or_domain: str, model: str | None = None, **options: Any) -> SimulatedEnv:
    """`make("agentworld/Terminal-v0", model="scripted:answers.json", task="...")`.

    `options`: the session's (task, initial_state, controls, tools, world, state_format,
    temperature, max_tokens, think, seed, prompts, shared_world: a shared world to join by name, in
    which the same seed and actions meet the same observations) and the env's (backend, load_options, out_dir,
    reward, reward_timeout, reveal_simulator: `info` also carries the world model's thinking, token
    counts and the trajectory's path, off by default; defaults.REVEAL_SIMULATOR_HELP).

    A model on servers: `model="openai:NAME@URL"`, or `base_url=` (one API root, or a list of
    them: a fleet, each episode on the least-loaded server) with `api_model=NAME` (and
    `api_key_env=`), as `--base-url`, `--api-model` and `--api-key-env` on the command line.
    """
    refuse_unknown(options, (*SPEC_OPTIONS, *ENV_OPTIONS, *SERVER_OPTIONS), "an environment", shown="model, ",
                   also=("model",))
    server = {name: options.pop(name) for name in SERVER_OPTIONS if name in options}
    if server:
        options["load_options"] = {**dict(options.get("load_options") or {}), "remote": _remote(model, **server)}
    chosen = resolve_env(id_or_domain)
    spec_options = {name: value for name, value in options.items() if name in SPEC_OPTIONS}
    if "controls" in spec_options:
        spec_options["controls"] = control_list(spec_options["controls"])
    spec = SessionSpec(domain=chosen.domain, scenario=chosen.scenario, **spec_options)
    return SimulatedEnv(spec, model=model, **{name: value for name, value in options.items() if name in ENV_OPTIONS})


#: make()'s options for a model on servers (the command line's --base-url, --api-model, --api-key-env).
SERVER_OPTIONS = ("base_url", "api_model", "api_key_env")


def _remote(model: str | None, *, base_url: Any = None, api_model: str | None = None,
            api_key_env: str | None = None) -> Any:
    """The RemoteOptions make()'s server options name (InputError for a set that cannot work)."""
    from agentworld_local.engine.remote.options import RemoteOptions

    if model is not None:
        raise InputError("`model=` names a model loaded here; `base_url=` is for a model on servers.",
                         "Drop `model=` and name the served model with `api_model=`.")
    if not base_url or not api_model:
        missing = " and ".join(name for name, value in (("base_url=", base_url), ("api_model=", api_model)) if not value)
        raise InputError(f"A model on servers needs {missing}.",
                         "E.g. make('terminal', base_url=['http://127.0.0.1:8000/v1', 'http://127.0.0.1:8001/v1'], "
                         "api_model='Qwen/Qwen-AgentWorld-35B-A3B').")
    return RemoteOptions([base_url] if isinstance(base_url, str) else list(base_url), api_model,
                         api_key_env=api_key_env)
