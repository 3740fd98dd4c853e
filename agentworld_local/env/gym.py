"""The Gymnasium adapter (the `gym` extra): every environment id registered with Gymnasium.

    import gymnasium, agentworld_local.env.gym  # registers agentworld/Terminal-v0 and the rest
    env = gymnasium.make("agentworld/Terminal-v0", model="scripted:answers.json")

or, with no import of ours, Gymnasium's own `module:id` form:
`gymnasium.make("agentworld_local.env.gym:agentworld/Terminal-v0", model=...)`. Gymnasium 1.x
reads no entry points, so importing this module is what registers the ids.

The one module that imports gymnasium (with gym_vector.py). The env is SimulatedEnv
(env/simulated.py) with Gymnasium's base class and spaces; the ids are registered as
nondeterministic, because info carries timings and each episode's file, and a server's
sampling may ignore the seed. Each id has a step limit (MAX_EPISODE_STEPS) that Gymnasium's
TimeLimit applies: `truncated` is that limit, as everywhere in Gymnasium, and the step it cuts
reaches the session as final (a reward that judges an episode's end is asked then); an answer
cut at its token limit is `info["cut_short"]`. `info` carries the world model's thinking, token
counts and file paths only with `make(..., reveal_simulator=True)` (env/simulated.py). A shared
world (`make(..., shared_world=NAME)`, or `reset(options={"shared_world": NAME})`) gives envs that
reset with the same seed the same observations for the same actions. See docs/gym.md.
"""

from __future__ import annotations

import atexit
import contextlib
import inspect
import multiprocessing
import os
import shutil
import string
import tempfile
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.error import UnsupportedMode
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory
from gymnasium.wrappers import TimeLimit

from agentworld_local.defaults import DEFAULT_EPISODE_STEPS
from agentworld_local.domains.syntax import MAX_ACTION_CHARS
from agentworld_local.env.factory import SERVER_OPTIONS, make
from agentworld_local.env.ids import env_ids
from agentworld_local.env.simulated import ENV_OPTIONS, SPEC_OPTIONS
from agentworld_local.errors import refuse_unknown
from agentworld_local.paths import sessions_dir
from agentworld_local.scenarios import scenario_by_name

#: An observation is at most as long as the longest text awl takes in (a scenario's starting
#: state, an action); a predicted one is far shorter (max_tokens tokens).
MAX_OBSERVATION_CHARS = MAX_ACTION_CHARS
#: What a random agent types when the action space is sampled (check_env does).
SAMPLE_CHARS = string.ascii_letters + string.digits + " -./"
#: Each id's step limit unless `make(..., max_episode_steps=N)` says otherwise: the CLI agent's.
MAX_EPISODE_STEPS = DEFAULT_EPISODE_STEPS
#: Each sub-env's room in AsyncVectorEnv's shared memory, in UTF-8 bytes: a default answer
#: (4,096 tokens) fits; a longer observation is handed over in a file instead.
SHARED_TEXT_BYTES = 64 * 1024
#: What `gymnasium.make` takes itself (and the env's own `model` and `render_mode`): a
#: misspelling of one reaches the env as an unknown keyword, and is told the name it meant.
GYMNASIUM_KEYWORDS = ("model", "render_mode", "max_episode_steps", "disable_env_checker")
#: How far up the call stack a step looks for its TimeLimit (make's own wrappers put it 2-4
#: frames up; a user's wrappers in between add one or two each).
_WRAPPER_FRAMES = 32


class AnyText(spaces.Text):
    """Any Unicode text of `min_length`..`max_length` characters: screens, pages and tool
    results hold any character, so membership checks the length only. Samples are short
    strings of SAMPLE_CHARS (at most `sample_length`), what a random agent would type.
    AsyncVectorEnv shares it in its own form (SharedText below), not as Text's index vector."""

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


# -- AnyText in AsyncVectorEnv's shared memory ------------------------------------------------
# Gymnasium's own form for Text is an index per character into the charset (a KeyError for any
# other character), max_length of them (16 MB per sub-env here), and AsyncVectorEnv reads it
# once, so every later observation would be the first. Gymnasium dispatches these three
# functions on the space's type and asks custom spaces to register their own: these are ours.

@dataclass(frozen=True)
class SharedText:
    """For sub-env i: `lengths[i]` bytes of UTF-8 in its slot of `data`, or -1 when the text
    was longer than a slot and lies in the file `<spill>/<i>.txt`."""

    lengths: Any  # multiprocessing Array of int64, one per sub-env
    data: Any  # multiprocessing Array of bytes, `slot` per sub-env
    slot: int
    spill: str  # a private temporary folder, removed with this object in the main process


class SharedTexts(Sequence[str]):
    """The sub-envs' observations as they are in shared memory now (AsyncVectorEnv holds this
    and hands out a copy, a tuple of str, unless made with copy=False)."""

    def __init__(self, shared: SharedText, n: int) -> None:
        self._shared, self._n = shared, n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(self._n)[index])
        i = range(self._n)[index]  # negative indexes, and IndexError past the end
        length = int(self._shared.lengths[i])
        if length < 0:
            data = Path(self._shared.spill, f"{i}.txt").read_bytes()
        else:
            start = i * self._shared.slot
            data = np.frombuffer(self._shared.data.get_obj(), dtype=np.uint8)[start:start + length].tobytes()
        return data.decode("utf-8", "surrogatepass")

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]  # it changes with every step

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


@create_shared_memory.register(AnyText)
def _create_shared_text(space: AnyText, n: int = 1, ctx: Any = multiprocessing) -> SharedText:
    shared = SharedText(ctx.Array("q", n), ctx.Array("B", n * SHARED_TEXT_BYTES), SHARED_TEXT_BYTES,
                        tempfile.mkdtemp(prefix="awl-gym-shared-"))
    # A forked worker's copy is never collected (it exits with os._exit), a spawned one has no finalizer.
    weakref.finalize(shared, shutil.rmtree, shared.spill, ignore_errors=True)
    return shared


@read_from_shared_memory.register(AnyText)
def _read_shared_text(space: AnyText, shared_memory: SharedText, n: int = 1) -> SharedTexts:
    return SharedTexts(shared_memory, n)


@write_to_shared_memory.register(AnyText)
def _write_shared_text(space: AnyText, index: int, values: str, shared_memory: SharedText) -> None:
    shared = shared_memory
    encoded = values.encode("utf-8", "surrogatepass")  # any str goes back as it came
    if len(encoded) <= shared.slot:
        start = index * shared.slot
        slots = np.frombuffer(shared.data.get_obj(), dtype=np.uint8)
        slots[start:start + len(encoded)] = np.frombuffer(encoded, dtype=np.uint8)
        shared.lengths[index] = len(encoded)
        return
    path = os.path.join(shared.spill, f"{index}.txt")
    with open(f"{path}.part", "wb") as handle:
        handle.write(encoded)
    os.replace(f"{path}.part", path)  # a reader never sees half a file
    shared.lengths[index] = -1


# -- the env ------------------------------------------------------------------------------------

#: The sessions folder -> (the process that chose it, this program's run folder).
_run_dirs: dict[Path, tuple[int, Path]] = {}


def run_folder() -> Path:
    """Where this program's episodes go when `make()` names no out_dir, so that they never mix
    with the user's own sessions: `<sessions folder>/gym/<start time>-<pid>/`, one per program.
    A forked worker (AsyncVectorEnv's, on Linux) writes into `worker-<pid>/` inside its
    parent's: processes that reset at the same moment never share a folder."""
    base, pid = sessions_dir(), os.getpid()
    chosen = _run_dirs.get(base)
    if chosen is not None and chosen[0] == pid:
        return chosen[1]
    folder = base / "gym" / f"{datetime.now():%Y%m%d-%H%M%S}-{pid}" if chosen is None else chosen[1] / f"worker-{pid}"
    _run_dirs[base] = (pid, folder)
    # An env that saved nothing (AsyncVectorEnv's probe in the parent, one never stepped) leaves
    # no folder; at exit, when no env of this program can still write into it.
    atexit.register(_remove_if_empty, folder)
    return folder


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()


class AgentWorldEnv(gymnasium.Env):
    """A simulated world as a Gymnasium env: text actions in, text observations out."""

    # A turn takes a second or more; video recorders need some number.
    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, env_id: str = "agentworld/Terminal-v0", model: str | None = None,
                 render_mode: str | None = None, **options: Any) -> None:
        if render_mode not in (None, *self.metadata["render_modes"]):
            # gymnasium.make has warned already; this is Gymnasium's error for the case.
            raise UnsupportedMode(f"render_mode={render_mode!r} is not supported by {env_id}: use 'ansi' "
                                  "(the current observation as text) or none.")
        # Every keyword that is not an option, each with the name it was likely meant as, before
        # anything is made (a folder, a model load).
        refuse_unknown(options, (*SPEC_OPTIONS, *ENV_OPTIONS, *SERVER_OPTIONS), env_id, also=GYMNASIUM_KEYWORDS,
                       shown="model, render_mode, max_episode_steps, disable_env_checker, ")
        self.render_mode = render_mode
        if options.get("out_dir") is None:
            options["out_dir"] = run_folder()
        self.world = make(env_id, model, **options)
        self.action_space = AnyText(MAX_ACTION_CHARS, min_length=1)
        self.observation_space = AnyText(MAX_OBSERVATION_CHARS)

    @property
    def run_dir(self) -> Path:
        """The folder the episodes' files go to (also `info["run_dir"]` after a reset, with reveal_simulator=True)."""
        return self.world.out_dir

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is None:  # the episode's sampling seed follows Gymnasium's generator
            seed = int(self.np_random.integers(2**31))
        if isinstance(options, dict) and options.get("scenario") is not None:  # by name only, as on every face
            options = {**options, "scenario": scenario_by_name(options["scenario"]).name}
        observation, info = self.world.reset(seed=seed, options=options)
        # A folder of the host is the simulator's side: only with reveal_simulator=True (env/simulated.py).
        return observation, {**info, "run_dir": str(self.run_dir)} if self.world.reveal_simulator else info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        # truncated is the step limit's (TimeLimit's); a cut answer is info["cut_short"]. The
        # session still hears of the limit (final=True) so an episode-end reward judges that step.
        observation, reward, terminated, truncated, info = self.world.step(action, final=self._cut_by_time_limit())
        return observation, reward, terminated, truncated, info

    def _cut_by_time_limit(self) -> bool:
        """The step about to run is the one a TimeLimit around this env truncates. The limit
        lives in the wrapper alone (gymnasium.make leaves the env's own spec without it, and a
        wrapper registered with the ids would make make_vec refuse the vector entry point), so
        the TimeLimit whose step called this one is found on the call stack, a few frames up;
        its own counter then says, exactly as it will count."""
        frame = inspect.currentframe()
        try:
            for _ in range(_WRAPPER_FRAMES):
                frame = frame.f_back if frame is not None else None
                if frame is None:
                    return False
                wrapper = frame.f_locals.get("self")
                if isinstance(wrapper, TimeLimit) and wrapper.unwrapped is self:
                    limit = getattr(wrapper, "_max_episode_steps", None)
                    elapsed = getattr(wrapper, "_elapsed_steps", None)  # None before its first reset
                    if isinstance(limit, int) and isinstance(elapsed, int) and elapsed + 1 >= limit:
                        return True
            return False
        finally:
            del frame  # a frame held here would keep every caller's locals alive

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
                               nondeterministic=True, max_episode_steps=MAX_EPISODE_STEPS,
                               # make_vec: the sub-envs are sessions of `awl serve` (base_url=...)
                               vector_entry_point="agentworld_local.env.gym_vector:AgentWorldVectorEnv")
        ids.append(entry.id)
    return ids


register_envs()
