"""Re-simulating an AgentWorldBench row: a World whose history is the row's ground truth.

The model then receives exactly the message list the official evaluation sends for the
row (`bench_messages(row)`): the row's own system prompt, the earlier turns' prompts and
real observations verbatim, and the row's current prompt verbatim.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import replace

from agentworld_local.engine.base import Backend
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World, WorldEvent
from agentworld_local.agentworldbench.rows import BenchDomain, BenchRow, prompt_action, row_header, row_turns
from agentworld_local.trajectory.schema import TurnRecord


def bench_world(row: BenchRow, backend: Backend, settings: SessionSettings | None = None) -> World:
    """A World positioned just before the row's evaluated turn.

    Sampling, thinking and seed come from `settings`; everything that shapes the prompt
    comes from the row (the prompts are sent verbatim; task, state and controls are read
    from the row's first prompt for the record).
    """
    row = sendable(row)
    header = row_header(row)
    settings = replace(
        settings or SessionSettings(),
        system_prompt=row.system_str,
        task=header.task,
        initial_state=header.initial_state,
        controls=header.controls,
        tools=None,
        world_description="",
    )
    return World(backend, BenchDomain(row), settings, history=row_turns(row, limit=row.history_pairs()))


def resimulate(world: World, row: BenchRow, cancel: threading.Event | None = None) -> Iterator[WorldEvent]:
    """Stream the model's prediction for the row's current turn (sent exactly as written)."""
    row = sendable(row)
    return world.step(prompt_action(row.current), cancel, prompt=row.current)


def predict_turn(world: World, row: BenchRow, cancel: threading.Event | None = None) -> TurnRecord | None:
    """`resimulate` drained: the prediction's record, or None when it was cancelled."""
    row = sendable(row)
    return world.run_turn(prompt_action(row.current), cancel, prompt=row.current)


_SURROGATE = re.compile("[\ud800-\udfff]")


def sendable(row: BenchRow) -> BenchRow:
    """The row with lone surrogates (from `\\ud800` escapes in a damaged file) as U+FFFD.

    They cannot be encoded, so no model can receive them; everything else stays verbatim.
    """
    texts = [row.system_str, *row.prompts, *row.responses]
    if not any(_SURROGATE.search(text) for text in texts):
        return row
    fix = lambda text: _SURROGATE.sub("\ufffd", text)  # noqa: E731
    return replace(row, system_str=fix(row.system_str), prompts=[fix(p) for p in row.prompts],
                   responses=[fix(r) for r in row.responses])
