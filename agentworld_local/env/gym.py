"""The Gymnasium adapter (the `gym` extra): every environment id registered with Gymnasium.

    import gymnasium, agentworld_local.env.gym  # registers agentworld/Terminal-v0 and the rest
    env = gymnasium.make("agentworld/Terminal-v0", model="scripted:answers.json")

or, with no import of ours, Gymnasium's own `module:id` form:
`gymnasium.make("agentworld_local.env.gym:agentworld/Terminal-v0", model=...)`. Gymnasium 1.x
reads no entry points, so importing this module is what registers the ids.

The one module that imports gymnasium. The env is SimulatedEnv (env/simulated.py) with
Gymnasium's base class and spaces; the ids are registered as nondeterministic, because info
carries timings and each episode's file, and a server's sampling may ignore the seed.
"""

from __future__ import annotations

import string
from typing import Any

import gymnasium
from gymnasium import spaces

from agentworld_local.domains.syntax import MAX_ACTION_CHARS
from agentworld_local.env.factory import make
from agentworld_local.env.ids import env_ids
from agentworld_local.errors import InputError

#: An observation is at most as long as the longest text awl takes in (a scenario's starting
#: state, an action); a predicted one is far shorter (max_tokens tokens).
MAX_OBSERVATION_CHARS = MAX_ACTION_CHARS
#: What a random agent types when the action space is sampled (check_env does).
SAMPLE_CHARS = string.ascii_letters + string.digits + " -./"


class AnyText(spaces.Text):
    """Any Unicode text of `min_length`..`max_length` characters: screens, pages and tool
    results hold any character, so membership checks the length only. Samples are short
    strings of SAMPLE_CHARS (at most `sample_length`), what a random agent would type."""

    def __init__(self, max_length: int, *, min_length: int = 0, sample_length: int = 24, seed: Any = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=SAMPLE_CHARS, seed=seed)
        self.sample_length = max(min(sample_length, max_length), min_length)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if mask is None and probability is None:
            length = int(self.np_random.integers(max(self.min_length, 1), self.sample_length + 1))
            mask = (length, None)
        return super().sample(mask=mask, probability=probability)

    def __repr__(self) -> str:
        return f"AnyText({self.min_length}, {self.max_length})"


class AgentWorldEnv(gymnasium.Env):
    """A simulated world as a Gymnasium env: text actions in, text observations out."""

    # A turn takes a second or more; video recorders need some number.
    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, env_id: str = "agentworld/Terminal-v0", model: str | None = None,
                 render_mode: str | None = None, **options: Any) -> None:
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise InputError(f"Unknown render_mode `{render_mode}`.", "Use render_mode='ansi' (the current observation as text) or none.")
        self.render_mode = render_mode
        self.world = make(env_id, model, **options)
        self.action_space = AnyText(MAX_ACTION_CHARS, min_length=1)
        self.observation_space = AnyText(MAX_OBSERVATION_CHARS)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is None:  # the episode's sampling seed follows Gymnasium's generator
            seed = int(self.np_random.integers(2**31))
        return self.world.reset(seed=seed, options=options)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return self.world.step(action)

    def render(self) -> str | None:
        return self.world.observation if self.render_mode == "ansi" else None

    def close(self) -> None:
        self.world.close()


def register_envs() -> list[str]:
    """Register every id (env/ids.py) with Gymnasium; registering twice does nothing."""
    ids = []
    for entry in env_ids():
        if entry.id not in gymnasium.registry:
            gymnasium.register(id=entry.id, entry_point=f"{__name__}:AgentWorldEnv", kwargs={"env_id": entry.id},
                               nondeterministic=True,
                               # make_vec: the sub-envs are sessions of `awl serve` (base_url=...)
                               vector_entry_point="agentworld_local.env.gym_vector:AgentWorldVectorEnv")
        ids.append(entry.id)
    return ids


register_envs()
