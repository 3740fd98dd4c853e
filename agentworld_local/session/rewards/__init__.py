"""What a turn earned: one reward hook that every face shares.

A session may carry a reward hook (`NewSession.reward`, `make(..., reward=...)`, `awl serve
--reward`, `awl run --agent ... --reward`). After each turn the session calls it with the
episode so far (`EpisodeSoFar`), writes what it gave to the trajectory (a `reward` line beside
the turn: value, source, the verdict when there is one) and says it (`Rewarded`). Without a
hook there is no reward line and faces report 0.0.

A hook is any callable `hook(episode) -> float | Reward`:
- a Python function (`make(..., reward=fn)`, or `"package.module:function"` where a face takes
  text: the CLI, `awl serve --reward`);
- the built-in task judge, `"judge:MODEL@URL"` (session/rewards/task_judge.py): at the episode's end it
  asks an OpenAI-compatible model whether the episode achieved its task.

A hook that raises (anything: SystemExit too) fails the step with one AwlError that names the
hook and the turn (the turn itself is saved); a reward that is not a finite number, or a verdict
that is not JSON, is refused the same way, so a broken reward never trains an agent on silent
zeros, nor ends the process that serves it.
"""

from __future__ import annotations

import importlib
import json
import math
import numbers
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
        self.name = f"python:{_where(function)}"

    def __call__(self, episode: EpisodeSoFar) -> float | Reward:
        return self.function(episode)


def reward_hook(spec: Any) -> RewardHook | None:
    """The hook a face was given: None (no reward), a callable, `"package.module:function"`,
    or `"judge:MODEL@URL"`; a hook made already comes back as it is. A mistake, or a module
    that fails or exits as it is imported, is an InputError that says what is accepted."""
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in ("", "none", "0")):
        return None
    if callable(spec):
        # A hook names itself (PythonReward, TaskJudge); any other callable is the user's function.
        return spec if isinstance(_attribute(spec, "name"), str) else PythonReward(spec)
    if not isinstance(spec, str):
        raise InputError(f"A reward is a function or text, not {type(spec).__name__}.", _ACCEPTED)
    text = spec.strip()
    if text.startswith(JUDGE_PREFIX):
        from agentworld_local.session.rewards.task_judge import TaskJudge

        return TaskJudge.from_spec(text[len(JUDGE_PREFIX):])
    module, _, name = text.partition(":")
    if not module or not name:
        raise InputError(f"Unknown reward `{_flat(text)}`.", _ACCEPTED)
    return PythonReward(_imported(text, module.strip(), name.strip()))


def _imported(text: str, module: str, name: str) -> Callable[[EpisodeSoFar], Any]:
    """`module`'s `name`. Importing runs the user's code: whatever it raises, SystemExit and
    KeyboardInterrupt included, is one line here, never a traceback or the module's exit code."""
    try:
        loaded = importlib.import_module(module)
    except BaseException as error:  # noqa: BLE001 - the user's module-level code may do anything
        missing = isinstance(error, ModuleNotFoundError) and error.name is not None and \
            (module == error.name or module.startswith(f"{error.name}."))
        hint = ("Check the name, and that the module is on the Python path (PYTHONPATH)." if missing else
                f"Fix the module so that it imports without raising or exiting "
                f"(`python -c 'import {_flat(module)}'` shows the traceback).")
        raise InputError(f"Cannot import the reward `{_flat(text)}`: importing `{_flat(module)}` raised "
                         f"{_described(error)}.", hint) from None
    try:
        function = getattr(loaded, name)
    except AttributeError:
        raise InputError(f"The module `{_flat(module)}` has no `{_flat(name)}`.",
                         "Give `package.module:function`.") from None
    except BaseException as error:  # noqa: BLE001 - a module's __getattr__ is the user's code too
        raise InputError(f"Cannot read the reward `{_flat(text)}`: `{_flat(module)}.{_flat(name)}` raised "
                         f"{_described(error)}.", "Give `package.module:function`.") from None
    if not callable(function):
        raise InputError(f"`{_flat(text)}` is not a function.", "Give `package.module:function`.")
    return function  # type: ignore[no-any-return]


def give_reward(hook: RewardHook, episode: EpisodeSoFar) -> Reward:
    """The hook's reward for the turn just finished, checked (see the module's doc): whatever
    the hook raises or returns, the caller gets a Reward or one AwlError that names the hook
    and the turn, never the hook's own exception (a SystemExit would end the process)."""
    turn = len(episode.turns)
    name = _hook_name(hook)
    try:
        given = hook(episode)
        if isinstance(given, Reward):
            value, source, verdict = given.value, given.source, given.verdict
        else:
            value, source, verdict = given, name, None
    except AwlError as error:  # its message stays; the wrap says whose it was
        message, hint = _attribute(error, "message"), _attribute(error, "hint")
        said = _flat(message) if isinstance(message, str) and message.strip() else _described(error)
        hint = _flat(hint) if isinstance(hint, str) and hint.strip() else _FIX_HOOK
        raise AwlError(f"The reward {_flat(name)} failed on turn {turn}: {said}", hint) from error
    except BaseException as error:  # noqa: BLE001 - the user's code: SystemExit must not end a server
        raise AwlError(f"The reward {_flat(name)} failed on turn {turn}: {_described(error)}", _FIX_HOOK) from error
    number = _finite(value)
    if number is None:
        raise AwlError(f"The reward {_flat(name)} gave {_shown(value)} on turn {turn}, not a finite number.",
                       "Return a float (or a Reward); the turn is saved.")
    if not isinstance(source, str):
        raise AwlError(f"The reward {_flat(name)} gave a Reward whose source is {type(source).__name__} on turn "
                       f"{turn}, not text.", "Give Reward(value, source) a str source; the turn is saved.")
    return Reward(number, source, _verdict(verdict, name, turn))


_FIX_HOOK = "The turn is saved; fix the reward function and run the step again (or undo it)."
#: How much of a user's value or error text a one-line message quotes.
_QUOTED_CHARS = 300


def _finite(value: Any) -> float | None:
    """`value` as a finite float, or None: a bool is not a number here, and an int too large
    for a float (math.isfinite raises on it) is refused like nan."""
    try:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return None
        number = float(value)
    except BaseException:  # noqa: BLE001 - OverflowError, or a number type's own __float__
        return None
    return number if isinstance(number, float) and math.isfinite(number) else None


def _verdict(verdict: Any, name: str, turn: int) -> dict[str, Any] | None:
    """A copy of the verdict as the trajectory keeps it (JSON, no nan): what the hook still
    holds and changes later never reaches the file or the caller."""
    if verdict is None:
        return None
    if not isinstance(verdict, dict):
        problem = f"{type(verdict).__name__}, not a dict"
    else:
        try:
            return json.loads(json.dumps(verdict, allow_nan=False))  # type: ignore[no-any-return]
        except BaseException as error:  # noqa: BLE001 - a set, nan, an object, a cycle, a dict subclass's own code
            problem = f"not JSON ({_described(error)})"
    raise AwlError(f"The reward {_flat(name)} gave a verdict on turn {turn} that is {problem}.",
                   "Give Reward(..., verdict=) a dict of text, finite numbers, lists and dicts; the turn is saved.")


def _hook_name(hook: Any) -> str:
    name = _attribute(hook, "name")
    return name if isinstance(name, str) else f"python:{_where(hook)}"


def _where(function: Any) -> str:
    """`module.qualname` of a function, or of a callable object's class."""
    module = _attribute(function, "__module__")
    qualname = _attribute(function, "__qualname__")
    if not isinstance(qualname, str):  # an instance of a class with __call__
        module, qualname = _attribute(type(function), "__module__"), type(function).__qualname__
    return f"{module if isinstance(module, str) and module else '?'}.{qualname}"


def _attribute(thing: Any, name: str) -> Any:
    """`thing.name`, or None however reading it fails (a property of the user's may raise)."""
    try:
        return getattr(thing, name, None)
    except BaseException:  # noqa: BLE001
        return None


def _described(error: BaseException) -> str:
    """`Type: text` of an exception on one line (`SystemExit: 7`), even when str() fails."""
    try:
        text = str(error)
    except BaseException:  # noqa: BLE001
        text = ""
    kind = type(error).__name__
    return f"{kind}: {_flat(text)}" if text.strip() else kind


def _shown(value: Any) -> str:
    """A returned value for a message: `str '1.0'`, `nan`, `int 1000…` (cut), on one line."""
    try:
        text = repr(value)
    except BaseException:  # noqa: BLE001
        text = "?"
    return _flat(text) if isinstance(value, float) else f"{type(value).__name__} {_flat(text)}"


def _flat(text: Any) -> str:
    """User text in a one-line message: whitespace runs are one space, long text is cut."""
    try:
        flat = " ".join((text if isinstance(text, str) else str(text)).split())
    except BaseException:  # noqa: BLE001 - a message object of the user's
        flat = "?"
    return flat if len(flat) <= _QUOTED_CHARS else f"{flat[:_QUOTED_CHARS]}…"


_ACCEPTED = ("Give a Python function (episode -> float), `package.module:function`, or `judge:MODEL@URL` "
             "(an OpenAI-compatible model that judges whether the task was achieved).")
