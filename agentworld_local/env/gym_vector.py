"""A Gymnasium vector env over `awl serve`: each sub-env is a session on the server.

    env = gymnasium.make_vec("agentworld/Terminal-v0", num_envs=8, base_url="http://127.0.0.1:8760")

(`import agentworld_local.env.gym` registers the ids, each with this vector entry point.) The
steps of all sub-envs go to the server at once, so it serves them together over its one model;
observations and actions are text (a tuple of strings per batch). Autoreset is Gymnasium's
default, the next step: a sub-env that ended comes back reset (a new session, a new file) on
the step after, its action ignored. Reward is always 0.0, as in the single env (env/simulated.py).
`truncated` is the step limit (`max_episode_steps`, which make_vec passes from the id's spec);
an answer cut at its token limit is `infos["cut_short"]`. `infos` carry the session ids, file
paths and the world model's thinking only with `reveal_simulator=True` (thinking also needs the
server's `--reveal-simulator`; defaults.REVEAL_SIMULATOR_HELP). A step or reset waits for every
sub-env, as Gymnasium's AsyncVectorEnv does, before it raises what failed (docs/gym.md).
`shared_world=NAME` (or a reset's `options`) puts every sub-env's session in that shared world:
sub-envs reset with the same seed (`seed=[s] * num_envs`) meet the same observations for the
same actions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from agentworld_local.concurrency import Done, map_at_once
from agentworld_local.domains.syntax import MAX_ACTION_CHARS
from agentworld_local.env.client import ServerClient
from agentworld_local.env.gym import MAX_OBSERVATION_CHARS, AnyText
from agentworld_local.env.ids import resolve_env
from agentworld_local.errors import ActionError, AwlError, InputError, refuse_unknown
from agentworld_local.worlds.names import check_world_name

#: What each sub-env's session may set (the server's `POST /sessions` fields).
SESSION_OPTIONS = ("task", "initial_state", "controls", "think", "temperature", "max_tokens", "shared_world")
#: The vector env's own keywords and `gymnasium.make_vec`'s (a misspelling of one is told its name).
VECTOR_KEYWORDS = ("num_envs", "base_url", "token", "timeout", "max_episode_steps", "reveal_simulator",
                   "vectorization_mode", "vector_kwargs", "wrappers")
_SEED_RANGE = 2**31


class AgentWorldVectorEnv(VectorEnv):
    """`num_envs` sessions of one world on a server; see the module's doc."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, env_id: str = "agentworld/Terminal-v0", *, base_url: str | None = None,
                 token: str | None = None, timeout: float = 600.0, max_episode_steps: int | None = None,
                 reveal_simulator: bool = False, **options: Any) -> None:
        """`max_episode_steps`: a sub-env's episode is truncated after that many steps (None or
        -1, as in gymnasium.make: no limit; make_vec passes the id's own). `reveal_simulator`:
        infos also carry each session's id and file and, from a server started with
        --reveal-simulator, the world model's thinking (see the module's doc)."""
        # First, so that `base_ur=...` is told `base_url`, not that base_url is missing.
        refuse_unknown(options, SESSION_OPTIONS, "the vector env", also=VECTOR_KEYWORDS,
                       shown=f"{', '.join(VECTOR_KEYWORDS)}, ")
        if not base_url:
            raise InputError("The vector env runs its sub-envs as sessions of `awl serve`: it needs base_url.",
                             "Start `awl serve --model ...` and pass base_url='http://127.0.0.1:8760'.")
        if num_envs < 1:
            raise InputError(f"num_envs is {num_envs}.", "Give 1 or more.")
        if max_episode_steps == -1:
            max_episode_steps = None
        if max_episode_steps is not None and (not isinstance(max_episode_steps, int) or max_episode_steps < 1):
            raise InputError(f"max_episode_steps is {max_episode_steps!r}.",
                             "Give 1 or more, or -1 (or None) for no limit.")
        _check_world(options)  # a bad name is said before any session opens
        chosen = resolve_env(env_id)
        self.env_id = env_id
        self._world = {"scenario": chosen.scenario} if chosen.scenario else {"domain": chosen.domain}
        self._options = options
        self.num_envs = num_envs
        self.max_episode_steps = max_episode_steps
        self.reveal_simulator = bool(reveal_simulator)
        self.single_action_space = AnyText(MAX_ACTION_CHARS, min_length=1)
        self.single_observation_space = AnyText(MAX_OBSERVATION_CHARS)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self._client = ServerClient(base_url, token=token, timeout=timeout, connections=num_envs + 4)
        self._sessions: list[str | None] = [None] * num_envs
        self._autoreset = np.zeros(num_envs, dtype=np.bool_)
        self._steps = np.zeros(num_envs, dtype=np.int64)  # each sub-env's steps this episode

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[tuple[str, ...], dict[str, Any]]:
        """Close every sub-env's session (saved) and open new ones. `seed`: an int (sub-env i
        gets seed + i) or one per sub-env; `options`: session options for this episode."""
        super().reset(seed=seed if isinstance(seed, int) else None)
        seeds = [seed + index for index in range(self.num_envs)] if isinstance(seed, int) else list(seed or [None] * self.num_envs)
        if len(seeds) != self.num_envs:
            raise InputError(f"reset got {len(seeds)} seeds for {self.num_envs} sub-envs.", "Give one per sub-env, or one int.")
        episode = dict(options or {})
        unknown = sorted(set(episode) - set(SESSION_OPTIONS))
        if unknown:
            raise InputError(f"Unknown reset option `{unknown[0]}`.", f"Accepted: {', '.join(SESSION_OPTIONS)}.")
        _check_world(episode)
        opened = self._every(lambda index: self._reset_one(index, seeds[index], episode))
        self._autoreset[:] = False
        infos: dict[str, Any] = {}
        for index, (_, info) in enumerate(opened):
            infos = self._add_info(infos, info, index)
        return tuple(observation for observation, _ in opened), infos

    def step(self, actions: Any) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One turn in every sub-env, sent at once (a sub-env that ended last step is reset instead)."""
        actions = tuple(actions)
        if len(actions) != self.num_envs:
            raise InputError(f"step got {len(actions)} actions for {self.num_envs} sub-envs.", "Give one action per sub-env.")
        results = self._every(lambda index: self._step_one(index, actions[index]))
        infos: dict[str, Any] = {}
        for index, result in enumerate(results):
            infos = self._add_info(infos, result[4], index)
        terminations = np.array([result[2] for result in results], dtype=np.bool_)
        truncations = np.array([result[3] for result in results], dtype=np.bool_)
        self._autoreset = terminations | truncations
        rewards = np.array([result[1] for result in results], dtype=np.float64)  # the server's reward (--reward)
        return tuple(result[0] for result in results), rewards, terminations, truncations, infos

    def close_extras(self, **kwargs: Any) -> None:
        """Close every session (each turn is already saved on the server)."""
        try:
            self._every(self._close_one)
        finally:
            self._client.close()

    @property
    def sessions(self) -> list[str | None]:
        """Each sub-env's session id on the server (its file is `<id>.jsonl` in the server's folder)."""
        return list(self._sessions)

    def _every(self, one: Callable[[int], Any]) -> list[Any]:
        """`one(index)` for every sub-env at once. As in Gymnasium's AsyncVectorEnv, every
        sub-env's call ends before anything is raised; then the error of the first sub-env
        that failed, its message naming every sub-env that did."""
        with map_at_once(one, range(self.num_envs), at_once=self.num_envs, name="awl-vector") as running:
            finished = sorted(running, key=lambda done: done.index)
        failed = [done for done in finished if done.error is not None]
        if failed:
            raise _named(failed, self.num_envs)
        return [done.value for done in finished]

    # -- one sub-env (on a pool thread) ---------------------------------------------------

    def _reset_one(self, index: int, seed: int | None, episode: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self._close_one(index)
        if seed is None:
            seed = int(self.np_random.integers(_SEED_RANGE))
        opened = self._client.create(**self._world, **{**self._options, **episode}, seed=seed)
        self._sessions[index] = opened["id"]
        self._steps[index] = 0
        info: dict[str, Any] = {"turn": 0, "seed": seed}
        if self.reveal_simulator:
            info.update(session=opened["id"], trajectory=opened["file"])
        return opened["observation"], info

    def _step_one(self, index: int, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._autoreset[index]:
            observation, info = self._reset_one(index, None, {})
            return observation, 0.0, False, False, info
        sid = self._sessions[index]
        if sid is None:
            raise InputError("The vector env has no sessions yet.", "Call reset() first.")
        if not isinstance(action, str):
            raise InputError(f"An action is text, not {type(action).__name__}.", "Give one string per sub-env.")
        last = self.max_episode_steps is not None and self._steps[index] + 1 >= self.max_episode_steps
        try:
            done = self._client.step(sid, action, final=last)
        except ActionError as error:  # no turn, but a step (as TimeLimit counts it)
            reason = f"Invalid action: {error.message} {error.hint or ''}".strip()
            invalid = {"invalid_action": reason, **({"session": sid} if self.reveal_simulator else {})}
            return reason, 0.0, False, self._count_step(index), invalid
        info: dict[str, Any] = {"turn": done["turn"], "cut_short": bool(done.get("cut_short"))}
        if self.reveal_simulator:
            info["session"] = sid
            record = done.get("record")  # sent by a server started with --reveal-simulator
            if record is not None:
                info.update(thinking=record.get("thinking") or "", finish=record.get("finish"),
                            parse_method=record.get("parse_method"))
            if done.get("reward_source"):
                info["reward_source"] = done["reward_source"]
            if record is not None and isinstance(record.get("world"), dict):  # a record's extra is at its top
                info["world"] = record["world"]  # where the answer came from: the shared world's side
        return (done["observation"], float(done.get("reward", 0.0)), bool(done["terminated"]), self._count_step(index),
                info)

    def _count_step(self, index: int) -> bool:
        """One more step of sub-env `index`; True when it reached the step limit (truncated)."""
        self._steps[index] += 1
        return self.max_episode_steps is not None and bool(self._steps[index] >= self.max_episode_steps)

    def _close_one(self, index: int) -> None:
        sid, self._sessions[index] = self._sessions[index], None
        if sid is not None:
            try:
                self._client.close_session(sid)
            except InputError:
                pass  # closed already (the server's idle limit): every turn is saved either way


def _check_world(options: dict[str, Any]) -> None:
    """`shared_world` as every face checks it (worlds/names.py): a name, never a path. None: the
    vector env's own (for a reset), else the server's `--shared-world`."""
    if options.get("shared_world") is not None:
        options["shared_world"] = check_world_name(options["shared_world"])
    else:
        options.pop("shared_world", None)


def _named(failed: list[Done[int, Any]], num_envs: int) -> BaseException:
    """The first failed sub-env's error, its message naming every sub-env that failed (an awl
    error keeps its type and hint, so a caller's `except InputError` still holds)."""
    by_text: dict[str, list[int]] = {}
    for done in failed:
        error = done.error
        by_text.setdefault(error.message if isinstance(error, AwlError) else f"{type(error).__name__}: {error}",
                           []).append(done.index)
    said = next(iter(by_text)) if len(by_text) == 1 else "; ".join(
        f"{_which(indexes)}: {message}" for message, indexes in by_text.items())
    text = f"{_which([done.index for done in failed]).capitalize()} of {num_envs} failed: {said}"
    first = failed[0].error
    assert first is not None
    if isinstance(first, AwlError):
        first.message, first.args = text, (text,)
    else:  # a defect keeps its own message and traceback; the note names the sub-envs
        first.add_note(text)
    first.sub_envs = [done.index for done in failed]  # type: ignore[attr-defined]
    return first


def _which(indexes: list[int]) -> str:
    return f"sub-env {indexes[0]}" if len(indexes) == 1 else f"sub-envs {', '.join(map(str, indexes))}"
