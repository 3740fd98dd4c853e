"""Run the real `awl` entry point in a subprocess, and check its error contract."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
import uuid
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


class AwlInTmux:
    """`awl ARGS` in a real terminal: a private tmux server (nothing else is touched), read with
    capture-pane. `wait_for` polls until a text shows (a patience, not a timing assertion)."""

    def __init__(self, *args: str, home: Path, exited_marker: str, size: tuple[int, int] = (120, 40)) -> None:
        self.tmux = ["tmux", "-L", f"awl-test-{uuid.uuid4().hex[:8]}"]
        # COLUMNS/LINES from the test runner would pin Textual to their size.
        command = " ".join([
            "env", "-u", "COLUMNS", "-u", "LINES", f"PYTHONPATH={shlex.quote(str(REPO))}",
            f"AWL_HOME={shlex.quote(str(home))}", "TERM=xterm-256color",
            shlex.quote(sys.executable), "-m", "agentworld_local.cli.main", *(shlex.quote(arg) for arg in args),
            ";", "echo", f"{exited_marker}-$?", ";", "sleep", "30",
        ])
        width, height = size
        subprocess.run([*self.tmux, "new-session", "-d", "-x", str(width), "-y", str(height), "-c", str(REPO), command],
                       check=True, timeout=30)

    def __enter__(self) -> AwlInTmux:
        return self

    def __exit__(self, *exc: object) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True, timeout=30)

    def screen(self) -> str:
        return subprocess.run([*self.tmux, "capture-pane", "-p"], capture_output=True, text=True, timeout=30).stdout

    def wait_for(self, wanted: str, patience_s: float = 30.0) -> str:
        deadline = time.monotonic() + patience_s
        screen = self.screen()
        while wanted not in screen and time.monotonic() < deadline:
            time.sleep(0.2)
            screen = self.screen()
        return screen

    def keys(self, *keys: str, literal: bool = False) -> None:
        subprocess.run([*self.tmux, "send-keys", *(["-l"] if literal else []), *keys], check=True, timeout=30)
