"""`Session`: a World, its trajectory file and header, driven by any face.

Every change a session makes (a turn, an undo, a regenerated turn) is written to the file
before the World changes, so the file alone can restore it (`Session.resume`).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agentworld_local.domains import get_domain
from agentworld_local.domains.base import Action, Domain
from agentworld_local.domains.endings import ends_task
from agentworld_local.engine.world import World
from agentworld_local.errors import InputError
from agentworld_local.engine import events
from agentworld_local.session.forking import fork_file
from agentworld_local.session.rewards import EpisodeSoFar, Reward, RewardHook
from agentworld_local.session.header import header_for
from agentworld_local.session.resume_rules import (  # noqa: F401 - settings_from_header: for older importers
    ResumeOptions, check_backend, last_model, model_ref, resumed_settings, same_model, settings_from_header,
)
from agentworld_local.trajectory.reader import Trajectory, read_trajectory
from agentworld_local.trajectory.schema import Header, ModelRef, TurnRecord, stored_number
from agentworld_local.trajectory.writer import TrajectoryWriter

#: TurnRecord.extra key: which sample of its turn a record is (0, the first, is not written).
ATTEMPT = "attempt"

def turn_seed(session_seed: int, turn: int, attempt: int) -> int:
    """The sampling seed of one turn: the same session seed replays the whole session, and
    each regenerate (a new attempt) draws a new sample. Attempt 0 keeps the seed every
    saved session used (session seed + turn), so older files still replay exactly."""
    if attempt == 0:
        return session_seed + turn
    digest = hashlib.sha256(f"{session_seed}:{turn}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


class Session:
    """One session. Not thread-safe: call it from one thread at a time.

    The runner (session/runner/runner.py) calls it from its one thread; faces never do.
    """

    def __init__(self, world: World, writer: TrajectoryWriter, header: Header) -> None:
        self.world = world
        self.writer = writer
        self.header = header
        world.on_turn = self._save_turn
        world.on_undo = self._wrote(writer.record_undo)
        self._record_control = self._wrote(writer.record_control)
        self._record_fork = self._wrote(writer.record_fork)
        self._attempt = 0  # the attempt the next turn is
        #: What each new turn records when it differs from the header (a resume's options).
        self._turn_settings: dict[str, Any] = {}
        self._turn_model: ModelRef | None = None
        #: The agent side of the turn being run, when an agent model proposed it (agent/).
        self._turn_agent: dict[str, Any] | None = None
        #: Where this session's file was forked from, when `fork` made it.
        self.forked: events.Forked | None = None
        #: The file holds only the header this session wrote (`create`): nothing worth keeping.
        self.unused = False
        #: The file as `resume` read it (every turn in file order), so nothing reads it twice.
        self.loaded: Trajectory | None = None
        #: What each turn earns (session/rewards/), written beside it; None: no reward.
        self.reward: RewardHook | None = None
        #: What the last turn on the branch earned (None: no reward, or the branch changed since).
        self.last_reward: events.Rewarded | None = None
        #: A regenerate's undo, written just before its new turn (never without it).
        self._undo_before_turn: int | None = None

    @classmethod
    def create(
        cls, world: World, path: str | Path, *, scenario: dict[str, Any] | None = None, note: str = "",
        agent: dict[str, Any] | None = None,
    ) -> Session:
        """A new session in a new file (an existing file is refused, never overwritten).
        `agent`: the agent model that will propose the actions, for the header."""
        header = header_for(world, scenario=scenario, note=note)
        header.agent = agent
        session = cls(world, TrajectoryWriter.create(path, header), header)
        session.unused = True
        return session

    @classmethod
    def resume(
        cls, path: str | Path, backend: Any, *, options: ResumeOptions | None = None,
    ) -> Session:
        """Continue a saved session on the branch it was on, appending to the same file.

        The header gives the domain, tools, system prompt and the settings; `options` may
        change the sampling of new turns, which record it (session/resume_rules.py). The
        backend must be the model the session was made with, unless `options` allow another
        (each new turn then records its model). The model reads the history again on the next
        turn. An unfinished last line is cut off; a damaged file is refused (with the `awl fork`
        command that saves its intact turns).
        """
        options = options or ResumeOptions()
        options.check()
        traj = read_trajectory(path)  # read once: a long session takes a while to parse
        writer = TrajectoryWriter.append_to(path, traj)
        try:
            header = traj.header
            made_with = last_model(traj)
            if not options.allow_other_model:
                check_backend(made_with, backend.info, Path(path))
            settings, turn_settings = resumed_settings(traj, options)
            domain = domain_from_header(header)
        except BaseException:
            writer.close()
            raise
        world = World(backend, domain, settings, history=traj.current_branch(), next_id=writer.last_id + 1)
        for control in traj.pending_controls:  # given after the last turn, or handed back by an undo
            world.add_control(control)
        session = cls(world, writer, header)
        session.loaded = traj
        session._turn_settings = turn_settings
        if not same_model(header.model, backend.info):
            session._turn_model = model_ref(backend.info)
        return session

    # -- what the session holds ------------------------------------------------------

    @property
    def path(self) -> Path:
        return self.writer.path

    @property
    def history(self) -> list[TurnRecord]:
        return self.world.history

    def saved(self) -> events.Saved:
        return events.Saved(str(self.path), len(self.history))

    # -- changes ---------------------------------------------------------------------

    def step(self, action: str | Action, cancel: threading.Event | None = None, *,
             agent: dict[str, Any] | None = None) -> Iterator[events.SessionEvent]:
        """Run one turn: its events, ending with TurnFinished (saved) or TurnCancelled. `agent`:
        the agent side of the turn (TurnRecord.agent) when an agent model proposed it. The
        turn's reward is the runner's to ask for, off the model (`episode`, `rewarded`)."""
        parsed = self.world.domain.parse_action(action) if isinstance(action, str) else action
        turn = len(self.history) + 1
        yield events.TurnStarted(turn, parsed.text, parsed.payload)
        seed = turn_seed(self.world.settings.seed, turn, self._attempt)
        self._turn_agent = agent
        self.last_reward = None
        try:
            yield from self.world.step(parsed, cancel, seed=seed, sample=self._attempt)
        finally:
            self._attempt = 0  # read by _save_turn while the turn is saved
            self._turn_agent = None

    def episode(self, finished: events.TurnFinished, final: bool) -> EpisodeSoFar:
        """What a reward hook sees of the turn `finished` just saved (the runner runs the hook)."""
        domain = self.world.domain.name
        return EpisodeSoFar(domain, self.world.settings.task, self.world.initial_state, tuple(self.history),
                            ends_task(domain, finished.record.action_payload), final)

    def rewarded(self, finished: events.TurnFinished, reward: Reward) -> events.Rewarded:
        """`reward`, written beside the turn `finished`."""
        self.writer.record_reward(finished.record.id, reward.value, reward.source, reward.verdict)
        self.last_reward = events.Rewarded(finished.turn, reward.value, reward.source, reward.verdict)
        return self.last_reward

    def undo(self) -> events.Undone:
        """Drop the last turn (the file keeps it, and records the undo)."""
        self.world.undo()
        self.last_reward = None
        return events.Undone(len(self.history), self.world.head)

    def add_control(self, text: str) -> events.ControlAdded:
        """A control instruction (perturbation) for the next turn; recorded in the file first,
        so a session resumed before that turn still sends it."""
        if not text.strip():
            self.world.add_control(text)  # refuses it, with the World's message
        self._record_control(text)
        self.world.add_control(text)
        return events.ControlAdded(text.strip(), len(self.world.pending_controls))

    def fork(self, turn: int, out: str | Path) -> Session:
        """A new session in the new file `out` with this session's first `turn` turns (the
        control instructions pending at that point stay pending); this file records the fork
        point. The new session shares the backend; its `forked` says where it came from."""
        if not 0 <= turn <= len(self.history):
            raise InputError(
                f"Cannot fork at turn {turn}: the session has {len(self.history)} turns.",
                "Give a turn number between 0 and the current turn.",
            )
        forked, _ = fork_file(self.path, out, turn)  # this file is intact: no warnings
        self._record_fork(turn, str(Path(out)))
        # Goes on as this session does: the same backend (on purpose) and the same sampling.
        settings = self.world.settings
        going_on = ResumeOptions(allow_other_model=True, temperature=settings.sampling.temperature,
                                 max_tokens=settings.sampling.max_tokens, think=settings.think.label(), seed=settings.seed)
        session = Session.resume(out, self.world.backend, options=going_on)
        session.forked = forked
        return session

    def regenerate(self, cancel: threading.Event | None = None) -> Iterator[events.SessionEvent]:
        """Run the last turn's action again with a new sample (a new seed), in its place.

        The new turn records its attempt, so a replay or a resume knows which sample it is.
        The undo of the old turn is written only with the new turn, once it is done: a
        regenerate that is cancelled (or fails) keeps the turn it was replacing, and its
        TurnCancelled says so (its `turns` and `head` are the old turn's).
        """
        if not self.history:
            raise InputError("There is no turn to regenerate yet.", "Run an action first.")
        last = self.history[-1]
        attempt = int(stored_number(last.extra, ATTEMPT) or 0) + 1  # the file may say anything there
        record_undo, self.world.on_undo = self.world.on_undo, None
        try:
            dropped = self.world.undo()  # in memory: recorded by _save_turn, just before the new turn
        finally:
            self.world.on_undo = record_undo
        self._undo_before_turn = len(self.history)
        yield events.Regenerated(last.turn, attempt, len(self.history), self.world.head)
        self._attempt = attempt
        finished = False
        try:
            for event in self.step(last.action, cancel, agent=last.agent):  # parsed again, as it was typed
                if isinstance(event, events.TurnFinished):
                    finished = True
                elif isinstance(event, events.TurnCancelled):
                    self.world.restore(dropped)
                    dropped = []
                    event = events.TurnCancelled(event.turn, len(self.history), self.world.head)
                yield event
        finally:
            self._undo_before_turn = None
            if not finished and dropped:
                self.world.restore(dropped)  # failed or stopped before its turn was saved

    def close(self, *, discard_if_unused: bool = False) -> bool:
        """Close the file; True when it is kept. With `discard_if_unused`, a new session that
        never wrote a line after its header (no turn, undo, control or fork) leaves no file."""
        if discard_if_unused and self.unused:
            self.writer.discard()
            return False
        self.writer.close()
        return True

    def _wrote(self, write: Callable[..., Any]) -> Callable[..., Any]:
        def wrote(*args: Any, **kwargs: Any) -> Any:
            result = write(*args, **kwargs)
            self.unused = False
            return result

        return wrote

    def _save_turn(self, record: TurnRecord) -> None:
        if self._undo_before_turn is not None:  # a regenerate's: the old turn goes now, with it
            self.writer.record_undo(self._undo_before_turn)
            self._undo_before_turn = None
        if self._attempt:
            record.extra[ATTEMPT] = self._attempt
        record.settings = dict(self._turn_settings) or None
        record.model = self._turn_model
        record.agent = self._turn_agent
        self.writer.append(record)
        self.unused = False


def domain_from_header(header: Header) -> Domain:
    """The domain a saved session ran in: its tools and state format, as the header states them."""
    return get_domain(header.domain, tools=header.tools, state_format=header.state_format)
