"""How much context a benchmark run needs, and which rows do not fit it.

The official evaluation asks a server for up to `max_tokens` new tokens after each row's
prompt; a server refuses a request whose prompt and `max_tokens` exceed its context, and the
row is then scored as failed (an empty `gen`). awl does the same instead of leaving history
turns out: a row fits when its prompt, the generation room and the backends' slack fit.
By default the context is sized for the longest selected row, so that every row fits,
within what the model and this machine take.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentworld_local.defaults import MIN_CTX
from agentworld_local.engine.context_window import SLACK
from agentworld_local.engine.types import SamplingConfig, ThinkBudget

#: Tokens the forced end of thinking takes after a spent budget (`\n</think>\n\n`, with room).
_FORCED_END = 8
#: Contexts are chosen in steps of this many tokens.
_STEP = 1024


def generation_room(sampling: SamplingConfig, think: ThinkBudget) -> int:
    """The most new tokens one row may generate: what the request asks the context to hold."""
    if sampling.max_tokens_counts_thinking or think.mode != "budget":
        return sampling.max_tokens
    return (think.tokens or 0) + _FORCED_END + sampling.max_tokens


def tokens_needed(prompt_tokens: int, sampling: SamplingConfig, think: ThinkBudget) -> int:
    """The context a row with this prompt needs."""
    return prompt_tokens + generation_room(sampling, think) + SLACK


def unfit_reason(prompt_tokens: int, n_ctx: int, sampling: SamplingConfig, think: ThinkBudget) -> str | None:
    """Why a row with this prompt cannot be predicted in `n_ctx` (None when it can)."""
    needed = tokens_needed(prompt_tokens, sampling, think)
    if needed <= n_ctx:
        return None
    return (f"the prompt takes {prompt_tokens:,} tokens and the generation up to {generation_room(sampling, think):,}: "
            f"{needed:,} in all, more than the {n_ctx:,}-token context")


@dataclass(frozen=True)
class ContextChoice:
    n_ctx: int
    #: The sentence that says why this size.
    reason: str


def choose_ctx(longest_prompt: int, sampling: SamplingConfig, think: ThinkBudget, *, ceiling: int | None,
               ceiling_reason: str) -> ContextChoice:
    """The context for a run whose longest selected row's prompt is `longest_prompt` tokens:
    enough for it and its generation, rounded up, at most `ceiling` (what the model and this
    machine take; None: no limit known)."""
    room = generation_room(sampling, think)
    needed = tokens_needed(longest_prompt, sampling, think)
    wanted = max(MIN_CTX, -(-needed // _STEP) * _STEP)
    why = f"the longest selected row's prompt ({longest_prompt:,} tokens) and {room:,} tokens of generation"
    if ceiling is not None and wanted > ceiling:
        return ContextChoice(ceiling, f"{why} need {needed:,}; {ceiling:,} is {ceiling_reason}, "
                                      "so rows that do not fit are failed, as the official run fails them")
    return ContextChoice(wanted, f"{why} fit")
