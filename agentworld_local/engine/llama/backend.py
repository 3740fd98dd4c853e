"""LlamaBackend: a GGUF model in this process, with an append-only context and turn checkpoints.

Performance core (docs/ARCHITECTURE.md): the session is one token list that only grows,
with a checkpoint per turn: where its answer starts on a hybrid model (the generation prompt
less what the history does not keep: prompt_evaluation.py), else at the turn boundary (the end
of the last user message, before the generation prompt); and the newest turn's known start.
Hybrid models (recurrent + attention layers) cannot drop tokens from the middle of their
recurrent state, so a checkpoint stores the recurrent state alone (checkpoints.py) and a
restore trims the attention cache to match. A turn restores the newest checkpoint that is a
prefix of the new prompt and evaluates only the tokens after it; undo and fork are the same
restore.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import llama_cpp

from agentworld_local.contract.parse import THINK_OPEN
from agentworld_local.defaults import DEFAULT_CTX
from agentworld_local.engine.context_window import overflow_hint
from agentworld_local.engine.guard import EitherEvent, GenerationGuard
from agentworld_local.engine.llama import checkpoints, vocab
from agentworld_local.engine.llama.batching import BatchDecoder, DecodeFailed, sample_row
from agentworld_local.engine.llama.checkpoints import Checkpoint
from agentworld_local.engine.llama.devices import supports_gpu_offload
from agentworld_local.engine.llama.loading import OutOfMemory, load_progress, open_llama
from agentworld_local.engine.llama.logs import LOAD_LOCK, LOGS
from agentworld_local.engine.llama.mtp import MtpDrafter
from agentworld_local.engine.llama.prefetching import Prefetching
from agentworld_local.engine.llama.prompt_evaluation import PromptEvaluation
from agentworld_local.engine.llama.prompt_texts import PromptTexts
from agentworld_local.engine.llama.prompt_states import PromptStates
from agentworld_local.engine.llama.sample_loop import SampleLoop
from agentworld_local.engine.llama.planning import choose_layers, smaller_after_oom
from agentworld_local.engine.llama.sequences import Sequence, SessionBackend, SequencePool
from agentworld_local.engine.llama.parking import Parking, ParkedStates, parked_budget
from agentworld_local.engine.llama.speculation import MAX_DRAFT, DraftPacing
from agentworld_local.engine.llama.state_cache import StateCache, StateKey
from agentworld_local.engine.llama.verify_width import drafting
from agentworld_local.engine.types import (
    GenerationEvent,
    GenerationStats,
    ModelInfo,
    SamplingConfig,
    ThinkBudget,
)
from agentworld_local import paths
from agentworld_local.errors import AwlError, GenerationError
from agentworld_local.models import memory
from agentworld_local.models.gguf_file import check_gguf_path, file_identity
from agentworld_local.models.offload_options import OffloadOptions
from agentworld_local.models.plan import OffloadPlan



def template_handles_thinking(source: str) -> bool:
    """Whether a chat template knows thinking: it writes `<think>` or reads `enable_thinking`."""
    return THINK_OPEN in source or "enable_thinking" in source


class LlamaBackend(PromptEvaluation, Prefetching, SampleLoop, Parking):
    """A GGUF model in this process, with an append-only context and turn checkpoints."""

    #: Memory for turn checkpoints, all sequences together (each keeps its share, so --parallel
    #: does not multiply it); the real model's recurrent state is about 60 MB per turn.
    checkpoint_budget = memory.CHECKPOINT_BUDGET  # the memory plan counts it
    #: Also keep a checkpoint where the system message ends (before the first user message's
    #: text), so a conversation with the same system prompt that differs from the first turn on
    #: starts there: `awl bench predict` turns it on (trajectories of a benchmark file share
    #: system prompts of thousands of tokens). A backend with a `state_cache` keeps it too
    #: (the state saved to disk is the one at that checkpoint).
    checkpoint_system_prompt = False
    #: count_tokens is the model's tokenizer; awl reads the raw text itself.
    counts_exactly = True
    server_separates = None
    #: A runner evaluates the next turn's known start while the user types (`prefetch`);
    #: `--no-prefetch` (OffloadOptions.prefetch) turns it off.
    idle_prefetch = True
    #: Memory for system-prompt states held for this process's next sessions (prompt_states.py),
    #: when the state cache is on.
    prompt_state_budget = memory.PROMPT_STATE_BUDGET  # the memory plan counts it

    def __init__(
        self,
        model_path: str | Path,
        *,
        gpu_layers: str | int = "auto",
        n_ctx: int = DEFAULT_CTX,
        threads: int | None = None,
        n_batch: int = 512,
        progress: Callable[[float], object] | None = None,
        verbose: bool = False,
        name: str | None = None,
        notice: Callable[[str], None] | None = None,
        offload: OffloadOptions | None = None,
        state_cache: StateCache | None = None,
        parallel: int = 1,
    ) -> None:
        """Load the model. Nothing is printed: the face decides how to show what happens.

        `progress` gets the load's fraction done (0..1); while it runs, Ctrl+C stops the load
        (see loading.load_progress). `notice` gets messages for the user: the memory estimate
        or offload plan, an out-of-memory retry, and with `verbose` llama.cpp's log lines
        (those may come later too, from the thread that generates). Every notice is also
        kept in `self.notices`. `offload`: experts kept in RAM, flash attention, KV cache type
        (`auto` layers may add experts in RAM to fit the GPU: `self.offload` says what was used).
        `state_cache`: system-prompt states on disk (state_cache.py); None evaluates every
        new session's system prompt. `offload.speculate`: prompt-lookup drafting (speculation.py)
        on, off, or auto (for attention-only models, as wide as batches give one-token decodes' logits:
        verify_width.py; off for hybrid ones).
        `parallel`: session slots, each a sequence of its own in
        the context with `n_ctx` tokens (sequences.py; a server's sessions, decoded together).
        """
        path = check_gguf_path(model_path)
        self.notices: list[str] = []
        self._notice_sink = notice
        self.plan: OffloadPlan | None
        offload = offload or OffloadOptions()
        self.gpu_layers, n_ctx, self.plan = choose_layers(path, gpu_layers, n_ctx, self._notice, offload)
        if self.plan is not None and self.plan.cpu_moe and not offload.cpu_moe:
            offload = replace(offload, cpu_moe=self.plan.cpu_moe)
        #: The load options used: what was asked, with the plan's experts in RAM.
        self.offload = offload
        self.idle_prefetch = offload.prefetch
        self._known_memo: tuple[list[dict[str, str]], tuple[list[int], int]] | None = None
        self._pieces: dict[int, bytes] = {}  # token -> its bytes (sample_loop._piece)
        identity = file_identity(path)
        #: Whether the sampling loop verifies prompt-lookup drafts (decided before the load: a
        #: hybrid model then keeps the recurrent snapshots that roll a rejected draft back).
        #: `auto` is decided once the model is loaded (verify_width.drafting: by architecture and a
        #: probe of its batches); only `on` and `mtp` reserve a hybrid model's rollback snapshots.
        self.speculate = offload.speculate in ("on", "mtp")
        if offload.speculate == "mtp" and parallel > 1:
            raise AwlError("`--speculate mtp` drafts for one session at a time.", "Use `--speculate on` with several sessions.")
        options = dict(n_batch=n_batch, threads=threads, echo=self._notice if verbose else None, options=offload,
                       parallel=max(1, parallel), rollback=MAX_DRAFT if self.speculate else 0,
                       mtp=offload.speculate == "mtp")
        with LOAD_LOCK, load_progress(progress):
            try:
                self._llm = open_llama(path, self.gpu_layers, n_ctx, **options)
            except OutOfMemory:
                gc.collect()  # free what the failed attempt allocated before trying again
                retry = smaller_after_oom(path, self.gpu_layers, n_ctx, self._notice, offload)
                self.gpu_layers, n_ctx = retry.gpu_layers, retry.n_ctx
                self._llm = open_llama(path, self.gpu_layers, n_ctx, retrying=True, **options)
            #: llama.cpp's log of this load (what it allocated, what it could not).
            self.load_log = LOGS.text()
            #: Tensors llama.cpp placed by an override: the experts kept in RAM.
            self.overridden_tensors = list(LOGS.overridden)
            #: Whether llama.cpp runs flash attention (`auto` resolves per device), None if it did not say.
            self.flash_attention = LOGS.flash_attention
        llm = self._llm
        self._ctx = llm.ctx
        #: The model's MTP layer as the drafter (`--speculate mtp`), else None (mtp.py).
        self._mtp: MtpDrafter | None = None
        if offload.speculate == "mtp":
            try:
                self._mtp = MtpDrafter(llm.model, self._ctx, llm.n_ctx(), n_batch)
            except AwlError:
                llm.close()  # a model without an MTP layer: nothing stays loaded
                raise
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        self._vocab = llama_cpp.llama_model_get_vocab(llm.model)
        self._stateful = bool(
            llama_cpp.llama_model_is_recurrent(llm.model) or llama_cpp.llama_model_is_hybrid(llm.model)
        )
        self.n_ctx = llama_cpp.llama_n_ctx_seq(self._ctx)  # each sequence's own (loading.with_parallel)
        self.n_batch = n_batch
        metadata = llm.metadata
        self.template, embedded = vocab.chat_template(llm)
        self.info = ModelInfo(
            name=name or path.name,
            path=str(path),
            architecture=metadata.get("general.architecture"),
            file_size=identity.size,
            sha256=identity.sha256,
            sha256_scope=identity.scope,
            n_ctx=self.n_ctx,
            # A CPU-only build offloads nothing, whatever was asked: say what really runs where.
            gpu_layers=self.gpu_layers if supports_gpu_offload() else 0,
            chat_template_source="gguf" if embedded else "fallback",
            template_thinks=template_handles_thinking(self.template.source),
            flash_attention=self.flash_attention,
            kv_type=offload.kv_type,
            cpu_moe=offload.cpu_moe,
        )
        #: The sessions' places in the context (sequences.py): per sequence its tokens, its
        #: checkpoints, its pinned positions and whether its live state holds exactly its tokens.
        #: Turns that run at once (--parallel), one sequence each: the runner schedules against it.
        self.parallel = max(1, parallel)
        self.slots = SequencePool(self.parallel, handover=self._park)
        #: The states of sessions whose place another one took (parking.py), set back when they get one.
        self.parked = ParkedStates(parked_budget(self.plan), lambda: state_cache.directory if state_cache
                                   else paths.state_cache_dir(), failed=self._notice)
        #: Every decode of the context; generations in flight share its rounds (batching.py).
        self._batcher = BatchDecoder(llm._ctx, n_batch, llama_cpp.llama_vocab_n_tokens(self._vocab))
        self._running = 0  # generations and prefetches in flight (close waits for them)
        self._running_changed = threading.Condition()
        self.state_cache = state_cache
        #: The system-prompt states this process stored or loaded, for its next sessions.
        self.prompt_states = PromptStates(self.prompt_state_budget if state_cache is not None else 0)
        self._store_failed = False
        #: The prompt texts and their tokens (prompt_texts.py): each made once per turn.
        self._texts = PromptTexts(llm, self._vocab, self.template)
        #: Tokens a verify holds at most, the sampled one included (0: no drafting; `auto` measures how
        #: wide a batch gives one-token decodes' logits: verify_width.py), and the drafts rejected in a
        #: row before drafting pauses (speculation.MISS_RUN; None: `on` drafts wherever the context matches).
        self.verify_width, self.draft_patience = drafting(self, offload.speculate)
        self.speculate = self.verify_width > 1
        llama_build = llama_cpp.__version__
        flash = {True: "on", False: "off"}.get(self.flash_attention, offload.flash_attn)
        # n_seq: a context with several sequences lays out its KV cache in as many streams.
        self._state_key = StateKey(identity.sha256, identity.size, llama_build, offload.kv_type, flash,
                                   self.info.architecture, llama_cpp.llama_n_seq_max(self._ctx))
        self._guard = GenerationGuard()
        self._closed = threading.Event()  # set by close(): a generation in flight stops
        self._freed = False

    def _notice(self, text: str) -> None:
        self.notices.append(text)
        if self._notice_sink is not None:
            self._notice_sink(text)

    # -- tokens ---------------------------------------------------------------------

    def tokenize(self, text: str) -> list[int]:
        """Tokens of rendered template text (special tokens parsed, no BOS added: templates write it).

        The last texts' tokens are kept, and a text that starts like one of them is tokenized only
        after the last special token they share (prefix_tokens.py): a turn counts (World._fit),
        prefetches and generates from renders of one long history."""
        return list(self._texts.tokens(text))

    @property
    def sequence(self) -> Sequence:
        """The sequence used last: what this backend's own accessors show."""
        return self.slots.latest

    @property
    def evaluated_tokens(self) -> list[int]:
        """The tokens in the context right now (a copy)."""
        return list(self.sequence.tokens)

    @property
    def is_stateful(self) -> bool:
        return self._stateful

    # -- sequences: one per session slot (sequences.py) ---------------------------------

    def for_session(self) -> SessionBackend:
        """A Backend for one session: its turns run in a sequence of their own."""
        return SessionBackend(self)

    @contextlib.contextmanager
    def _occupy(self, owner: object | None, wait: threading.Event | None = None,
                yields: bool = False, keep: bool = False) -> Iterator[Sequence | None]:
        """The owner's sequence for one generation or prefetch (BackendBusy if it is in use).
        No owner: the backend's own callers, one at a time, as before sequences. `wait`: a
        generation waits for a prefetch between turns (`yields`) to give a slot up, until it
        is set (then None: it was cancelled); see SequencePool.acquire."""
        with self._guard.hold() if owner is None else contextlib.nullcontext():
            owner = self if owner is None else owner
            sequence = self.slots.acquire(owner, wait=wait, yields=yields)  # parks its previous owner's state
            if sequence is None:
                yield None
                return
            with self._running_changed:
                self._running += 1
            try:
                self._finish_park(sequence)  # the state of the owner it was taken from, copied out first
                with self._batcher.generating():
                    yield sequence
            finally:
                self.slots.release(sequence, keep=keep and owner is not self)
                with self._running_changed:
                    self._running -= 1
                    self._running_changed.notify_all()

    def render(self, messages: list[dict[str, str]], *, think: ThinkBudget) -> tuple[str, str]:
        """(text up to the turn boundary, full prompt text with the generation prompt)."""
        return self._texts.with_boundary(messages, think)

    def count_tokens(self, messages: list[dict[str, str]], think: ThinkBudget) -> int:
        """The prompt's tokens, rendered with the model's template as `generate` renders it."""
        return len(self._texts.tokens(self._texts.prompt(messages, think)))

    def servers(self) -> list:
        """None: the model runs in this process (Backend.servers)."""
        return []

    # -- checkpoints ----------------------------------------------------------------

    def _save_checkpoint(self, seq: Sequence, *, known: bool = False, at: int | None = None) -> None:
        """A checkpoint where `seq` ends now, or `at` a position it passed (an attention-only
        model's: a position, no state); `known`: at a turn's known start (prefetch)."""
        n = len(seq.tokens) if at is None else at
        if seq.checkpoints[-1].n_tokens >= n:
            return
        with self._batcher.exclusive():
            state = checkpoints.copy_state(self._ctx, seq.id) if self._stateful else None
        seq.checkpoints.append(Checkpoint(n, state, known))
        if not known:
            checkpoints.drop_superseded(seq.checkpoints, seq.pinned)
        share = self.checkpoint_budget // len(self.slots.all)
        checkpoints.thin(seq.checkpoints, share, pinned=seq.pinned)

    def checkpoint_bytes(self) -> int:
        return checkpoints.total_bytes(self.sequence.checkpoints)

    def _restore(self, seq: Sequence, target: int) -> float:
        """Make `seq` hold exactly seq.tokens[:n] for the best reachable n <= target;
        returns the seconds it took."""
        started = time.perf_counter()
        with self._batcher.exclusive():
            n = self._restore_sequence(seq, target)
        del seq.tokens[n:]
        seq.checkpoints = [c for c in seq.checkpoints if c.n_tokens <= n]
        self._llm.n_tokens = n
        return time.perf_counter() - started

    def _restore_sequence(self, seq: Sequence, target: int) -> int:
        if self._stateful:
            checkpoint = max((c for c in seq.checkpoints if c.n_tokens <= target), key=lambda c: c.n_tokens)
            n = checkpoint.n_tokens
            if n == len(seq.tokens) or (target >= len(seq.tokens) and seq.live):
                n = len(seq.tokens)  # nothing to drop (e.g. a prefetch stopped between chunks)
            elif n == 0 or checkpoint.state is None:
                llama_cpp.llama_memory_seq_rm(self._memory, seq.id, -1, -1)
                n = 0
            elif not checkpoints.set_state(self._ctx, checkpoint.state, seq.id):
                llama_cpp.llama_memory_seq_rm(self._memory, seq.id, -1, -1)
                n = 0
            else:
                llama_cpp.llama_memory_seq_rm(self._memory, seq.id, n, -1)
            seq.live = True
        else:
            n = min(target, len(seq.tokens))
            llama_cpp.llama_memory_seq_rm(self._memory, seq.id, n, -1)
        return n

    def room(self, seq: Sequence) -> int:
        """Tokens `seq` can still take."""
        return self.n_ctx - len(seq.tokens)

    def _decode(self, seq: Sequence, tokens: list[int], *, all_logits: bool = False, output: bool = True) -> None:
        """Evaluate `tokens` after `seq`'s (with `all_logits`, logits at every position:
        the sampler reads position i at index i; without `output`, none: nothing samples next).
        Callers check `room(seq)` first: a full context makes llama.cpp fail; anything it raises
        becomes one clear GenerationError."""
        if len(tokens) > self.room(seq):
            raise GenerationError(
                f"The context is full: {len(tokens)} more tokens do not fit in {self.n_ctx:,}.",
                "Start again with a larger `--ctx`, or fork the session at an earlier turn.",
            )
        try:
            # Copied out when other sequences decode too: their rounds may come before the sample.
            seq.logits = self._batcher.decode(seq.id, len(seq.tokens), tokens, all_logits=all_logits,
                                              keep=self.parallel > 1, output=output or self._mtp is not None)
        except DecodeFailed as error:
            seq.live = False  # a failed batch may have changed the recurrent state: restore before reuse
            raise GenerationError(
                f"llama.cpp failed while evaluating the conversation ({error}).",
                "Try a smaller `--ctx` or `--gpu-layers`; run with `--verbose` to see llama.cpp's log.",
            ) from None
        seq.tokens.extend(tokens)
        if self._mtp is not None:
            self._mtp.after_target(len(seq.tokens) - len(tokens), tokens)

    def _sample_at(self, seq: Sequence, sampler: Any, index: int) -> int:
        """Sample from `seq`'s last decode's logits at `index` (its position in that decode; -1:
        the last): the context's own with one sequence, else the copy (batching.sample_row)."""
        if seq.logits is None:
            return sampler.sample(self._llm._ctx, index)
        return sample_row(sampler, seq.logits[index], greedy=seq.greedy)

    def _copy_state(self, seq: Sequence) -> bytes:
        with self._batcher.exclusive():
            return checkpoints.copy_state(self._ctx, seq.id)

    def reset(self) -> None:
        """Forget the context of this backend's own callers (a new session on the same loaded
        model); BackendBusy while a generation holds the slot it would take."""
        self.parked.discard(self)  # the last session's state, if another took its place
        with self._occupy(None) as sequence:
            self._restore(sequence, 0)
            sequence.pacing = DraftPacing()  # the new session's drafts start afresh

    # -- generation -----------------------------------------------------------------

    def generate(
        self,
        messages: list[dict[str, str]],
        *,
        sampling: SamplingConfig,
        think: ThinkBudget,
        seed: int,
        cancel: threading.Event | None = None,
        owner: object | None = None,
    ) -> Iterator[GenerationEvent]:
        """Stream the model's answer to `messages` (which end with the current user turn).

        One generation at a time per owner (a session's SessionBackend; None: this backend's
        own callers): another one while this is in flight gets BackendBusy. Generations of
        different owners run at once, in sequences of their own, decoded together.
        """
        if self._closed.is_set():
            raise GenerationError("The model was closed.", "Load it again to run another turn.")
        stop = self._closed if cancel is None else EitherEvent(cancel, self._closed)
        with self._occupy(owner, wait=stop) as sequence:
            if sequence is None:  # cancelled while it waited for a slot
                yield self._cancelled(GenerationStats(), time.perf_counter())
                return
            # The sequence goes with the generator: whichever thread advances it works there.
            yield from self._generate(sequence, messages, sampling=sampling, think=think, seed=seed, cancel=stop)

    def _generate(
        self,
        seq: Sequence,
        messages: list[dict[str, str]],
        *,
        sampling: SamplingConfig,
        think: ThinkBudget,
        seed: int,
        cancel: threading.Event | None,
    ) -> Iterator[GenerationEvent]:
        stats = GenerationStats()
        started = time.perf_counter()
        base_text, full_text = self.render(messages, think=think)
        full = self.tokenize(full_text)
        base = self.tokenize(base_text)
        # The checkpoint goes where the next turn's prompt will diverge from this one. If the
        # template or tokenizer does not keep the base a prefix, evaluate without a checkpoint.
        boundary = len(base) if full_text.startswith(base_text) and full[: len(base)] == base else 0
        # Positions whose checkpoints outlive thinning: what a context cut or a shared system
        # prompt restores. Made even when a turn evaluates past them at once (after a resume).
        system = self._system_boundary(messages, full_text, full)
        seq.pinned = {system, self._after_turn_one(messages, full)} - {0}
        # The known start this turn's prefetch found (in the context already after an undo, then
        # another action): if the restore lands before it, it is checkpointed on the way, as a
        # prefetch would. A turn without a prefetch (bench predict's rows) has none.
        known_start, seq.known_start = seq.known_start, []
        known = len(known_start) if 0 < len(known_start) < boundary and full[: len(known_start)] == known_start else 0
        # A hybrid model's turn keeps its state where its answer starts (prompt_evaluation.py):
        # the next turn, an undo or a regenerate restores there and evaluates nothing the context
        # holds. An attention-only model's checkpoints are positions (no split): the boundary.
        turn_end = (self._answer_start(full_text, full, base_text, think) or boundary) if self._stateful else boundary
        stops = sorted((seq.pinned | {turn_end, known}) - {0})
        if len(full) + 8 > self.n_ctx:
            raise AwlError(
                f"The conversation needs {len(full)} tokens but the context holds {self.n_ctx}.",
                overflow_hint(messages),  # turn 1 has no earlier turn to fork at
            )
        if not self._evaluate_prompt(seq, full, stops, system, cancel, stats, known=known):
            yield self._cancelled(stats, started)
            return
        stats.prompt_s = time.perf_counter() - started
        think_open = full_text.rstrip().endswith(THINK_OPEN)
        yield from self._sample_loop(seq, sampling, think, seed, cancel, think_open, stats)

    def close(self, timeout: float = 30.0) -> None:
        """Free the model; a second close does nothing. Safe from any thread: a generation in
        flight stops at its next token and is waited for first (freeing llama.cpp's context
        under a running decode crashes the process)."""
        if self._closed.is_set() and self._freed:
            return
        self._closed.set()
        with self._running_changed:
            idle = self._running_changed.wait_for(lambda: self._running == 0, timeout)
        if not idle or not self._guard.wait_idle(timeout):
            raise GenerationError("The model is still generating and cannot be freed yet.",
                                  "Cancel the turn, wait for it to stop, then close again.")
        if self._freed:
            return
        self._freed = True
        if LOGS.echo == self._notice:
            LOGS.echo = None  # llama.cpp's log outlives the model: stop handing it to this backend's notice
        self._batcher.close()
        self.parked.close()
        if self._mtp is not None:
            self._mtp.close()  # its context before the model it reads
        self._llm.close()
