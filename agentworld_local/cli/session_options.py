"""The options that set up a new session, said once for `awl run` and `awl play` (the help
texts live in defaults.py, which every face reads)."""

from __future__ import annotations

import typer

from agentworld_local.defaults import (
    CONTROL_HELP,
    CTX_HELP,
    DEFAULT_MAX_TOKENS,
    DEFAULT_REWARD_TIMEOUT_S,
    DEFAULT_SEED,
    DEFAULT_TEMPERATURE,
    DOMAIN_HELP,
    GPU_LAYERS_HELP,
    MAX_TOKENS_HELP,
    PROMPTS_HELP,
    REWARD_TIMEOUT_HELP,
    SCENARIO_HELP,
    SEED_HELP,
    TASK_HELP,
    TEMPERATURE_HELP,
    THINK_HELP,
    THREADS_HELP,
)

DOMAIN = typer.Option(None, "--domain", "-d", help=DOMAIN_HELP, show_default=False)
SCENARIO = typer.Option(None, "--scenario", "-s", help=SCENARIO_HELP, show_default=False)
TASK = typer.Option(None, "--task", help=TASK_HELP, show_default=False)
CONTROL = typer.Option(None, "--control", "-c", metavar="<str>", help=CONTROL_HELP, show_default=False)
PROMPTS = typer.Option(None, "--prompts", help=PROMPTS_HELP, show_default=False)
THINK = typer.Option(None, "--think", help=THINK_HELP, show_default=False)
SEED = typer.Option(DEFAULT_SEED, "--seed", help=SEED_HELP)
TEMPERATURE = typer.Option(DEFAULT_TEMPERATURE, "--temperature", help=TEMPERATURE_HELP)
MAX_TOKENS = typer.Option(DEFAULT_MAX_TOKENS, "--max-tokens", help=MAX_TOKENS_HELP)
CTX = typer.Option(None, "--ctx", help=CTX_HELP, show_default=False)
GPU_LAYERS = typer.Option("auto", "--gpu-layers", help=GPU_LAYERS_HELP)
THREADS = typer.Option(None, "--threads", help=THREADS_HELP, show_default=False)
REWARD_TIMEOUT = typer.Option(DEFAULT_REWARD_TIMEOUT_S, "--reward-timeout", help=REWARD_TIMEOUT_HELP)
#: One line: what joining a shared world does, and an example (worlds/, docs/worlds.md).
SHARED_WORLD_HELP = ("Join the shared world NAME (made on first use): the same actions meet the same stored "
                     "observations in every session that joins it, e.g. `--shared-world grpo-1` "
                     "(`awl worlds list` shows them).")
SHARED_WORLD = typer.Option(None, "--shared-world", metavar="NAME", help=SHARED_WORLD_HELP, show_default=False)


def check_reward_timeout(seconds: float) -> float:
    """A time limit the runner can keep: more than 0 seconds."""
    from agentworld_local.errors import InputError

    if not seconds > 0:  # NaN too
        raise InputError(f"--reward-timeout must be more than 0 seconds, not {seconds:g}.", "E.g. `--reward-timeout 300`.")
    return seconds
