"""Ctrl+C and SIGTERM in the CLI: never a traceback, and completed turns are kept and said.

- While `awl` starts (its imports take a noticeable moment) either signal ends the process
  at once and quietly: nothing has been written yet.
- Then SIGINT raises KeyboardInterrupt and SIGTERM raises `Terminated`, a KeyboardInterrupt,
  so every `except KeyboardInterrupt` that keeps saved turns handles both (exit 130 / 143).
- During a session, `SessionSignals` decides between cancelling a turn and quitting.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

#: A second Ctrl+C this soon after the first quits, wherever the session is.
QUIT_WINDOW_S = 2.0


class Terminated(KeyboardInterrupt):
    """SIGTERM: ends a session the way Ctrl+C does, with exit code 143."""


def exit_code(interrupt: BaseException | None) -> int:
    """130 for Ctrl+C, 143 for SIGTERM (128 + the signal number, as shells report it)."""
    return 128 + (signal.SIGTERM if isinstance(interrupt, Terminated) else signal.SIGINT)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _quit_now(signum: int, frame: object) -> None:
    os.write(2, b"\nawl: interrupted.\n")
    os._exit(128 + signum)


def quit_quietly_while_starting() -> None:
    """Until `raise_on_signals`: imports are under way and there is nothing to keep or say."""
    if _in_main_thread():
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, _quit_now)


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def raise_on_signals() -> None:
    """From here on a signal is an exception that the session and the entry point handle."""
    if _in_main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _terminate)


class SessionSignals:
    """Signals while a session runs.

    In a script any signal ends the session. At an interactive prompt the first Ctrl+C
    during a turn cancels only that turn (reloading a 20 GB model costs minutes); a second
    one in the same turn or within `QUIT_WINDOW_S` quits, and so does Ctrl+C at the prompt.
    SIGTERM always quits. Quitting also sets `cancel`, so the turn stops between tokens
    even if the exception is lost (an exception raised inside a C callback is ignored), and
    `check()` raises it again after the turn. While a turn is being saved, a signal waits
    until the line is written.
    """

    def __init__(self, cancel: threading.Event, *, interactive: bool) -> None:
        self.cancel = cancel
        self.interactive = interactive
        self.quit: KeyboardInterrupt | None = None
        self._in_turn = False
        self._saving = False
        self._last_ctrl_c = float("-inf")

    def _handle(self, signum: int, frame: object) -> None:
        now = time.monotonic()
        ctrl_c = signum == signal.SIGINT
        cancels_turn = (
            ctrl_c and self.interactive and self._in_turn and not self.cancel.is_set()
            and now - self._last_ctrl_c > QUIT_WINDOW_S
        )
        if ctrl_c:
            self._last_ctrl_c = now
        self.cancel.set()
        if cancels_turn:
            return
        self.quit = KeyboardInterrupt() if ctrl_c else Terminated()
        if not self._saving:
            raise type(self.quit)()

    def check(self) -> None:
        """Raise the quit a signal asked for, if it was lost or deferred."""
        if self.quit is not None:
            raise type(self.quit)()

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        if not _in_main_thread():
            yield
            return
        previous = {number: signal.signal(number, self._handle) for number in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
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

    def saving(self, write: Callable[..., Any]) -> Callable[..., Any]:
        """`write` with signals held back until it returns, so a saved line is never cut.

        A signal that arrived meanwhile is raised by `turn()` once the turn is over: raised
        here, it would leave a saved turn out of the session's history.
        """

        def shielded(*args: Any, **kwargs: Any) -> Any:
            self._saving = True
            try:
                return write(*args, **kwargs)
            finally:
                self._saving = False

        return shielded
