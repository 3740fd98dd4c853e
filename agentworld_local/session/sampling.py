"""The one set of rules for sampling settings, whoever gives them: command-line options
(`awl run`, `awl bench predict`, the TUI's fields) or a saved session's header on resume.

A header is a file someone may have edited: a temperature written as text was a traceback
deep in the sampler, and `max_tokens: -1` silently gave one-token turns.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from agentworld_local.defaults import DEFAULT_MAX_TOKENS, DEFAULT_MIN_P, DEFAULT_TEMPERATURE, DEFAULT_TOP_K, DEFAULT_TOP_P
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.errors import InputError, TrajectoryError

#: llama.cpp takes whole-number settings as a C int.
MAX_WHOLE = 2**31 - 1

# setting -> (a whole number?, the rule, what a value that breaks it does, the value to suggest)
_RULES: dict[str, tuple[bool, Callable[[Any], bool], str, Any]] = {
    "temperature": (False, lambda v: v >= 0, "is not allowed: it must be 0 (greedy) or more", DEFAULT_TEMPERATURE),
    "top_p": (False, lambda v: 0 < v <= 1, "is not allowed: it must be above 0 and at most 1", DEFAULT_TOP_P),
    "top_k": (True, lambda v: v >= 0, "is not allowed: it must be 0 (no limit) or more", DEFAULT_TOP_K),
    "min_p": (False, lambda v: 0 <= v <= 1, "is not allowed: it must be from 0 to 1", DEFAULT_MIN_P),
    "max_tokens": (True, lambda v: v >= 1, "leaves no room for an observation", DEFAULT_MAX_TOKENS),
}


#: When a generation ends (engine/types.SamplingConfig): each true or false.
_SWITCHES = ("max_tokens_counts_thinking", "stop_at_observation", "repetition_guard")


def option_name(key: str) -> str:
    """`max_tokens` -> `--max-tokens`: how a command line names a setting."""
    return "--" + key.replace("_", "-")


def check_sampling(*, name: Callable[[str], str] = option_name, **values: Any) -> None:
    """Refuse a sampling value that cannot work (InputError naming it with `name`)."""
    for key, value in values.items():
        if key in _SWITCHES:
            if not isinstance(value, bool):
                raise InputError(f"{name(key)} {_shown(value)} is not true or false.", "Write true or false.")
            continue
        if key not in _RULES:
            raise InputError(f"{name(key)} is not a sampling setting.", f"Known: {', '.join(map(name, [*_RULES, *_SWITCHES]))}.")
        whole, rule, words, example = _RULES[key]
        source = "the default" if key == "max_tokens" else "the model card's value"
        hint = f"Use e.g. `{option_name(key)} {example}` ({source})."
        shown = _shown(value)
        if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
            raise InputError(f"{name(key)} {shown} is not {'a whole number' if whole else 'a number'}.", hint)
        if isinstance(value, int) and abs(value) > MAX_WHOLE or isinstance(value, float) and math.isinf(value):
            raise InputError(f"{name(key)} {shown} is out of range.", hint)
        if not rule(value):  # NaN fails every rule
            raise InputError(f"{name(key)} {shown} {words}.", hint)


def saved_settings(sampling: Mapping[str, Any], think: Any) -> tuple[SamplingConfig, ThinkBudget]:
    """The sampling and thinking budget a saved header states, checked by the options' rules.

    Raises TrajectoryError naming the header field; missing settings take the defaults."""
    try:
        check_sampling(name=lambda key: f"`sampling.{key}`", **sampling)
        budget = ThinkBudget.parse(think)
    except InputError as problem:
        raise TrajectoryError(
            f"the session's header (line 1) holds a setting that cannot be used: {problem.message}",
            "Fix that value in line 1 with an editor, or start a new session with `awl run`.",
        ) from None
    return SamplingConfig(**sampling), budget


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:40] + "…"
