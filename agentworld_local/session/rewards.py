"""What a turn earned: one reward hook that every face shares.

A session may carry a reward hook (`NewSession.reward`, `make(..., reward=...)`, `awl serve
--reward`, `awl run --agent ... --reward`). After each turn the session calls it with the
episode so far (`EpisodeSoFar`), writes what it gave to the trajectory (a `reward` line beside
the turn: value, source, the verdict when there is one) and says it (`Rewarded`). Without a
hook there is no reward line and faces report 0.0.

A hook is any callable `hook(episode) -> float | Reward`:
- a Python function (`make(..., reward=fn)`, or `"package.module:function"` where a face takes
  text: the CLI, `awl serve --reward`);
- the built-in task judge, `"judge:MODEL@URL"` (session/task_judge.py): at the episode's end it
  asks an OpenAI-compatible model whether the episode achieved its task.

A hook that raises fails the step (the turn itself is saved); a reward that is not a finite
number is refused the same way, so a broken reward never trains an agent on silent zeros.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from agentworld_local.errors import AwlError, InputError
from agentworld_local.trajectory.schema import TurnRecord

JUDGE_PREFIX = "judge:"


@dataclass(frozen=True)
class EpisodeSoFar:
    """What a reward hook sees after a turn."""

    domain: str
    task: str
    initial_state: str
    #: The branch so far, the turn just finished last.
    turns: tuple[TurnRecord, ...]
    #: The last action ended the task in the domain's own terms (domains/endings.py).
    terminated: bool
    #: The face ends the episode after this turn (its step limit: Gymnasium's truncation).
    final: bool = False

    @property
    def last(self) -> TurnRecord:
        return self.turns[-1]

    @property
    def ended(self) -> bool:
        return self.terminated or self.final


@dataclass(frozen=True)
class Reward:
    """A reward given for one turn: its value, what gave it, and a judge's verdict."""

    value: float
    source: str
    verdict: dict[str, Any] | None = None


class RewardHook(Protocol):
    #: What the trajectory records as the reward's source ("python:pkg.mod.fn", "judge:MODEL@URL").
    name: str

    def __call__(self, episode: EpisodeSoFar) -> float | Reward: ...


class PythonReward:
    """A reward function of the user's, named in the trajectory by where it lives."""

    def __init__(self, function: Callable[[EpisodeSoFar], Any]) -> None:
        self.function = function
        module = getattr(function, "__module__", None) or "?"
        self.name = f"python:{module}.{getattr(function, '__qualname__', type(function).__name__)}"

    def __call__(self, episode: EpisodeSoFar) -> float | Reward:
        return self.function(episode)


def reward_hook(spec: Any) -> RewardHook | None:
    """The hook a face was given: None (no reward), a callable, `"package.module:function"`,
    or `"judge:MODEL@URL"`. A mistake is an InputError that says what is accepted."""
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in ("", "none", "0")):
        return None
    if callable(spec):
        return spec if isinstance(getattr(spec, "name", None), str) else PythonReward(spec)
    if not isinstance(spec, str):
        raise InputError(f"A reward is a function or text, not {type(spec).__name__}.", _ACCEPTED)
    text = spec.strip()
    if text.startswith(JUDGE_PREFIX):
        from agentworld_local.session.task_judge import TaskJudge

        return TaskJudge.from_spec(text[len(JUDGE_PREFIX):])
    module, _, name = text.partition(":")
    if not module or not name:
        raise InputError(f"Unknown reward `{text}`.", _ACCEPTED)
    try:
        function = getattr(importlib.import_module(module), name)
    except ImportError as error:
        raise InputError(f"Cannot import the reward's module `{module}` ({error}).",
                         "Check the name, and that the module is on the Python path (PYTHONPATH).") from None
    except AttributeError:
        raise InputError(f"The module `{module}` has no `{name}`.", "Give `package.module:function`.") from None
    if not callable(function):
        raise InputError(f"`{text}` is not a function.", "Give `package.module:function`.")
    return PythonReward(function)


def give_reward(hook: RewardHook, episode: EpisodeSoFar) -> Reward:
    """The hook's reward for the turn just finished, checked (see the module's doc)."""
    turn = len(episode.turns)
    try:
        given = hook(episode)
    except AwlError:
        raise
    except Exception as error:
        raise AwlError(f"The reward {hook.name} failed on turn {turn}: {type(error).__name__}: {error}",
                       "The turn is saved; fix the reward function and run the step again (or undo it).") from error
    reward = given if isinstance(given, Reward) else Reward(given, hook.name)
    value = reward.value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        what = f"{type(value).__name__} {value!r}" if not isinstance(value, float) else repr(value)
        raise AwlError(f"The reward {hook.name} gave {what} on turn {turn}, not a finite number.",
                       "Return a float (or a Reward); the turn is saved.")
    return Reward(float(value), reward.source, reward.verdict)


_ACCEPTED = ("Give a Python function (episode -> float), `package.module:function`, or `judge:MODEL@URL` "
             "(an OpenAI-compatible model that judges whether the task was achieved).")
