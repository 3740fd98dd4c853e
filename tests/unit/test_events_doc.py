"""docs/events.md lists every session event, so a new one cannot reach the wire undocumented."""

from __future__ import annotations

import inspect
import re
from dataclasses import fields
from pathlib import Path

from agentworld_local.engine import events

DOC = Path(__file__).resolve().parents[2] / "docs" / "events.md"


def event_classes() -> list[type[events.SessionEvent]]:
    """Every event class the module defines (not only those in EVENT_TYPES)."""
    return [kind for _, kind in inspect.getmembers(events, inspect.isclass)
            if issubclass(kind, events.SessionEvent) and kind is not events.SessionEvent
            and kind.__module__ == events.__name__]


def sections() -> dict[str, str]:
    """`### `name` (Class)` sections of the doc, by heading."""
    parts = re.split(r"^### ", DOC.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {part.splitlines()[0].strip(): part for part in parts[1:]}


def test_every_event_class_has_its_section_with_its_wire_fields():
    documented = sections()
    missing, fields_missing = [], []
    for kind in event_classes():
        heading = f"`{kind.name}` ({kind.__name__})"
        if heading not in documented:
            missing.append(heading)
            continue
        wire = [item.name for item in fields(kind) if not item.metadata.get("local")]
        fields_missing += [f"{kind.name}.{name}" for name in wire if f"`{name}`" not in documented[heading]]
    assert not missing, f"docs/events.md has no section for: {', '.join(missing)}"
    assert not fields_missing, f"docs/events.md does not name these fields: {', '.join(fields_missing)}"


def test_every_event_is_in_the_table_and_readable_back():
    text = DOC.read_text(encoding="utf-8")
    rows = {name for line in text.splitlines() if line.startswith("| `")
            for name in re.findall(r"`([a-z_]+)`", line.split("|")[1])}
    names = {kind.name for kind in event_classes()}
    assert names <= rows, f"missing from the table: {sorted(names - rows)}"
    assert names == {kind.name for kind in events.EVENT_TYPES}  # event_from_dict reads each one back
