"""Sessions' places in one llama.cpp context: a sequence per slot, lent to sessions.

A context made with n slots (LlamaBackend's `parallel`) holds n sequences, each with its own
tokens, KV cells, recurrent state and turn checkpoints (`Sequence`); a generation or prefetch
hands the one it acquired to every decode, restore and sample step it makes. A session is bound to
one (`SessionBackend`, what its World generates through) while it is among the n most
recently used; the least recently used one gives its slot up when another session needs
it. The slot keeps what it holds: the next owner's turn restores the longest prefix the two
share (the same system prompt, usually) and evaluates the rest. The session that lost its slot
keeps its state (parking.py: the pool's `handover` parks it when the slot changes hands), and
gets it back in whichever slot it is lent next, so its next turn evaluates only its new tokens.
With one slot (the CLI, the TUI) that is how a probe, a fork and a second session share the context.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentworld_local.engine.guard import GenerationGuard
from agentworld_local.engine.llama.checkpoints import Checkpoint
from agentworld_local.engine.llama.speculation import DraftPacing
from agentworld_local.errors import BackendBusy


@dataclass
class Sequence:
    """One llama.cpp sequence: what it holds and where it can go back to."""

    id: int
    tokens: list[int] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=lambda: [Checkpoint(0, None)])
    pinned: set[int] = field(default_factory=set)  # checkpoint positions thinning keeps
    #: The known start a prefetch last asked for: a turn that evaluates through it checkpoints it.
    known_start: list[int] = field(default_factory=list)
    owner: object | None = None
    used: int = 0  # when its owner last generated (the slots' clock)
    busy: bool = False  # a generation runs in it
    yields: bool = False  # ... or a prefetch between turns, which gives it up at its next chunk
    reserved: bool = False  # its owner's turn evaluated its start here and generates next: not lent
    live: bool = True  # its live state holds exactly `tokens` (False after a failed decode)
    logits: Any = None  # the last decode's logits, copied out when other sequences decode too
    greedy: bool = False  # its generation samples greedily (sample_loop.py): a copied row's pick is its argmax
    #: `--speculate auto`'s run of rejected drafts and pause, across its owner's turns.
    pacing: DraftPacing = field(default_factory=DraftPacing)
    #: The state of the owner it was just taken from, to copy out before its new owner uses it (parking.py).
    parking: Any = None


class SequencePool:
    """Which session holds which sequence (least recently used gives its slot up)."""

    def __init__(self, count: int, handover: Callable[[Sequence, object], None] | None = None) -> None:
        """`handover(sequence, owner)`: called with the pool's lock held when `sequence`, idle,
        is lent away from `owner` (the backend parks what it holds for that owner)."""
        self.all = [Sequence(i) for i in range(count)]
        self._handover = handover
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        self._clock = itertools.count(1)

    def held_by(self, owner: object) -> Sequence | None:
        return next((s for s in self.all if s.owner is owner), None)

    def acquire(self, owner: object, *, wait: threading.Event | None = None, yields: bool = False) -> Sequence | None:
        """The owner's sequence, marked busy; the least recently used idle one when it has
        none. When every slot is busy and one of them with a prefetch between turns (`yields`:
        the runner stops it at its next chunk when a command comes): with `wait` (the turn's
        stop event) wait for it, None if `wait` is set meanwhile. Otherwise (every slot
        generating a turn: the runner schedules no more turns than slots; or no `wait`: a
        prefetch, the lowest priority), BackendBusy at once."""
        with self._lock:
            sequence = self.held_by(owner)
            if sequence is None:
                while not (idle := self._lendable()):
                    if wait is None or not any(s.yields for s in self.all):
                        raise BackendBusy(f"All {len(self.all)} parallel sequences of the model are generating.",
                                          "Wait until a turn finishes, or load the model with a larger `--parallel`.")
                    if wait.is_set():
                        return None
                    self._freed.wait(0.05)  # wakes on a release; the timeout only rechecks `wait`
                sequence = min(idle, key=lambda s: s.used)
                if sequence.owner is not None and self._handover is not None:
                    self._handover(sequence, sequence.owner)  # under the lock: the owner finds it parked
                sequence.owner = owner
                sequence.pacing = DraftPacing()  # another session's answers: drafting starts afresh
            elif sequence.busy:
                raise BackendBusy("This session is already generating a turn.", "Wait until it finishes or cancel it.")
            sequence.busy, sequence.yields = True, yields
            sequence.used = next(self._clock)
            return sequence

    def _lendable(self) -> list[Sequence]:
        """Idle sequences another owner may take: none whose owner's turn goes on there next
        (the gap between a turn's prefetch and its generate), unless those are all there are."""
        idle = [s for s in self.all if not s.busy]
        return [s for s in idle if not s.reserved] or ([] if any(s.yields for s in self.all) else idle)

    def release(self, sequence: Sequence, *, keep: bool = False) -> None:
        """`keep`: the owner's turn goes on in it next (a turn's own prefetch): it is not lent
        meanwhile (see `_lendable`)."""
        with self._lock:
            sequence.busy = sequence.yields = False
            sequence.reserved = keep
            self._freed.notify_all()

    def give_up(self, owner: object) -> None:
        """The owner needs no place any more (its session closed): its slot is the next one lent."""
        with self._lock:
            sequence = self.held_by(owner)
            if sequence is not None and not sequence.busy:
                sequence.owner = None
                sequence.used = 0
                sequence.reserved = False

    @property
    def latest(self) -> Sequence:
        """The sequence used last (what the backend's own accessors show)."""
        return max(self.all, key=lambda s: s.used)


class SessionBackend:
    """One session's view of a LlamaBackend: generates in the sequence the session is lent
    (LlamaBackend.bind_session). Everything else is the model's (`info`, `tokenize`, ...)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self._guard = GenerationGuard()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def generate(self, messages: list[dict[str, str]], **options: Any) -> Any:
        with self._guard.hold():
            yield from self.model.generate(messages, owner=self, **options)

    def for_session(self) -> SessionBackend:
        return self.model.for_session()

    def prefetch(self, messages: list[dict[str, str]], **options: Any) -> int:
        return self.model.prefetch(messages, owner=self, **options)

    @property
    def sequence(self) -> Sequence | None:
        """The sequence this session holds now (None: it has none; its next turn gets one)."""
        return self.model.slots.held_by(self)

    @property
    def evaluated_tokens(self) -> list[int]:
        sequence = self.sequence
        return list(sequence.tokens) if sequence is not None else []

    def checkpoint_bytes(self) -> int:
        sequence = self.sequence
        return sum(len(c.state or b"") for c in sequence.checkpoints) if sequence is not None else 0

    def release(self) -> None:
        """The session closed: its slot goes to the next session first, its parked state goes."""
        self.model.slots.give_up(self)
        self.model.discard_parked(self)

    def close(self) -> None:
        """A session's view closes nothing but its slot: the runner owns the model."""
        self.release()

