"""A session with a simulated world: domain + backend + trajectory.

`World.step(action)` streams events; the CLI and the TUI consume the same stream.
Every observation comes from the model: the World never runs an action on the host.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import replace

from agentworld_local.contract.parse import OBS_OPEN, observation_so_far, parse_output, partial_tag_length
from agentworld_local.contract.turns import TurnPrompt, build_messages
from agentworld_local.domains.base import Action, Domain
from agentworld_local.engine.base import Backend
from agentworld_local.engine.context_window import (
    FIRST_DROPPABLE,
    Cut,
    choose_window,
    kept_from_note,
    omitted_note,
    prompt_room,
)
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.prompt_composition import compose_system_prompt, task_with_controls, with_session_tools
from agentworld_local.engine import events
from agentworld_local.engine.types import AnswerChunk, BackendNotice, GenerationDone, ThinkingChunk
from agentworld_local.errors import InputError, WorldStoreError
from agentworld_local.trajectory.schema import TurnRecord, utc_now
from agentworld_local.worlds.keys import WorldInputs
from agentworld_local.worlds.reads import read_of
from agentworld_local.worlds.shared import WorldTurn, shared_world
from agentworld_local.worlds.store import StoredAnswer

#: TurnRecord.extra key: the shared world a turn was played in, and where its answer came from.
WORLD_KEY = "world"
#: A turn the world answered from its store evaluated and generated nothing.
SERVED_TOKENS = {"prompt_total": 0, "prompt_evaluated": 0, "thinking": 0, "generated": 0}


#: What World.step yields: the session events of one turn (engine/events.py).
WorldEvent = (
    events.ThinkingDelta | events.AnswerDelta | events.UntaggedDelta | events.ObservationDelta
    | events.ObservationReplaced | events.ContextTrimmed | events.TurnFinished | events.TurnCancelled
    | events.FromWorld | events.Notice
)


class ObservationStream:
    """Stream the observation out of answer chunks with the parser's own rule.

    Emits only text the final parse will keep (`observation_so_far`), so what streamed is
    the start of the recorded observation. It follows the first block; if a later block
    opens, streaming stops there and the final parse decides (ObservationReplaced).
    """

    def __init__(self) -> None:
        self._answer = ""
        self._block: int | None = None
        self._stopped = False
        self.emitted = ""
        self._untagged_end = 0  # how much of the answer went out as untagged text

    def untagged_text(self) -> str:
        """New answer text while no block has opened, short of what may grow into a tag.
        Whitespace before any (the blank line between `</think>` and the observation's tag) is
        held back until text follows it, so no face gets an untagged piece that shows nothing."""
        if self._block is not None:
            return ""
        end = len(self._answer) - partial_tag_length(self._answer)
        out = self._answer[self._untagged_end : end]
        if not out or (self._untagged_end == 0 and not out.strip()):
            return ""
        self._untagged_end = end
        return out

    def feed(self, text: str) -> str:
        if self._stopped or not text:
            return ""
        # Per token, so no work that grows with the answer until a block opens: the answer
        # before this text held no tag, so only its end can start one.
        searched = max(0, len(self._answer) - len(OBS_OPEN) + 1)
        self._answer += text
        if self._block is None and self._answer.find(OBS_OPEN, searched) == -1:
            return ""
        so_far = observation_so_far(self._answer)
        if so_far.block_start == -1:
            return ""
        if self._block is None:
            self._block = so_far.block_start
        if so_far.block_start != self._block or not so_far.stable.startswith(self.emitted):
            self._stopped = True
            return ""
        out = so_far.stable[len(self.emitted) :]
        self.emitted = so_far.stable
        return out


class World:
    """One simulated environment session. Not thread-safe: step from one thread at a time."""

    def __init__(
        self,
        backend: Backend,
        domain: Domain,
        settings: SessionSettings | None = None,
        *,
        on_turn: Callable[[TurnRecord], None] | None = None,
        next_id: int = 1,
        history: list[TurnRecord] | None = None,
        on_undo: Callable[[int], None] | None = None,
    ) -> None:
        """`history`: turns that happened before this World (e.g. imported benchmark turns).

        `on_turn` saves a finished turn and `on_undo` records an undo (with the number of
        turns kept); both run before the World changes, so when saving fails (a full disk)
        the World is as it was and the session can go on.
        """
        # Each World generates through a view of its own (a llama model lends it a sequence,
        # engine/llama/sequences.py; a server's view has its own guard and close). None: a
        # World that only renders messages (a benchmark row's, a domain's prompt).
        self.backend = backend.for_session() if backend is not None else None
        self.settings = settings or SessionSettings()
        self.domain = with_session_tools(domain, self.settings.tools)
        self.on_turn = on_turn
        self.on_undo = on_undo
        self.history: list[TurnRecord] = list(history or [])
        self._next_id = max(next_id, max((r.id for r in self.history), default=0) + 1)
        # Added mid-session; they enter the next turn's prompt and are recorded on that turn.
        self._pending_controls: list[str] = []
        #: The shared world this session plays in (worlds/), or None: its own imagined world.
        self.shared = shared_world(self.settings.shared_world) if self.settings.shared_world else None

    # -- prompts --------------------------------------------------------------------

    @property
    def initial_state(self) -> str:
        state = self.settings.initial_state
        return self.domain.initial_state() if state is None else state

    def system_prompt(self) -> str:
        settings = self.settings
        if settings.system_prompt is not None:
            return settings.system_prompt
        return compose_system_prompt(self.domain.system_prompt(), world=settings.world_description)

    @property
    def pending_controls(self) -> list[str]:
        """Control instructions that the next turn's prompt will carry."""
        return list(self._pending_controls)

    def add_control(self, text: str) -> None:
        """Add a perturbation mid-session, e.g. "the next tool call fails with a rate limit".

        It enters the next turn's Task Instruction; earlier prompts never change.
        """
        control = text.strip()
        if not control:
            raise InputError(
                "The control instruction is empty.",
                "Say what should happen, e.g. `:control the disk is full`.",
            )
        self._pending_controls.append(control)

    def turn_prompt(self, action: Action) -> str:
        turn = len(self.history) + 1
        first = turn == 1
        controls = (list(self.settings.controls) if first else []) + self._pending_controls
        return TurnPrompt(
            turn=turn,
            action=action.prompt_text,
            task=task_with_controls(self.settings.task if first else "", controls),
            current_state=self.initial_state if first else "",
        ).render()

    def turn_start(self) -> str:
        """The next turn prompt's fixed start: all of it that does not depend on the action
        (the text the prompts of two different typed actions share, so the wrapper a domain
        puts around what is typed, as the terminal's keystrokes JSON, is part of it)."""
        one, two = (self.turn_prompt(self._typed(text)) for text in ("A", "B"))
        return one[: len(os.path.commonprefix([one, two]))]

    def _typed(self, text: str) -> Action:
        try:
            return self.domain.parse_action(text)
        except InputError:  # a domain that takes only structured actions: the bare text
            return Action(text, None, text)

    def next_turn_prefix(self) -> list[dict[str, str]]:
        """The next turn's messages up to where its action starts (the last one holds the
        fixed start of its prompt): what a backend can evaluate before the action comes."""
        start = self.turn_start()
        kept_from, _ = self._fit(start)
        return self.messages_for(start, kept_from=kept_from)

    @property
    def head(self) -> int:
        """The id of the current branch's last turn (0 before the first)."""
        return self.history[-1].id if self.history else 0

    @property
    def kept_from(self) -> int:
        """The first turn after turn 1 that the model still sees (2: nothing is left out).

        Read from the last turn's record, so an undo, a fork or a resumed file continue
        with exactly the view the model had (and the checkpoints it left)."""
        return kept_from_note(self.history[-1].context) if self.history else FIRST_DROPPABLE

    def messages_for(self, prompt: str, *, kept_from: int | None = None) -> list[dict[str, str]]:
        """The messages the model gets for `prompt`: the system prompt, turn 1, and the turns
        from `kept_from` (default: the current window) on."""
        start = self.kept_from if kept_from is None else kept_from
        shown = [record for index, record in enumerate(self.history, start=1) if index == 1 or index >= start]
        messages = build_messages(self.system_prompt(), [(r.prompt, r.observation) for r in shown], prompt)
        for index, record in enumerate(shown):
            if record.history_message is not None:
                messages[2 + 2 * index]["content"] = record.history_message
        # The official evaluation sends no system message when a row's system prompt is empty.
        return messages if messages[0]["content"] else messages[1:]

    def _fit(self, prompt: str) -> tuple[int, Cut | None]:
        """The window for this turn's prompt (engine/context_window.py states the policy)."""
        settings = self.settings
        room = prompt_room(settings.sampling, settings.think, self.backend.info.n_ctx)

        def count(kept_from: int) -> int:
            return self.backend.count_tokens(self.messages_for(prompt, kept_from=kept_from), settings.think)

        cut = choose_window(count, self.kept_from, len(self.history), room)
        return (self.kept_from, None) if cut is None else (cut.kept_from, cut)

    # -- turns ----------------------------------------------------------------------

    def step(
        self,
        action: str | Action,
        cancel: threading.Event | None = None,
        *,
        prompt: str | None = None,
        seed: int | None = None,
        sample: int = 0,
    ) -> Iterator[WorldEvent]:
        """Send one agent action; stream thinking and observation; record the finished turn.

        `prompt` sends a ready-made turn prompt verbatim (re-simulating a benchmark row);
        pending control instructions then stay pending. `seed` replaces the turn's own
        sampling seed (session seed + turn number), e.g. for a regenerated sample, which is
        the turn's `sample` (its attempt) in a shared world's store.
        """
        parsed = self.domain.parse_action(action) if isinstance(action, str) else action
        controls_added = list(self._pending_controls) if prompt is None else []
        prompt = self.turn_prompt(parsed) if prompt is None else prompt
        turn = len(self.history) + 1
        started = time.perf_counter()
        self._notices: list[str] = []  # what the backend said of this turn (BackendNotice), kept in its record
        kept_from, cut = self._fit(prompt)
        if cut is not None:
            n_ctx = self.backend.info.n_ctx
            yield events.ContextTrimmed(turn, FIRST_DROPPABLE, kept_from - 1, cut.tokens_before, cut.tokens_after, n_ctx)
        world_turn = None
        if self.shared is not None:
            world_turn = self._world_turn(parsed, prompt, sample, cancel)
            if world_turn is None:  # cancelled while another session predicted this very turn
                yield events.TurnCancelled(turn, len(self.history), self.head)
                return
        try:
            if world_turn is not None and world_turn.answer is not None:
                answer, tokens, timings = world_turn.answer, dict(SERVED_TOKENS), {}
                yield from self._served(turn, world_turn)
            else:
                predicted = yield from self._predict(turn, prompt, kept_from, cancel, seed)
                if predicted is None:
                    yield events.TurnCancelled(turn, len(self.history), self.head)
                    return
                answer, tokens, timings = predicted
                if world_turn is not None:
                    answer = yield from self._keep(turn, world_turn, answer)
        finally:
            if world_turn is not None:
                world_turn.release()
        record = TurnRecord(
            id=self._next_id,
            parent=self.history[-1].id if self.history else None,
            turn=turn,
            action=parsed.text,
            action_payload=parsed.payload,
            prompt=prompt,
            raw_output=answer.raw_output,
            thinking=answer.thinking,
            observation=answer.observation,
            parse_method=answer.parse_method,
            tokens=tokens,
            timings={**timings, "total_s": round(time.perf_counter() - started, 4)},
            finish=answer.finish,
            created=utc_now(),  # the header's form, so every timestamp in a file reads alike
            controls_added=controls_added,
            context=omitted_note(kept_from, cut, self.backend.info.n_ctx),
        )
        if world_turn is not None:
            record.extra[WORLD_KEY] = {"name": world_turn.world.name, "from": world_turn.source}
        if self._notices:
            record.extra["notices"] = list(self._notices)
        if self.on_turn is not None:
            self.on_turn(record)  # saved first: if this raises, the turn never happened
        del self._pending_controls[: len(controls_added)]
        self._next_id += 1
        self.history.append(record)
        yield events.TurnFinished(turn, record)

    def _predict(
        self, turn: int, prompt: str, kept_from: int, cancel: threading.Event | None, seed: int | None,
    ) -> Generator[WorldEvent, None, tuple[StoredAnswer, dict, dict] | None]:
        """The model's answer to `prompt`, streamed as events; with its token counts and
        timings, or None when cancelled."""
        # The known start first, in its own chunks, whether or not it was prefetched between
        # turns: prefetched or not, a turn's prompt is evaluated in the same split.
        start = self.turn_start()
        known, known_started = 0, time.perf_counter()
        if prompt.startswith(start):
            # A turn's own: it waits for a free sequence (the runner's between turns does not).
            known = self.backend.prefetch(self.messages_for(start, kept_from=kept_from), cancel=cancel, waits=True)
        known_s = time.perf_counter() - known_started
        stream = ObservationStream()
        done: GenerationDone | None = None
        for event in self.backend.generate(
            self.messages_for(prompt, kept_from=kept_from),
            sampling=self.settings.sampling,
            think=self.settings.think,
            seed=self.settings.seed + turn if seed is None else seed,
            cancel=cancel,
        ):
            if isinstance(event, ThinkingChunk):
                yield events.ThinkingDelta(turn, event.text)
            elif isinstance(event, AnswerChunk):
                # Raw answer text, for views that show the model's output as it comes.
                yield events.AnswerDelta(turn, event.text)
                text = stream.feed(event.text)
                if text:
                    yield events.ObservationDelta(turn, text)
                elif untagged := stream.untagged_text():
                    yield events.UntaggedDelta(turn, untagged)
            elif isinstance(event, BackendNotice):
                # E.g. the turn ran again on another server; the final parse corrects what streamed.
                self._notices.append(event.text)
                yield events.Notice(event.text)
            else:
                done = event
        assert done is not None, "a backend must finish with GenerationDone"
        if done.stats.finish == "cancelled":
            return None
        parsed_output = parse_output(done.raw_output, think_open=done.think_open)
        observation = parsed_output.observation
        if observation.startswith(stream.emitted):
            rest = observation[len(stream.emitted) :]
            if rest:
                yield events.ObservationDelta(turn, rest)
        else:
            yield events.ObservationReplaced(turn, observation)
        stats = done.stats
        answer = StoredAnswer(done.raw_output, parsed_output.thinking, observation, parsed_output.method, stats.finish)
        tokens = {
            "prompt_total": stats.prompt_tokens_total,
            "prompt_evaluated": known + stats.prompt_tokens_evaluated,
            "thinking": stats.thinking_tokens,
            "generated": stats.generated_tokens,
            # Prompt-lookup drafts verified and accepted (--speculate), only where some were.
            **({"drafted": stats.drafted, "accepted": stats.accepted} if stats.drafted else {}),
            # The counts that are awl's estimates (a server that did not report them).
            **({"estimated": sorted(stats.estimated)} if stats.estimated else {}),
            # The thinking budget ended the thinking, only where it did (older files lack it).
            **({"thinking_cut": True} if stats.thinking_cut else {}),
        }
        timings = {
            "prompt_s": round(known_s + stats.prompt_s, 4),
            "generate_s": round(stats.generate_s, 4),
            "restore_s": round(stats.restore_s, 6),
            "tokens_per_s": round(stats.tokens_per_s, 2),
        }
        return answer, tokens, timings

    # -- shared worlds (worlds/) ----------------------------------------------------------

    def _world_turn(self, action: Action, prompt: str, sample: int, cancel: threading.Event | None) -> WorldTurn | None:
        settings = self.settings
        inputs = WorldInputs(model=self.backend.info.name, domain=self.domain.name, system_prompt=self.system_prompt(),
                             sampling=settings.sampling.to_dict(), think=settings.think.label(), seed=settings.seed)
        earlier = [(r.prompt, r.observation if r.history_message is None else r.history_message) for r in self.history]
        read = read_of(self.domain, action)
        return self.shared.turn(inputs.turn_key(earlier, prompt), sample,
                                None if read is None else inputs.read_key(read), cancel)

    def _served(self, turn: int, world_turn: WorldTurn) -> Iterator[WorldEvent]:
        """A turn the world answered before: its answer, as the model's would stream."""
        yield events.FromWorld(turn, world_turn.world.name, world_turn.source)
        answer = world_turn.answer
        if answer.thinking:
            yield events.ThinkingDelta(turn, answer.thinking)
        if answer.observation:
            yield events.ObservationDelta(turn, answer.observation)

    def _keep(self, turn: int, world_turn: WorldTurn, answer: StoredAnswer) -> Generator[WorldEvent, None, StoredAnswer]:
        """Store a predicted answer in the world; what the world holds (another process may
        have stored this turn first: then its answer replaces this one, so both agree)."""
        try:
            kept = world_turn.keep(answer)
        except WorldStoreError as error:  # the turn still happened; it is in the file
            yield events.Notice(f"The shared world could not keep turn {turn}: {error.one_line()}")
            return answer
        if kept.observation != answer.observation:
            yield events.ObservationReplaced(turn, kept.observation)
        return kept

    def run_turn(
        self, action: str | Action, cancel: threading.Event | None = None, *, prompt: str | None = None
    ) -> TurnRecord | None:
        """Step and drain the events; the finished record, or None when cancelled."""
        for event in self.step(action, cancel, prompt=prompt):
            if isinstance(event, events.TurnFinished):
                return event.record
        return None

    def probe(self, action: str | Action, cancel: threading.Event | None = None) -> TurnRecord | None:
        """Run a hidden action on a throwaway fork; it never enters the history or the file.

        Cheap: the fork starts from this session's latest checkpoint, which the next real
        turn restores as well. Pending control instructions are meant for the agent's next
        real action, so the probe does not see them (they stay pending here).
        """
        child = self.fork(len(self.history))
        child._pending_controls = []
        return child.run_turn(action, cancel)

    def undo(self, to_turn: int | None = None) -> list[TurnRecord]:
        """Drop the last turn (or every turn after `to_turn`); returns what was dropped.

        The trajectory file keeps the dropped turns: the next turn's parent points back,
        and `on_undo` writes the undo itself (so readers know which turns are current).
        Control instructions added with the dropped turns become pending again, so the
        next turn receives them, as the dropped turn did.
        """
        if not self.history:  # said as it is: "undo to turn -1" means nothing to a user
            raise InputError("There is no turn to undo yet.", "Run an action first.")
        keep = len(self.history) - 1 if to_turn is None else to_turn
        if not 0 <= keep <= len(self.history):
            raise InputError(
                f"Cannot undo to turn {keep}: the session has {len(self.history)} turns.",
                "Give a turn number between 0 and the current turn.",
            )
        if self.on_undo is not None:
            self.on_undo(keep)  # recorded first: if this raises, nothing was undone
        dropped = self.history[keep:]
        del self.history[keep:]
        restored = [control for record in dropped for control in record.controls_added]
        self._pending_controls[:0] = restored
        return dropped

    def restore(self, dropped: list[TurnRecord]) -> None:
        """Put back the turns an undo dropped (in memory: the undo was never recorded), with
        their control instructions no longer pending: a regenerate that did not finish."""
        restored = sum(len(record.controls_added) for record in dropped)
        del self._pending_controls[:restored]
        self.history.extend(dropped)

    def fork(self, at_turn: int, *, on_turn: Callable[[TurnRecord], None] | None = None) -> "World":
        """A new World sharing the backend, with this session's first `at_turn` turns."""
        if not 0 <= at_turn <= len(self.history):
            raise InputError(
                f"Cannot fork at turn {at_turn}: the session has {len(self.history)} turns.",
                "Give a turn number between 0 and the current turn.",
            )
        child = World(self.backend, self.domain, replace(self.settings), on_turn=on_turn, next_id=at_turn + 1)
        child.history = [
            replace(record, id=index, parent=index - 1 or None)
            for index, record in enumerate(self.history[:at_turn], start=1)
        ]
        # The child is at the moment before turn at_turn + 1, pending controls included.
        later = self.history[at_turn:]
        child._pending_controls = list(later[0].controls_added) if later else list(self._pending_controls)
        return child
