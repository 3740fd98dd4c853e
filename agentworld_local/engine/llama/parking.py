"""Sessions beyond the model's places keep their state: parked while another session holds the place.

A model loaded with n places (sequences.py) serves any number of sessions; RL runs more
episodes than it has places. When a session's place is lent to another one
(SequencePool.acquire), what the place holds for it is parked: the sequence's whole state as
llama.cpp serialises it (attention KV cells and recurrent state, llama_state_seq_get_data:
checkpoints.copy_sequence) with what the backend knows of it (its tokens, turn checkpoints,
pinned positions, known start, drafting pace). When the session gets a place again, any of
them, the state is set into it (llama_state_seq_set_data) before its turn runs, so the turn
restores its checkpoint and evaluates only its new tokens, as if it had never left: the bytes
are the ones it left, so its answers are those it gets alone.

Parked states are held in memory within a byte budget (`parked_budget`: the memory plan's
PARKED_STATE_BUDGET, models/memory.py, which counts one full context's state of them among what
awl holds beside llama.cpp; no more than that and the RAM the offload plan leaves, or half the RAM
free without a plan). Beyond it the least recently parked go to
files in a private folder of the state cache's directory (removed at close, and a dead
process's on the next start); beyond the disk budget, the free disk or a failed write, the
oldest are dropped: that session's next turn evaluates its history again, as before parking
existed. A session that closes drops its parked state (SessionBackend.release), and so does
one that is garbage collected.

The handover is recorded under the pool's lock (so the session that lost the place finds its
entry whenever it asks); the state itself is copied by the new owner's thread before its turn
touches the place, outside that lock (a session that asks meanwhile waits for it), in the same
hold of the context that sets the new owner's own parked state in (each hold waits for the
decode round in flight and pauses the other sessions' decodes). It is copied
whatever the new owner's prompt: a fork or a probe that shares the history pays a copy it did
not need (host memcpy: milliseconds for the fixtures, about 0.1 s for a real model's 30k-token
context), and the session then goes on from the place if that reaches further (`_unpark`).
"""

from __future__ import annotations

import os
import pickle
import secrets
import shutil
import threading
import time
import weakref
import zlib
from collections import OrderedDict
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from agentworld_local.engine.llama import checkpoints
from agentworld_local.engine.llama.checkpoints import Checkpoint
from agentworld_local.engine.llama.prefix_tokens import shared_length
from agentworld_local.engine.llama.sequences import Sequence
from agentworld_local.engine.llama.speculation import DraftPacing
from agentworld_local.models import memory

#: Host memory for parked states (models/memory.py, the memory plan's): a real model's session
#: state is a few hundred MB (its KV cells, its recurrent state and turn checkpoints), so this
#: holds a handful; the rest go to disk.
DEFAULT_BUDGET = memory.PARKED_STATE_BUDGET
#: Disk for parked states (the folder is private to the process and emptied as they come back).
DISK_BUDGET = 32 * 1024**3
#: Free disk left alone when spilling.
DISK_MARGIN = 1024**3
FOLDER_PREFIX = "parked-"
STATE_SUFFIX = ".seqstate"


def parked_budget(plan: Any = None, counted: int = 0) -> int:
    """Bytes of parked states held in memory: the memory plan's budget, no more than the RAM
    the offload plan (models/plan.py) leaves once the model and its caches are counted, plus what
    it counted for parked states (`counted`: the estimate's `parked_state_bytes`); without a plan
    (layers given, a CPU-only build), no more than half the RAM free once it is loaded."""
    budget = memory.PARKED_STATE_BUDGET
    if plan is not None and getattr(plan, "ram_budget", 0):
        return min(budget, max(0, plan.ram_budget - plan.cpu_bytes) + max(0, counted))
    return min(budget, psutil.virtual_memory().available // 2)


@dataclass
class ParkedSequence:
    """What a place held for a session that lost it."""

    tokens: list[int]
    checkpoints: list[Checkpoint]
    pinned: set[int]
    known_start: list[int]
    pacing: DraftPacing
    buffer: Any = None  # llama.cpp's whole state (a ctypes array) while in memory
    path: Path | None = None  # its file once spilled (the checkpoints beside it)
    crc32: int = 0
    size: int = 0  # bytes of the state and the checkpoints
    #: Set once the state is copied (or could not be): the new owner copies it, not the pool's lock.
    ready: threading.Event = field(default_factory=threading.Event)
    #: Where its newest checkpoint is (kept when the checkpoints go to disk with the state).
    mark: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.mark = max((c.n_tokens for c in self.checkpoints), default=0)
        if self.buffer is not None:
            self.size = len(self.buffer) + checkpoints.total_bytes(self.checkpoints)
            self.ready.set()


class ParkedStates:
    """The parked states by owner (a session's view), oldest first, within `budget` bytes in
    memory and `disk_budget` on disk under `directory()` (called when the first one spills)."""

    def __init__(self, budget: int, directory: Callable[[], Path], *, disk_budget: int = DISK_BUDGET,
                 failed: Callable[[str], None] | None = None) -> None:
        self.budget = budget
        self.disk_budget = disk_budget
        self._directory = directory
        self._folder: Path | None = None
        self._failed = failed
        self._held: OrderedDict[int, ParkedSequence] = OrderedDict()
        self._finalizers: dict[int, Any] = {}
        self._lock = threading.RLock()  # a finalizer may run from a collection inside park()
        #: Counts for tests and benchmarks: states parked, set back (restored) or not needed (the place
        #: held more of the prompt: kept), spilled to disk, dropped; and the seconds the backend spent
        #: copying them out and in (a spill's write included).
        self.parked = self.restored = self.kept = self.spilled = self.dropped = 0
        self.seconds = 0.0

    def reserve(self, owner: object, parked: ParkedSequence) -> bool:
        """Hold `parked` for `owner`, its state to come (`filled`); False when the owner has one
        parked already: it never evaluated in the place it loses now (a prefetch that found nothing
        to do), so that place holds another session's tokens, not its history."""
        key = id(owner)
        with self._lock:
            if key in self._held:
                return False
            self._held[key] = parked
            self.parked += 1
            with suppress(TypeError):  # an owner that cannot be weakly referenced keeps it until discarded
                self._finalizers[key] = weakref.finalize(owner, self.discard_key, key)
            return True

    def filled(self, parked: ParkedSequence, buffer: Any) -> None:
        """The state of a reserved entry (None: it could not be copied), then the budgets kept."""
        with self._lock:
            if buffer is not None:
                parked.buffer = buffer
                parked.size = len(buffer) + checkpoints.total_bytes(parked.checkpoints)
            else:
                for key in [k for k, p in self._held.items() if p is parked]:
                    self._forget(key)
            parked.ready.set()
            self._settle()

    def park(self, owner: object, parked: ParkedSequence) -> None:
        """Hold `parked`, its state copied already, for `owner` (replacing what it had)."""
        self.discard(owner)
        if self.reserve(owner, parked):
            self.filled(parked, parked.buffer)

    def take(self, owner: object) -> ParkedSequence | None:
        """The owner's parked state, removed from here, read back from disk if it was spilled;
        None when it has none (or its file could not be read back)."""
        key = id(owner)
        with self._lock:
            parked = self._held.pop(key, None)
            finalizer = self._finalizers.pop(key, None)
        if finalizer is not None:
            finalizer.detach()
        if parked is None:
            return None
        parked.ready.wait()  # its new owner is copying it: milliseconds
        if parked.buffer is None and parked.path is None:
            return None  # it could not be copied
        if parked.path is not None and not _read_back(parked):
            self.dropped += 1
            return None
        return parked

    def discard(self, owner: object) -> None:
        """The owner closed: its parked state goes."""
        self.discard_key(id(owner))

    def discard_key(self, key: int) -> None:
        with self._lock:
            self._forget(key)

    def _forget(self, key: int) -> None:
        parked = self._held.pop(key, None)
        finalizer = self._finalizers.pop(key, None)
        if finalizer is not None:
            finalizer.detach()
        if parked is not None and parked.path is not None:
            _remove_files(parked.path)

    @property
    def bytes(self) -> int:
        """Bytes held in memory."""
        with self._lock:
            return sum(p.size for p in self._held.values() if p.buffer is not None)

    @property
    def disk_bytes(self) -> int:
        with self._lock:
            return sum(p.size for p in self._held.values() if p.path is not None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)

    def peek(self, owner: object) -> tuple[list[int], int] | None:
        """The tokens of the owner's parked state and where its newest checkpoint is (the state
        left parked), or None when it has none."""
        with self._lock:
            parked = self._held.get(id(owner))
            return None if parked is None else (parked.tokens, parked.mark)

    def holds(self, owner: object) -> bool:
        with self._lock:
            return id(owner) in self._held

    def on_disk(self, owner: object) -> bool:
        with self._lock:
            parked = self._held.get(id(owner))
            return parked is not None and parked.path is not None

    def _settle(self) -> None:
        """With the lock held: the least recently parked in memory go to disk until the rest
        fits the budget; what disk cannot take is dropped, oldest first."""
        in_memory = [key for key, p in self._held.items() if p.buffer is not None]
        total = sum(self._held[key].size for key in in_memory)
        for key in in_memory:
            if total <= self.budget:
                return
            parked = self._held[key]
            total -= parked.size
            if not self._spill(key, parked):
                self._forget(key)
                self.dropped += 1

    def _spill(self, key: int, parked: ParkedSequence) -> bool:
        """Write one parked state to disk, making room there by dropping older spilled ones."""
        folder = self._folder_now()
        if folder is None or parked.size > self.disk_budget:
            return False
        for older in [k for k, p in self._held.items() if p.path is not None and k != key]:
            if self.disk_bytes + parked.size <= self.disk_budget:
                break
            self._forget(older)
            self.dropped += 1
        if self.disk_bytes + parked.size > self.disk_budget:
            return False
        with suppress(OSError):
            if shutil.disk_usage(folder).free - parked.size < DISK_MARGIN:
                return False
        path = folder / f"{secrets.token_hex(8)}{STATE_SUFFIX}"
        try:
            checkpoints.write_state(path, parked.buffer)
            parked.crc32 = zlib.crc32(memoryview(parked.buffer).cast("B"))
            with open(path.with_suffix(".checkpoints"), "wb") as handle:
                pickle.dump([(c.n_tokens, c.state, c.known) for c in parked.checkpoints], handle)
        except OSError as error:
            _remove_files(path)
            self._tell(f"Could not write a parked session state to {folder} ({error}); "
                       "a session that comes back evaluates its history again.")
            return False
        parked.path, parked.buffer, parked.checkpoints = path, None, []
        self.spilled += 1
        return True

    def _folder_now(self) -> Path | None:
        if self._folder is None:
            try:
                base = Path(self._directory())
                base.mkdir(parents=True, exist_ok=True)
                _remove_dead_folders(base)
                folder = base / f"{FOLDER_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
                folder.mkdir()
            except OSError as error:
                self._tell(f"Could not make a folder for parked session states ({error}); "
                           "sessions beyond the model's places evaluate their history again when memory is short.")
                return None
            self._folder = folder
        return self._folder

    def _tell(self, text: str) -> None:
        if self._failed is not None:
            failed, self._failed = self._failed, None  # said once
            failed(text)

    def close(self) -> None:
        """Drop every parked state and remove the folder."""
        with self._lock:
            for key in list(self._held):
                self._forget(key)
            if self._folder is not None:
                shutil.rmtree(self._folder, ignore_errors=True)
                self._folder = None



def _read_back(parked: ParkedSequence) -> bool:
    """Read a spilled state into memory and remove its files; False when it cannot be."""
    assert parked.path is not None
    path, parked.path = parked.path, None
    try:
        parked.buffer = checkpoints.read_state_file(path, crc32=parked.crc32)
        with open(path.with_suffix(".checkpoints"), "rb") as handle:
            parked.checkpoints = [Checkpoint(n, state, known) for n, state, known in pickle.load(handle)]
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError):
        parked.buffer = None
    finally:
        _remove_files(path)
    return parked.buffer is not None


def _remove_files(path: Path) -> None:
    for each in (path, path.with_suffix(".checkpoints")):
        with suppress(OSError):
            each.unlink()


def _remove_dead_folders(base: Path) -> None:
    """Folders of processes that died without closing their model."""
    for folder in base.glob(f"{FOLDER_PREFIX}*"):
        try:
            pid = int(folder.name[len(FOLDER_PREFIX):].split("-")[0])
        except ValueError:
            continue
        if pid != os.getpid() and not _alive(pid):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's: alive
    return True


class Parking:
    """LlamaBackend's side (a mixin): park a place's state when it is lent; set it back when
    its session gets a place again."""

    parked: ParkedStates
    _batcher: Any
    _ctx: Any
    _llm: Any
    _stateful: bool

    def _park(self, seq: Sequence, owner: object) -> None:
        """SequencePool's handover (under its lock, `seq` idle): `owner` loses `seq`. What the
        backend knows of it is kept now; its state is copied by the new owner (`_finish_park`)
        before anything else touches `seq`, outside the pool's lock."""
        if not seq.tokens or not seq.live:
            return  # nothing, or a state that is not its tokens' (a failed decode): not worth keeping
        parked = ParkedSequence(list(seq.tokens), list(seq.checkpoints), set(seq.pinned), list(seq.known_start),
                                seq.pacing)
        if self.parked.reserve(owner, parked):
            seq.parking = parked

    def _finish_park(self, seq: Sequence) -> None:
        """When `seq`'s owner starts using it (LlamaBackend._occupy): copy out the state of the
        owner it was just taken from (see `_park`) and set the new owner's parked state in, both
        in one hold of the context (one wait for the round in flight, one pause of the others'
        decodes), unless what `seq` holds already goes on from that state (a probe or a fork of
        its history ran here: `_unpark` decides with the prompt)."""
        parked, seq.parking = seq.parking, None
        coming = self._coming(seq)  # outside the context's hold: it may wait for its copy or read a file
        if parked is None and coming is None:
            return
        started, buffer = time.perf_counter(), None
        try:
            with self._batcher.exclusive():
                if parked is not None:
                    try:
                        buffer = checkpoints.copy_sequence(self._ctx, seq.id)
                    except MemoryError:
                        pass  # that session evaluates its history again
                if coming is not None:
                    self._set_in(seq, coming)
        finally:
            if parked is not None:
                self.parked.filled(parked, buffer)
            self.parked.seconds += time.perf_counter() - started

    def _coming(self, seq: Sequence) -> ParkedSequence | None:
        """The parked state of `seq`'s owner, taken, when it goes in at once: `seq` holds another
        history, parting from the parked one before its newest checkpoint (another session's,
        sharing a system prompt), so the parked state reaches at least as far into any prompt of
        the owner's. A place that holds the parked history up to there (a probe or a fork of it)
        is left to `_unpark`, which compares both with the prompt."""
        ahead = self.parked.peek(seq.owner)
        if ahead is None:
            return None
        tokens, mark = ahead
        if seq.live and shared_length(seq.tokens, tokens, min(len(seq.tokens), len(tokens))) >= mark:
            return None
        return self.parked.take(seq.owner)

    def _set_in(self, seq: Sequence, parked: ParkedSequence) -> None:
        """With the context held: `seq` holds the parked state now, and the owner's drafting pace."""
        loaded = checkpoints.set_sequence(self._ctx, parked.buffer, seq.id)
        self.parked.restored += loaded
        seq.live, seq.logits = True, None
        if loaded:
            seq.tokens[:], seq.checkpoints = parked.tokens, parked.checkpoints
            seq.pinned, seq.known_start = set(parked.pinned), list(parked.known_start)
        else:  # refused (it never is for a state this context wrote): an empty place
            seq.tokens.clear()
            seq.checkpoints = [Checkpoint(0, None)]
        self._llm.n_tokens = len(seq.tokens)
        seq.pacing = parked.pacing

    def _unpark(self, seq: Sequence, full: list[int]) -> None:
        """Before `seq`'s owner evaluates `full`: if it still has a state parked (`_finish_park`
        left it: what `seq` holds goes on from it), `seq` holds it now, unless what `seq` holds
        reaches further into `full` (a fork or a probe of the same history that ran in the place
        meanwhile: a one-place model's CLI and TUI)."""
        started = time.perf_counter()
        parked = self.parked.take(seq.owner)
        if parked is None:
            return
        if self._reach(parked.tokens, parked.checkpoints, full) > (self._reach(seq.tokens, seq.checkpoints, full)
                                                                    if seq.live else 0):
            with self._batcher.exclusive():
                self._set_in(seq, parked)
        else:
            self.parked.kept += 1
            seq.pacing = parked.pacing  # the session's own drafting pace, wherever its tokens come from
        self.parked.seconds += time.perf_counter() - started

    def _reach(self, tokens: list[int], kept: list[Checkpoint], full: list[int]) -> int:
        """How much of `full` a sequence holding `tokens` with the checkpoints `kept` can keep:
        the tokens it shares with `full`, or on a hybrid model the checkpoint before they part."""
        shared = shared_length(tokens, full, min(len(tokens), len(full)))
        if not self._stateful or shared == len(tokens):
            return shared
        return max(c.n_tokens for c in kept if c.n_tokens <= shared)

    def discard_parked(self, owner: object) -> None:
        """The owner's session closed: its parked state goes."""
        self.parked.discard(owner)
