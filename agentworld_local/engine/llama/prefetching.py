"""The prefetch half of LlamaBackend (a mixin): the next turn's known start, evaluated
before its action comes, and the system prompt's state kept on disk (state_cache.py).

The methods that touch a sequence's tokens or checkpoints take it (`seq`, the one the prefetch
or generation acquired: engine/llama/sequences.py) as the rest of LlamaBackend does."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from agentworld_local.engine.guard import EitherEvent
from agentworld_local.engine.llama import checkpoints
from agentworld_local.engine.llama.prefix_tokens import shared_length
from agentworld_local.engine.llama.prompt_states import PromptStates
from agentworld_local.engine.llama.prompt_texts import PromptTexts
from agentworld_local.engine.llama.sequences import Sequence
from agentworld_local.engine.types import GenerationStats

#: Two different continuations of a prefetched text (what the action could start with).
KNOWN_TAILS = ("A", "\nB")


class Prefetching:
    """LlamaBackend's prefetch and prefix-state cache (see the module's doc)."""

    _known_memo: Any
    _texts: PromptTexts
    prompt_states: PromptStates

    def prefetch(self, messages: list[dict[str, str]], *, cancel: threading.Event | None = None,
                 owner: object | None = None, waits: bool = False) -> int:
        """Evaluate the prompt of the next turn up to where its action starts, and checkpoint
        there; the tokens it evaluated. `messages` end with a user message holding the fixed
        start of that turn's prompt (World.next_turn_prefix). Stops between n_batch chunks
        when `cancel` is set, keeping what it evaluated; the turn's `generate` then evaluates
        only the rest. The World calls it before every turn too, so a turn's prompt is always
        evaluated in the same chunks, prefetched or not (a different split moves logits in
        their last bits). Writes nothing. Between turns (the runner's idle work, the lowest
        priority) BackendBusy when every slot is generating; a turn's own (`waits`) waits for
        a slot to free, and evaluates nothing if `cancel` comes first."""
        if self._closed.is_set():
            return 0
        stop = self._closed if cancel is None else EitherEvent(cancel, self._closed)
        # A turn's own keeps its slot for the generate that follows (`keep`).
        with self._occupy(owner, wait=stop if waits else None, yields=not waits, keep=waits) as sequence:
            if sequence is None:
                return 0
            return self._prefetch_in(sequence, messages, stop)

    def _prefetch_in(self, seq: Sequence, messages: list[dict[str, str]], stop: Any) -> int:
        tokens, system = self._known_prefix(messages)
        seq.known_start = tokens
        if not tokens or len(tokens) + 8 > self.n_ctx or seq.tokens[: len(tokens)] == tokens:
            # Nothing known, too long for the context, or in the context already (the turn that
            # follows checkpoints it if it has to evaluate through it: _generate).
            return 0
        # The positions a turn pins (see _generate), made here when the prefetch passes them.
        seq.pinned = {system, self._after_turn_one(messages, tokens)} - {0}
        stats = GenerationStats()
        first_turn = sum(message.get("role") == "user" for message in messages) == 1
        self._evaluate_prompt(seq, tokens, sorted(seq.pinned | {len(tokens)}), system, stop, stats, leave_one=False,
                              known=len(tokens), first_turn=first_turn)
        return stats.prompt_tokens_evaluated - (len(tokens) - len(seq.tokens))

    def _known_prefix(self, messages: list[dict[str, str]]) -> tuple[list[int], int]:
        """The tokens of `messages` up to the end of the last message's text, kept only as far
        as any continuation of that text tokenizes alike; and the system prompt's end (or 0).

        Found where the rendered text holds the last message's text followed by a mark, when
        it holds that once; else as the text two renders share when only the text after it
        differs (as `_system_boundary` does): no assumption about the template either way (a
        wrong guess would only cost a re-evaluation: the turn checks that its prompt starts
        with these tokens). The turn asks again for what was prefetched: the answer is kept
        (a long history's render costs milliseconds)."""
        if self._known_memo is not None and self._known_memo[0] == messages:
            return self._known_memo[1]
        last = messages[-1]

        def continued_by(tail: str) -> str:
            return self.template.render([*messages[:-1], {**last, "content": last["content"] + tail}],
                                        add_generation_prompt=False)

        first, marked = continued_by(KNOWN_TAILS[0]), last["content"] + KNOWN_TAILS[0]
        if first.count(marked) == 1:  # the template wrote the text as it is: it ends there
            shared = first[: first.index(marked) + len(last["content"])]
        else:  # it changed the text: where two renders that differ only after it part
            shared = first[: shared_length(first, continued_by(KNOWN_TAILS[1]))]
        tokens = self.tokenize(shared)
        # Where the tokens could merge with what follows is decided near the end: tokenize
        # the last characters alone with each continuation (all of it if the ends disagree).
        tail = shared[-256:]
        alone, *continued = (self._texts.tokens_alone(tail + text) for text in ("", *KNOWN_TAILS))
        if tokens[-16:] != alone[-16:]:
            alone, *continued = (self.tokenize(text) for text in (shared, first, continued_by(KNOWN_TAILS[1])))
        unstable = len(alone) - len(os.path.commonprefix([alone, *continued]))
        known = tokens[: len(tokens) - unstable], self._system_boundary(messages, shared, tokens)
        self._known_memo = ([dict(message) for message in messages], known)
        return known

    def _load_cached_prefix(self, seq: Sequence, full: list[int], limit: int) -> float:
        """Into `seq`, load the longest cached state that starts `full` and holds more of it
        than `seq` does now, at most `limit` tokens (a system prompt or first turn's start this
        model evaluated before): the one held in memory, else the disk's, which is then held too.
        The seconds it took. A file llama.cpp refuses is removed and the prompt is evaluated."""
        started = time.perf_counter()
        assert self.state_cache is not None
        have = len(seq.tokens)
        held = self.prompt_states.lookup(full, longer_than=have, limit=limit)
        if held is None:
            entry = self.state_cache.lookup(self._state_key, full, limit=limit, verify=False)  # read below, checked
            if entry is not None and entry.n_tokens > have:
                buffer = checkpoints.read_state_file(entry.state, crc32=entry.crc32)
                if buffer is None or not self._set_sequence(seq, buffer, full[: entry.n_tokens]):
                    self.state_cache.discard(entry)
                else:
                    self.prompt_states.keep(full[: entry.n_tokens], buffer)
        elif not self._set_sequence(seq, held.buffer, held.tokens):
            self.prompt_states.discard(held)
        elif not held.on_disk:  # a first turn's start a second session uses: worth a file now
            self._write_state(list(held.tokens), held.buffer)
            self.prompt_states.keep(held.tokens, held.buffer)  # written (or tried): once
        return time.perf_counter() - started

    def _set_sequence(self, seq: Sequence, buffer: Any, tokens: Any) -> bool:
        """Make `seq` hold `tokens` from their whole state; False (and `seq` empty) when
        llama.cpp refused it. The checkpoints `seq` kept are prefixes of `tokens`: they stay."""
        with self._batcher.exclusive():
            loaded = checkpoints.set_sequence(self._ctx, buffer, seq.id)
        seq.live = True
        if not loaded:
            seq.tokens.clear()
            seq.checkpoints = seq.checkpoints[:1]  # the empty context's
            return False
        # What evaluating these tokens would have left: the sequence's tokens, a checkpoint.
        seq.tokens[:] = tokens
        self._save_checkpoint(seq)
        return True

    def _store_cached_prefix(self, seq: Sequence, *, disk: bool = True) -> None:
        """Cache the whole state of `seq` (a system prompt or a first turn's start just
        evaluated): held in memory for this process's next sessions, on disk (`disk`) for the
        next process's."""
        assert self.state_cache is not None
        tokens = list(seq.tokens)
        with self._batcher.exclusive():
            buffer = checkpoints.copy_sequence(self._ctx, seq.id)
        if buffer is None:
            return
        self.prompt_states.keep(tokens, buffer, on_disk=disk)
        if disk:
            self._write_state(tokens, buffer)

    def _write_state(self, tokens: list[int], buffer: Any) -> None:
        assert self.state_cache is not None
        stored = self.state_cache.store(self._state_key, tokens, lambda path: checkpoints.write_state(path, buffer))
        if stored is None and not self._store_failed:
            self._store_failed = True  # said once: the session goes on evaluating its prompts
            self._notice(f"Could not write the system prompt's state to {self.state_cache.directory}; "
                         "the next processes evaluate it again (`awl cache info` shows the cache).")

    def _after_turn_one(self, messages: list[dict[str, str]], full: list[int]) -> int:
        """Tokens up to where the text of the message after turn 1's answer starts (turn 1's
        prompt and answer, that message's header), when they are a prefix of the prompt; else 0
        (turn 1 has no answer yet). A context cut keeps turn 1 and goes on from there with
        another turn's message: where every cut prompt parts from the history."""
        first_user = next((i for i, message in enumerate(messages) if message.get("role") == "user"), None)
        if first_user is None or len(messages) < first_user + 3 or messages[first_user + 1].get("role") != "assistant":
            return 0
        tokens = self.tokenize(self._parting_text(messages[: first_user + 2], messages[first_user + 2]))
        return len(tokens) if full[: len(tokens)] == tokens else 0

    def _parting_text(self, before: list[dict[str, str]], message: dict[str, str]) -> str:
        """The text two renders of `before` and `message` share when only that message's text
        differs: no assumption about the template (kept while the history is, so cheap)."""
        one, two = (self.template.render([*before, {**message, "content": text}], add_generation_prompt=False)
                    for text in ("A", "B"))
        return one[: shared_length(one, two)]

    def _system_boundary(self, messages: list[dict[str, str]], full_text: str, full: list[int]) -> int:
        """Tokens up to where the first user message's text starts, when `checkpoint_system_prompt`
        or the state cache is on and the conversation opens with a system message; else 0
        (no such checkpoint).

        Found as the text two renders share when only that message's text differs, so it holds
        no assumption about the template; kept only when its tokens are a prefix of the prompt's.
        """
        wanted = self.checkpoint_system_prompt or self.state_cache is not None
        if not wanted or len(messages) < 2 or messages[0].get("role") != "system":
            return 0
        shared = self._parting_text(messages[:1], messages[1])
        if not full_text.startswith(shared):
            return 0
        tokens = self.tokenize(shared)
        return len(tokens) if full[: len(tokens)] == tokens else 0
