"""The per-turn fields a resume writes (TurnRecord.settings, TurnRecord.model): written only
when set, read back exactly, absent from older files, and a damaged value names its field."""

from __future__ import annotations

import pytest

from agentworld_local.trajectory.schema import ModelRef, TurnRecord

OLD_LINE = {"type": "turn", "id": 1, "parent": None, "turn": 1, "action": "ls", "observation": "total 0"}


def test_an_older_turn_has_neither_field_and_writes_neither():
    record = TurnRecord.from_dict(OLD_LINE)
    assert record.settings is None and record.model is None
    assert "settings" not in record.to_dict() and "model" not in record.to_dict()


def test_the_fields_round_trip():
    record = TurnRecord(action="ls", settings={"max_tokens": 4096, "think": "full", "seed": 9},
                        model=ModelRef(name="other.gguf", path="/m/other.gguf", file_size=10, sha256="b" * 64, sha256_scope="file"))
    again = TurnRecord.from_dict(record.to_dict())
    assert again.settings == record.settings and again.model == record.model and again.extra == {}


@pytest.mark.parametrize(("key", "value", "said"), [
    ("settings", "max_tokens=9", "field 'settings'"), ("model", ["x"], "field 'model'"), ("model", {"path": "/m"}, "field 'name'"),
])
def test_a_damaged_value_names_its_field(key, value, said):
    with pytest.raises(ValueError, match=said):
        TurnRecord.from_dict({**OLD_LINE, key: value})
