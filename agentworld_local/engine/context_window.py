"""What the model keeps seeing when a conversation outgrows the context.

The policy: the system prompt, the first turn (its prompt carries the task and the
initial state) and the most recent turns that fit stay in the model's view; the turns in
between are left out (the trajectory keeps every one). Room is held back for the answer:
the thinking budget plus `max_tokens`, at most a quarter of the context.

A cut drops enough turns that the conversation takes at most half of the prompt room, so
cuts are rare: with the append-only core a cut costs one re-evaluation of the kept
history, and the turns after it are incremental again until the next cut. If even the
system prompt, the first turn and the current turn do not fit, the backend's error says
so (the session cannot go on without a larger context).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentworld_local.engine.types import SamplingConfig, ThinkBudget

#: At most this share of the context is held back for the answer (thinking + observation).
ANSWER_SHARE = 4
#: After a cut the conversation takes at most 1/KEEP_SHARE of the prompt room.
KEEP_SHARE = 2
#: The backends refuse a prompt that comes within this many tokens of the context's end.
SLACK = 8
#: The first turn the model can lose: turn 1 always stays.
FIRST_DROPPABLE = 2


#: The next step when the context is full, after a turn that has earlier turns to fork back to.
LARGER_CTX = "Start again with a larger `--ctx`"


def overflow_hint(messages: list[dict[str, str]], larger: str = LARGER_CTX) -> str:
    """The hint of a "does not fit the context" error: `larger` (a larger context), then, with
    earlier turns in `messages`, a fork at one of them; on turn 1 there is none to go back to,
    so a shorter first turn."""
    if any(message.get("role") == "assistant" for message in messages):
        return f"{larger}, or fork the session at an earlier turn."
    return f"{larger}, or send a shorter action, task or initial state: the first turn alone does not fit."


def answer_room(sampling: SamplingConfig, think: ThinkBudget, n_ctx: int) -> int:
    """Tokens held back for the answer."""
    if sampling.max_tokens_counts_thinking:  # max_tokens already bounds thinking and answer together
        return min(sampling.max_tokens, n_ctx // ANSWER_SHARE)
    thinking = {"off": 0, "budget": think.tokens or 0, "full": n_ctx}[think.mode]
    return min(thinking + sampling.max_tokens, n_ctx // ANSWER_SHARE)


def prompt_room(sampling: SamplingConfig, think: ThinkBudget, n_ctx: int) -> int:
    """The most tokens a turn's prompt may take before older turns are left out."""
    return n_ctx - answer_room(sampling, think, n_ctx) - SLACK


@dataclass(frozen=True)
class Cut:
    """A new window: turns FIRST_DROPPABLE .. kept_from - 1 leave the model's view."""

    kept_from: int
    tokens_before: int
    tokens_after: int


def choose_window(count: Callable[[int], int], kept_from: int, last_turn: int, room: int) -> Cut | None:
    """None when the window that starts at `kept_from` fits in `room`; otherwise the cut.

    `count(k)`: the prompt's tokens when the model sees turn 1 and turns k .. `last_turn`
    (the history) before the current turn. Counts grow with the turns kept, so a binary
    search finds the fewest turns to drop: a handful of counts, once per cut.
    """
    before = count(kept_from)
    if before <= room or kept_from > last_turn:
        return None  # fits, or nothing left to drop (the backend says it does not fit)
    target = room // KEEP_SHARE
    counts: dict[int, int] = {}
    low, high = kept_from + 1, last_turn + 1  # last_turn + 1: only turn 1 stays
    while low < high:
        middle = (low + high) // 2
        counts[middle] = count(middle)
        if counts[middle] <= target:
            high = middle
        else:
            low = middle + 1
    after = counts[low] if low in counts else count(low)
    return Cut(low, before, after)


def omitted_note(kept_from: int, cut: Cut | None, n_ctx: int) -> dict[str, Any] | None:
    """The record's `context` field: which turns the model did not see (a range, so a long
    session's lines stay short), and at a cut the token counts. None when nothing is left out."""
    if kept_from <= FIRST_DROPPABLE:
        return None
    note: dict[str, Any] = {"omitted_turns": {"first": FIRST_DROPPABLE, "last": kept_from - 1}}
    if cut is not None:
        note["cut"] = {"tokens_before": cut.tokens_before, "tokens_after": cut.tokens_after, "context": n_ctx}
    return note


def kept_from_note(note: Any) -> int:
    """Where the window starts after a turn with this `context` note (tolerant of damage:
    anything unreadable means nothing was left out)."""
    if not isinstance(note, dict):
        return FIRST_DROPPABLE
    omitted = note.get("omitted_turns")
    last = omitted.get("last") if isinstance(omitted, dict) else None
    if type(last) is not int or last < FIRST_DROPPABLE:
        return FIRST_DROPPABLE
    return last + 1
