"""Ctrl+C and SIGTERM in the CLI: never a traceback, and completed turns are kept and said.

- While `awl` starts (its imports take a noticeable moment) either signal ends the process
  at once and quietly: nothing has been written yet (cli/main.py sets that up first thing).
- Then SIGINT raises KeyboardInterrupt and SIGTERM raises `Terminated`, a KeyboardInterrupt,
  so every `except KeyboardInterrupt` that keeps saved turns handles both (exit 130 / 143).
- During a session, `SessionSignals` decides between cancelling a turn and quitting. Once
  the session closes (after a quit, an error or the end of input), further signals wait for
  the close and its last words, so `--json` always ends with its `saved` line.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator

#: A second Ctrl+C this soon after the first quits, wherever the session is.
QUIT_WINDOW_S = 2.0
#: Signals that may come while a session closes without cutting its last words short (a
#: SIGTERM after a Ctrl+C, a Ctrl+C pressed twice); one more quits at once.
CLOSING_PATIENCE = 2


class Terminated(KeyboardInterrupt):
    """SIGTERM: ends a session the way Ctrl+C does, with exit code 143."""


def exit_code(interrupt: BaseException | None) -> int:
    """130 for Ctrl+C, 143 for SIGTERM (128 + the signal number, as shells report it)."""
    return 128 + (signal.SIGTERM if isinstance(interrupt, Terminated) else signal.SIGINT)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def handled() -> None:
    """Tell CPython that the KeyboardInterrupt in flight was handled.

    CPython 3.11 marks a KeyboardInterrupt raised inside `exec()` of a string (dataclasses
    do that while modules import) as unhandled for good, even once caught; at exit it
    then kills itself with SIGINT instead of returning awl's exit code. Clearing the mark
    keeps the exit code awl chose (130 or 143). Nothing happens where the mark is absent.
    """
    try:
        import ctypes

        ctypes.c_int.in_dll(ctypes.pythonapi, "_Py_UnhandledKeyboardInterrupt").value = 0
    except (ImportError, ValueError, AttributeError, OSError):
        pass


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def raise_on_signals() -> None:
    """From here on a signal is an exception that the session and the entry point handle."""
    if _in_main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _terminate)


class SignalFlag:
    """A flag a signal handler sets. A `threading.Event` takes a lock to be set, and the handler
    runs in the main thread between two bytecodes, maybe while that thread holds the lock (in
    `clear()`) or while an earlier handler does: it would wait for itself for ever. A plain
    attribute needs no lock; the main thread reads it between events (cli/session_loop.py)."""

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def clear(self) -> None:
        self._set = False

    def is_set(self) -> bool:
        return self._set


class SessionSignals:
    """Signals while a session runs.

    In a script any signal ends the session. At an interactive prompt the first Ctrl+C
    during a turn cancels only that turn (reloading a 20 GB model costs minutes); a second
    one in the same turn or within `QUIT_WINDOW_S` quits, and so does Ctrl+C at the prompt.
    SIGTERM always quits. Quitting also sets `cancel`, so the turn stops between tokens
    even if the exception is lost, and `check()` raises it again after the turn. Files are
    written on the runner's thread (session/runner/runner.py), which a signal never interrupts: a
    quit there is `runner.close()`, which lets the line being saved finish.
    """

    def __init__(self, cancel: SignalFlag | None = None, *, interactive: bool) -> None:
        self.cancel = cancel if cancel is not None else SignalFlag()
        self.interactive = interactive
        self.quit: KeyboardInterrupt | None = None
        self._in_turn = False
        self._last_ctrl_c = float("-inf")
        self._wakeup: int | None = None  # read end of the signal wakeup pipe while installed
        self._closing = False  # the session closes (closing())
        self._while_closing = 0  # signals that came once a quit was raised, or while the session closed

    def _deliveries(self) -> int:
        """How many Ctrl+C arrived since the last call (at least the one being handled).

        Python runs a handler only between bytecodes: two Ctrl+C during one long llama.cpp
        decode reach it as one call. The wakeup pipe gets a byte per delivered signal.
        """
        count = 0
        if self._wakeup is not None:
            with contextlib.suppress(BlockingIOError, OSError):
                while chunk := os.read(self._wakeup, 64):
                    count += chunk.count(bytes([signal.SIGINT]))
        return max(count, 1)

    def _handle(self, signum: int, frame: object) -> None:
        now = time.monotonic()
        ctrl_c = signum == signal.SIGINT
        repeated = ctrl_c and self._deliveries() > 1
        cancels_turn = (
            ctrl_c and self.interactive and self._in_turn and not self.cancel.is_set()
            and now - self._last_ctrl_c > QUIT_WINDOW_S and not repeated
        )
        if ctrl_c:
            self._last_ctrl_c = now
        self.cancel.set()
        if cancels_turn:
            return
        if self.quit is not None or self._closing:
            # A quit is on its way, or the session closes: what it says last (`saved`) must come out.
            self.quit = self.quit or (KeyboardInterrupt() if ctrl_c else Terminated())
            self._while_closing += 1
            if self._while_closing <= CLOSING_PATIENCE:
                return
        self.quit = self.quit or (KeyboardInterrupt() if ctrl_c else Terminated())
        raise type(self.quit)()

    def check(self) -> None:
        """Raise the quit a signal asked for, if it was lost or deferred."""
        if self.quit is not None:
            raise type(self.quit)()

    @contextlib.contextmanager
    def closing(self) -> Iterator[None]:
        """Around closing the session and its last words (the `saved` line of --json): a signal
        that comes now (or after a quit was raised, on its way here) is noted (`quit`) and the
        close goes on (the cancel stops the turn at its next token). Only a signal past
        `CLOSING_PATIENCE` quits at once, for a close that hangs."""
        self._closing = True
        try:
            yield
        finally:
            self._closing = False

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        if not _in_main_thread():
            yield
            return
        previous = {number: signal.signal(number, self._handle) for number in (signal.SIGINT, signal.SIGTERM)}
        reader, writer = os.pipe()
        os.set_blocking(reader, False)
        os.set_blocking(writer, False)
        previous_wakeup = signal.set_wakeup_fd(writer, warn_on_full_buffer=False)
        self._wakeup = reader
        try:
            yield
        finally:
            signal.set_wakeup_fd(previous_wakeup)
            self._wakeup = None
            os.close(reader)
            os.close(writer)
            for number, handler in previous.items():
                signal.signal(number, handler)

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Around one script line: a fresh cancel flag, and Ctrl+C cancels rather than quits."""
        self.check()
        self.cancel.clear()
        self._in_turn = True
        try:
            yield
        finally:
            self._in_turn = False
        self.check()
