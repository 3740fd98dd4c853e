"""A reward hook run as a session's own work: off the model, under a time limit, stoppable.

The hook is the user's code (or a judge model far away): it may be slow, hang, raise anything
or exit. It runs on a thread of its own while the turn's command waits for its answer, its
time limit, or a cancel, whichever comes first. A hook that does not answer in time, or whose
turn is cancelled, is left behind (Python cannot stop a thread): its late answer is dropped,
and the session goes on at once. `give_reward` turns whatever the hook does into a Reward or
one AwlError that names it and the turn.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from agentworld_local.errors import AwlError, Cancelled
from agentworld_local.session.rewards import (
    EpisodeSoFar,
    Reward,
    RewardHook,
    give_reward,
)
from agentworld_local.session.runner.mailbox import CANCELLED_BY


def reward_in_time(hook: RewardHook, episode: EpisodeSoFar, *, limit_s: float | None, wake: threading.Event,
                   stopped: Callable[[], str] | None = None) -> Reward:
    """The hook's checked reward for the turn just saved. `wake` is set by a cancel (and here,
    by the hook's answer); `stopped()` says who cancelled ("client", "closing"; "" if no one):
    the Cancelled raised then carries it as `by`."""
    answer: list[Any] = []
    done = threading.Event()

    def ask() -> None:
        try:
            answer.append(give_reward(hook, episode))
        except BaseException as error:  # noqa: BLE001 - give_reward names the hook; nothing may kill this thread
            answer.append(error)
        finally:
            done.set()
            wake.set()

    threading.Thread(target=ask, name="awl-reward", daemon=True).start()
    wake.wait(limit_s)
    turn = len(episode.turns)
    if not done.is_set():
        by = stopped() if stopped is not None else ""
        if by:
            raise Cancelled(f"The reward {hook.name} of turn {turn} was stopped: {CANCELLED_BY.get(by, by)}.",
                            "The turn is saved without a reward.", by=by)
        raise AwlError(f"The reward {hook.name} did not answer within {limit_s:g} s on turn {turn}.",
                       "The turn is saved without a reward; make the hook faster, or give it longer "
                       "(--reward-timeout, reward_timeout=).")
    result = answer[0]
    if isinstance(result, BaseException):
        if isinstance(result, AwlError):
            raise result
        raise AwlError(f"The reward {hook.name} failed on turn {turn}: {type(result).__name__}: {result}",
                       "The turn is saved; fix the reward function.")
    return result
