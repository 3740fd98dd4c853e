"""Run the real `awl` entry point in a subprocess, and check its error contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def awl_env(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "AWL_HOME": str(home), "PYTHONPATH": str(REPO), **extra}


def awl(*args: str, home: Path, stdin: str | None = None, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentworld_local.cli.main", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env or awl_env(home),
        cwd=REPO,
        timeout=timeout,
    )


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit code 2, exactly one `awl: error:` line on stderr, no traceback."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("awl: error:"), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def scripted_model(directory: Path, *answers: str | dict, chunk: int = 3, name: str = "answers.json") -> str:
    """A `--model scripted:FILE` spec: the answers a real model writes, streamed in small chunks."""
    path = directory / name
    entries = [{"raw": answer, "chunk": chunk} if isinstance(answer, str) else answer for answer in answers]
    path.write_text(json.dumps({"version": 1, "answers": entries}), encoding="utf-8")
    return f"scripted:{path}"
