"""docs/scripted.md: every answer file it shows is one awl reads, and `awl run --help` points there."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentworld_local.defaults import MODEL_HELP
from agentworld_local.engine.scripted import ScriptedBackend

DOC = Path(__file__).resolve().parents[2] / "docs" / "scripted.md"


def test_each_example_in_the_doc_is_a_valid_answer_file(tmp_path):
    blocks = re.findall(r"```json\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) >= 2
    for number, block in enumerate(blocks):
        path = tmp_path / f"answers-{number}.json"
        path.write_text(block, encoding="utf-8")
        backend = ScriptedBackend.from_file(path)
        assert len(backend.answers) == len(json.loads(block)["answers"])


def test_the_model_help_points_to_the_doc():
    assert "docs/scripted.md" in MODEL_HELP
