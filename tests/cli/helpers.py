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


def awl(*args: str, home: Path, stdin: str | None = None, timeout: float | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`awl ARGS` to its end. No deadline of its own by default (a slow run on a busy machine is not
    a failure): pytest-timeout's per-test limit stops a hang, and kills the child as it unwinds."""
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
            ";", "echo", f"{exited_marker}-$?", ";", "sleep", "86400",  # kept on screen until __exit__
        ])
        width, height = size
        subprocess.run([*self.tmux, "new-session", "-d", "-x", str(width), "-y", str(height), "-c", str(REPO), command],
                       check=True)

    def __enter__(self) -> AwlInTmux:
        return self

    def __exit__(self, *exc: object) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)

    def screen(self) -> str:
        return subprocess.run([*self.tmux, "capture-pane", "-p"], capture_output=True, text=True, check=True).stdout

    def wait_for(self, wanted: str) -> str:
        """The screen once `wanted` shows: polled, with no deadline of its own (pytest-timeout's
        per-test limit stops a hang, and its failure shows this frame)."""
        screen = self.screen()
        while wanted not in screen:
            time.sleep(0.2)
            screen = self.screen()
        return screen

    def keys(self, *keys: str, literal: bool = False) -> None:
        subprocess.run([*self.tmux, "send-keys", *(["-l"] if literal else []), *keys], check=True)
