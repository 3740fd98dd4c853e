"""The performance report's one command (bench/performance.py): the file it writes has the
header (machine, versions, command), the contents table and each section's table; a section
whose module is missing or raises is noted in the report, and the other sections still run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "performance.py"


def test_the_quick_report_of_one_section_has_the_header_the_contents_and_the_section(tmp_path):
    out = tmp_path / "PERFORMANCE.md"
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--only", "checkpoint_copy", "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.startswith("# Performance report\n")
    for field in ("Date", "Command", "Mode", "CPU", "RAM", "GPU", "OS", "Python", "llama-cpp-python", "llama.cpp build"):
        assert re.search(rf"^\| {re.escape(field)} \| .+ \|$", text, re.M), field
    assert "--quick --only checkpoint_copy" in text and "| Mode | quick" in text
    assert re.search(r"^\| checkpoint_copy \| ok \| quick \| \d+\.\d \|$", text, re.M)
    section = text[text.index("## Checkpoint copy per turn"):]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]  # past the header and |---|
    assert len(rows) == 2
    for row in rows:  # MB, both times and their ratio: numbers measured in this run
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert all(re.fullmatch(r"[\d.]+x?", cell) for cell in cells[1:]), row
        assert float(cells[2]) > 0 and float(cells[3]) > 0


def test_a_missing_or_raising_section_is_noted_and_the_others_still_run(tmp_path, monkeypatch):
    (tmp_path / "broken_section.py").write_text("def section(quick):\n    raise ValueError('no model here')\n")
    (tmp_path / "fine_section.py").write_text("def section(quick):\n    return f'## Fine\\n\\nquick={quick}'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    performance = pytest.importorskip("performance")
    text = performance.report(["no_such_section", "broken_section", "fine_section"], True, "cmd", progress=lambda _: None)
    assert "_Not measured: bench/no_such_section.py does not exist yet._" in text
    assert "_Not measured: bench/broken_section.py raised ValueError: no model here_" in text
    assert "## Fine\n\nquick=True" in text
    assert "| no_such_section | missing |" in text and "| broken_section | failed |" in text
    assert "| fine_section | ok |" in text


def test_each_finished_section_is_written_at_once_and_the_rest_are_listed_as_not_run(tmp_path, monkeypatch):
    """The full report takes long on a small machine: a run stopped half-way keeps what it measured."""
    (tmp_path / "first_section.py").write_text("def section(quick):\n    return f'## First\\n\\nquick={quick}'\n")
    (tmp_path / "second_section.py").write_text("def section(quick):\n    return f'## Second\\n\\nquick={quick}'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    performance = pytest.importorskip("performance")
    written: list[str] = []
    performance.report(["first_section", "second_section"], {"second_section"}, "cmd", progress=lambda _: None,
                       write=written.append)
    first, final = written
    assert "## First\n\nquick=False" in first and "## Second" not in first
    assert "| second_section | not run (the run stopped before it) |" in first
    assert "| first_section | ok | full |" in final and "| second_section | ok | quick |" in final
    assert "## Second\n\nquick=True" in final and "| Mode | mixed" in final
