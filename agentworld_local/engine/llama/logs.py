"""llama.cpp's log, captured: load errors become one clear message, and nothing is printed.

llama.cpp has one process-wide log callback; `LOGS` holds it for the whole process.
With `--verbose` the lines also go to `echo` (the loading backend's notice callback),
one whole line at a time.
"""

from __future__ import annotations

import ctypes
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import llama_cpp


class LogCapture:
    def __init__(self) -> None:
        self.lines: deque[str] = deque(maxlen=400)
        #: Where whole log lines go besides the buffer (verbose loads), or None.
        self.echo: Callable[[str], None] | None = None
        self._partial = ""
        #: Tensors this load placed by an override (`--cpu-moe`), from llama.cpp's debug lines,
        #: which the bounded buffer would lose among a large model's load lines.
        self.overridden: list[str] = []
        #: Whether the last context runs flash attention, as llama.cpp said (None: it did not say).
        self.flash_attention: bool | None = None
        self._callback = llama_cpp.llama_log_callback(self._on_log)  # keep a reference alive
        llama_cpp.llama_log_set(self._callback, ctypes.c_void_p(0))

    def _on_log(self, level: int, text: bytes, user_data: Any) -> None:
        line = text.decode("utf-8", errors="replace")
        self.lines.append(line)
        if line.startswith("tensor ") and "buffer type overridden to" in line:
            self.overridden.append(line.split()[1])
        elif "Flash Attention enabled" in line or "flash_attn            = enabled" in line:
            self.flash_attention = True
        elif "Flash Attention not supported" in line or "flash_attn            = disabled" in line:
            self.flash_attention = False
        echo = self.echo
        if echo is None:
            return
        self._partial += line
        *whole, self._partial = self._partial.split("\n")
        for piece in whole:
            if piece.strip():
                try:  # an exception cannot leave a C callback (it would be printed and ignored)
                    echo(f"llama.cpp: {piece.rstrip()}")
                except Exception:  # noqa: BLE001
                    pass

    def clear(self) -> None:
        self.lines.clear()
        self.overridden.clear()
        self.flash_attention = None
        self._partial = ""

    def text(self) -> str:
        return "".join(self.lines)


class _StreamsLeftAlone:
    """Stands in for llama-cpp-python's `suppress_stdout_stderr`, which silences a load by
    pointing file descriptors 1 and 2 (and sys.stdout/sys.stderr) at /dev/null for the whole
    process. A model loads on the runner's thread while the faces go on writing (the CLI's
    notices and progress bar, the TUI's screen): their output vanished meanwhile. llama.cpp's
    own log already reaches LOGS through the callback, so nothing needs silencing."""

    def __init__(self, disable: bool = True) -> None:
        pass

    def __enter__(self) -> _StreamsLeftAlone:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None


def _leave_streams_alone() -> None:
    import llama_cpp._internals
    import llama_cpp.llama

    llama_cpp._internals.suppress_stdout_stderr = _StreamsLeftAlone  # type: ignore[assignment,misc]
    llama_cpp.llama.suppress_stdout_stderr = _StreamsLeftAlone  # type: ignore[assignment,misc]


LOGS = LogCapture()
_leave_streams_alone()
#: One load (or header check) at a time: the captured log belongs to it.
LOAD_LOCK = threading.Lock()
