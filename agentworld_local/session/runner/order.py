"""What runs and what waits, for the runner (runner.py): every session's mailbox, the model's
places, a command that runs `alone`, and the idle prefetch, under one lock.

Each method takes the lock, changes the bookkeeping, and returns the commands that may start
now, already claimed (`started`, a place taken where they need one); the runner starts each on
a thread of its own, outside the lock. Nothing here runs a command or says an event.

- A command reaching the front of its mailbox starts, or waits: for a place (a token loop),
  for an `alone` command to end, or for its session's prefetch to stop.
- An `alone` command (a load, an open that loads a model, a re-simulation) starts once nothing
  runs, prefetch included, and nothing starts beside it.
- The prefetch counts as running (a load waits for it) and holds back its session's commands
  until it has stopped (`idle_cancel` stops it; every new command sets it).
"""

from __future__ import annotations

import threading

from agentworld_local.session.runner.mailbox import Command, Mailboxes
from agentworld_local.session.runner.scheduling import Load, Places


class Order:
    """The runner's bookkeeping of its commands (see the module's doc)."""

    def __init__(self, parallel: int) -> None:
        self.lock = threading.Lock()
        self._quiet = threading.Condition(self.lock)  # notified when nothing runs any more
        self._mail = Mailboxes()
        self._places = Places(parallel)
        self._running = 0  # commands whose body runs, and a prefetch
        self._alone: Command | None = None  # an `alone` command at the front of its mailbox
        self._held: list[Command] = []  # ready to start, held while `_alone` waits or runs, or a prefetch of theirs
        self._prefetching: str | None = None  # the session whose next turn is evaluated ahead now
        self.idle_cancel = threading.Event()  # stops that prefetch

    # -- what the runner asks --------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return bool(self._mail.count)

    def pending(self, session: str) -> int:
        """Commands of `session` accepted and not ended (the running one included)."""
        with self.lock:
            return self._mail.holds(session)

    @property
    def load(self) -> Load:
        with self.lock:
            commands_running = self._running - (self._prefetching is not None)
            return Load(self._places.parallel, self._places.running, self._mail.count - commands_running)

    def resize(self, parallel: int) -> None:
        with self.lock:
            self._places.resize(parallel)

    def wait_quiet(self) -> None:
        """Until nothing runs (close's last wait)."""
        with self.lock:
            self._quiet.wait_for(lambda: self._running == 0)

    # -- what changes it -------------------------------------------------------------------

    def post(self, command: Command) -> list[Command]:
        """A new command (under the caller's hold of `lock`): it waits behind its session's."""
        self.idle_cancel.set()  # a prefetch stops at its next chunk: the command runs next
        return self._claim(self._ready(command)) if self._mail.post(command) else []

    def ended(self, command: Command) -> list[Command]:
        """`command` said its Ready: the next of its mailbox, and what its place frees."""
        with self.lock:
            starts = self._give_back_place(command)
            self._running -= 1
            if command is self._alone:
                self._alone = None
            following = self._mail.done(command)
            starts += self._ready(following) if following is not None else []
            starts += self._reopen()
            if self._running == 0:
                self._quiet.notify_all()
            return self._claim(list(dict.fromkeys(starts)))

    def release_place(self, command: Command) -> list[Command]:
        """The turn's record is saved: its place goes to the next waiting turn now."""
        with self.lock:
            return self._claim(self._give_back_place(command))

    def cancel(self, session: str | None, by: str) -> tuple[list[Command], list[Command], list[Command]]:
        """Stop `session`'s commands (None: every one): (those touched, those dropped before
        they started, what may start now)."""
        with self.lock:
            self.idle_cancel.set()
            touched = list(self._mail.of(session))
            for command in touched:
                command.stop(by)
            dropped = self._mail.take_waiting(session)
            for command in dropped:
                self._places.drop(command)
                if command in self._held:
                    self._held.remove(command)
            if self._alone in dropped:
                self._alone = None
            return touched, dropped, self._claim(self._reopen())

    def prefetch_begins(self, session: str, allowed: bool) -> threading.Event | None:
        """The event that stops a prefetch of `session`'s next turn, or None when it may not
        run now (anything waits or runs in a mailbox, one runs already, or not `allowed`)."""
        with self.lock:
            if self._mail.count or self._prefetching is not None or not allowed:
                return None
            self.idle_cancel = threading.Event()
            self._prefetching = session
            self._running += 1
            return self.idle_cancel

    def prefetch_ended(self) -> list[Command]:
        with self.lock:
            self._prefetching = None
            self._running -= 1
            if self._running == 0:
                self._quiet.notify_all()
            return self._claim(self._reopen())

    # -- under the lock ----------------------------------------------------------------------

    def _ready(self, command: Command) -> list[Command]:
        """`command` reached the front of its mailbox: what may start now."""
        if command.alone:
            self._alone = command
            return self._reopen()
        if self._alone is not None or (command.session is not None and command.session == self._prefetching):
            self._held.append(command)
            return []
        if command.needs_place:
            self._places.want(command)
            return self._places.free_for()
        return [command]

    def _reopen(self) -> list[Command]:
        """What may start now that an `alone` command came or went, a prefetch ended, or
        something stopped running: the `alone` command once nothing runs, else what it held."""
        alone = self._alone
        if alone is not None:
            return [alone] if not alone.started and self._running == 0 else []
        held, self._held = self._held, []
        starts: list[Command] = []
        for command in held:
            starts.extend(self._ready(command))
        return starts + self._places.free_for()

    def _give_back_place(self, command: Command) -> list[Command]:
        if not command.holds_place:
            return []
        command.holds_place = False
        self._places.release()
        return self._places.free_for() if self._alone is None else []

    def _claim(self, commands: list[Command]) -> list[Command]:
        """`commands` start now (a turn among them was given its place)."""
        for command in commands:
            command.started = True
            command.holds_place = command.needs_place
            self._running += 1
        return commands
