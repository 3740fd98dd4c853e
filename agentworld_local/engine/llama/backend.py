"""LlamaBackend: a GGUF model in this process, with an append-only context and turn checkpoints.

Performance core (docs/ARCHITECTURE.md): the session is one token list that only grows,
with a checkpoint at every turn boundary (the end of the last user message, before the
generation prompt). Hybrid models (recurrent + attention layers) cannot drop tokens from
the middle of their recurrent state, so a checkpoint stores the recurrent state alone
(checkpoints.py) and a restore trims the attention cache to match. A turn restores the
newest checkpoint that is a prefix of the new prompt and evaluates only the tokens after
it; undo and fork are the same restore.
"""

from __future__ import annotations

import codecs
import gc
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import llama_cpp
from llama_cpp import _internals as llama_internals

from agentworld_local.contract.parse import THINK_OPEN
from agentworld_local.defaults import DEFAULT_CTX
from agentworld_local.engine.answer_rules import AnswerRules
from agentworld_local.engine.guard import EitherEvent, GenerationGuard
from agentworld_local.engine.llama import checkpoints, vocab
from agentworld_local.engine.llama.checkpoints import SEQ, Checkpoint
from agentworld_local.engine.llama.devices import supports_gpu_offload
from agentworld_local.engine.llama.loading import OutOfMemory, load_progress, open_llama
from agentworld_local.engine.llama.logs import LOAD_LOCK, LOGS
from agentworld_local.engine.llama.planning import choose_layers, smaller_after_oom
from agentworld_local.engine.thinking import FORCED_THINK_END
from agentworld_local.engine.types import (
    GenerationDone,
    GenerationEvent,
    GenerationStats,
    ModelInfo,
    SamplingConfig,
    ThinkBudget,
)
from agentworld_local.errors import AwlError, GenerationError
from agentworld_local.models.gguf_file import check_gguf_path, file_identity
from agentworld_local.models.offload_options import OffloadOptions
from agentworld_local.models.plan import OffloadPlan

def template_handles_thinking(source: str) -> bool:
    """Whether a chat template knows thinking: it writes `<think>` or reads `enable_thinking`."""
    return THINK_OPEN in source or "enable_thinking" in source


class LlamaBackend:
    """A GGUF model in this process, with an append-only context and turn checkpoints."""

    #: Memory for turn checkpoints; the real model's recurrent state is about 60 MB per turn.
    checkpoint_budget = 2 * 1024**3
    #: Also keep a checkpoint where the system message ends (before the first user message's
    #: text), so a conversation with the same system prompt that differs from the first turn on
    #: starts there: `awl bench predict` turns it on (trajectories of a benchmark file share
    #: system prompts of thousands of tokens). Off for sessions: their checkpoints are turns.
    checkpoint_system_prompt = False

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
    ) -> None:
        """Load the model. Nothing is printed: the face decides how to show what happens.

        `progress` gets the load's fraction done (0..1); while it runs, Ctrl+C stops the load
        (see loading.load_progress). `notice` gets messages for the user: the memory estimate
        or offload plan, an out-of-memory retry, and with `verbose` llama.cpp's log lines
        (those may come later too, from the thread that generates). Every notice is also
        kept in `self.notices`. `offload`: experts kept in RAM, flash attention, KV cache type
        (`auto` layers may add experts in RAM to fit the GPU: `self.offload` says what was used).
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
        identity = file_identity(path)
        options = dict(n_batch=n_batch, threads=threads, echo=self._notice if verbose else None, options=offload)
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
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        self._vocab = llama_cpp.llama_model_get_vocab(llm.model)
        self._stateful = bool(
            llama_cpp.llama_model_is_recurrent(llm.model) or llama_cpp.llama_model_is_hybrid(llm.model)
        )
        self.n_ctx = llm.n_ctx()
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
        )
        self._tokens: list[int] = []
        self._checkpoints: list[Checkpoint] = [Checkpoint(0, None)]
        self._pinned: set[int] = set()  # checkpoint positions thinning keeps (see _generate)
        self._guard = GenerationGuard()
        self._closed = threading.Event()  # set by close(): a generation in flight stops
        self._freed = False

    def _notice(self, text: str) -> None:
        self.notices.append(text)
        if self._notice_sink is not None:
            self._notice_sink(text)

    # -- tokens ---------------------------------------------------------------------

    def tokenize(self, text: str) -> list[int]:
        """Tokens of rendered template text (special tokens parsed, no BOS added: templates write it)."""
        return vocab.tokenize(self._llm, text)

    @property
    def evaluated_tokens(self) -> list[int]:
        """The tokens in the context right now (a copy)."""
        return list(self._tokens)

    @property
    def is_stateful(self) -> bool:
        return self._stateful

    def render(self, messages: list[dict[str, str]], *, think: ThinkBudget) -> tuple[str, str]:
        """(text up to the turn boundary, full prompt text with the generation prompt)."""
        return self.template.render(messages, add_generation_prompt=False), vocab.render_prompt(self.template, messages, think)

    def count_tokens(self, messages: list[dict[str, str]], think: ThinkBudget) -> int:
        """The prompt's tokens, rendered with the model's template as `generate` renders it."""
        return len(self.tokenize(vocab.render_prompt(self.template, messages, think)))

    # -- checkpoints ----------------------------------------------------------------

    def _save_checkpoint(self) -> None:
        n = len(self._tokens)
        if self._checkpoints[-1].n_tokens == n:
            return
        state = checkpoints.copy_state(self._ctx) if self._stateful else None
        self._checkpoints.append(Checkpoint(n, state))
        checkpoints.thin(self._checkpoints, self.checkpoint_budget, pinned=self._pinned)

    def checkpoint_bytes(self) -> int:
        return checkpoints.total_bytes(self._checkpoints)

    def _restore(self, target: int) -> float:
        """Make the context hold exactly self._tokens[:n] for the best reachable n <= target;
        returns the seconds it took."""
        started = time.perf_counter()
        if self._stateful:
            checkpoint = max((c for c in self._checkpoints if c.n_tokens <= target), key=lambda c: c.n_tokens)
            n = checkpoint.n_tokens
            if n == len(self._tokens):
                pass  # nothing was evaluated after this checkpoint
            elif n == 0 or checkpoint.state is None:
                llama_cpp.llama_memory_clear(self._memory, True)
                n = 0
            elif not checkpoints.set_state(self._ctx, checkpoint.state):
                llama_cpp.llama_memory_clear(self._memory, True)
                n = 0
            else:
                llama_cpp.llama_memory_seq_rm(self._memory, SEQ, n, -1)
        else:
            n = min(target, len(self._tokens))
            llama_cpp.llama_memory_seq_rm(self._memory, SEQ, n, -1)
        del self._tokens[n:]
        self._checkpoints = [c for c in self._checkpoints if c.n_tokens <= n]
        self._llm.n_tokens = n
        return time.perf_counter() - started

    def room(self) -> int:
        """Tokens the context can still take."""
        return self.n_ctx - len(self._tokens)

    def _decode(self, tokens: list[int]) -> None:
        """Evaluate `tokens` after the context. Callers check `room()` first: a full context
        makes llama.cpp fail; anything it raises becomes one clear GenerationError."""
        if len(tokens) > self.room():
            raise GenerationError(
                f"The context is full: {len(tokens)} more tokens do not fit in {self.n_ctx:,}.",
                "Start again with a larger `--ctx`, or fork the session at an earlier turn.",
            )
        try:
            self._llm.eval(tokens)
        except (RuntimeError, ValueError, OSError) as error:
            raise GenerationError(
                f"llama.cpp failed while evaluating the conversation ({error}).",
                "Try a smaller `--ctx` or `--gpu-layers`; run with `--verbose` to see llama.cpp's log.",
            ) from None
        self._tokens.extend(tokens)

    def _evaluate(self, tokens: list[int], cancel: threading.Event | None) -> bool:
        """Decode `tokens` after the context, in n_batch chunks; False when cancelled."""
        for start in range(0, len(tokens), self.n_batch):
            if cancel is not None and cancel.is_set():
                return False
            self._decode(tokens[start : start + self.n_batch])
        return True

    def reset(self) -> None:
        """Forget the whole context (a new session on the same loaded model)."""
        with self._guard.hold():
            self._restore(0)

    # -- generation -----------------------------------------------------------------

    def _make_sampler(self, sampling: SamplingConfig, seed: int) -> Any:
        sampler = llama_internals.LlamaSampler()
        if sampling.temperature <= 0:
            sampler.add_greedy()
            return sampler
        sampler.add_top_k(sampling.top_k)
        sampler.add_top_p(sampling.top_p, 1)
        sampler.add_min_p(sampling.min_p, 1)
        sampler.add_temp(sampling.temperature)
        sampler.add_dist(seed & 0xFFFFFFFF)
        return sampler

    def generate(
        self,
        messages: list[dict[str, str]],
        *,
        sampling: SamplingConfig,
        think: ThinkBudget,
        seed: int,
        cancel: threading.Event | None = None,
    ) -> Iterator[GenerationEvent]:
        """Stream the model's answer to `messages` (which end with the current user turn).

        One generation at a time: another one while this is in flight gets BackendBusy.
        """
        if self._closed.is_set():
            raise GenerationError("The model was closed.", "Load it again to run another turn.")
        with self._guard.hold():
            stop = self._closed if cancel is None else EitherEvent(cancel, self._closed)
            yield from self._generate(messages, sampling=sampling, think=think, seed=seed, cancel=stop)

    def _generate(
        self,
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
        self._pinned = {self._system_boundary(messages, full_text, full), self._turn_one_end(messages, full)} - {0}
        stops = sorted((self._pinned | {boundary}) - {0})
        if len(full) + 8 > self.n_ctx:
            raise AwlError(
                f"The conversation needs {len(full)} tokens but the context holds {self.n_ctx}.",
                "Start again with a larger `--ctx`, or fork the session at an earlier turn.",
            )
        common = 0
        limit = min(len(self._tokens), len(full) - 1)  # always evaluate at least one token for logits
        while common < limit and self._tokens[common] == full[common]:
            common += 1
        stats.restore_s = self._restore(common)
        stats.prompt_tokens_total = len(full)
        stats.prompt_tokens_evaluated = len(full) - len(self._tokens)
        for stop in stops:
            if stop > len(self._tokens):
                if not self._evaluate(full[len(self._tokens) : stop], cancel):
                    yield self._cancelled(stats, started)
                    return
                self._save_checkpoint()
        if not self._evaluate(full[len(self._tokens) :], cancel):
            yield self._cancelled(stats, started)
            return
        stats.prompt_s = time.perf_counter() - started
        think_open = full_text.rstrip().endswith(THINK_OPEN)
        yield from self._sample_loop(sampling, think, seed, cancel, think_open, stats)

    def _turn_one_end(self, messages: list[dict[str, str]], full: list[int]) -> int:
        """Tokens up to the end of turn 1's prompt (the first user message), when they are a
        prefix of the prompt; else 0. A context cut keeps turn 1 and goes on from there."""
        first_user = next((i for i, message in enumerate(messages) if message.get("role") == "user"), None)
        if first_user is None:
            return 0
        tokens = self.tokenize(self.template.render(messages[: first_user + 1], add_generation_prompt=False))
        return len(tokens) if full[: len(tokens)] == tokens else 0

    def _system_boundary(self, messages: list[dict[str, str]], full_text: str, full: list[int]) -> int:
        """Tokens up to where the first user message's text starts, when `checkpoint_system_prompt`
        is on and the conversation opens with a system message; else 0 (no such checkpoint).

        Found as the text two renders share when only that message's text differs, so it holds
        no assumption about the template; kept only when its tokens are a prefix of the prompt's.
        """
        if not self.checkpoint_system_prompt or len(messages) < 2 or messages[0].get("role") != "system":
            return 0
        first = messages[1]
        one = self.template.render([messages[0], {**first, "content": "A"}], add_generation_prompt=False)
        two = self.template.render([messages[0], {**first, "content": "B"}], add_generation_prompt=False)
        shared = len(os.path.commonprefix([one, two]))
        if not full_text.startswith(one[:shared]):
            return 0
        tokens = self.tokenize(one[:shared])
        return len(tokens) if full[: len(tokens)] == tokens else 0

    def _cancelled(self, stats: GenerationStats, started: float) -> GenerationDone:
        """Cancelled while the prompt was evaluated: nothing was generated yet."""
        stats.finish = "cancelled"
        stats.prompt_s = time.perf_counter() - started
        return GenerationDone(raw_output="", think_open=False, stats=stats)

    def _sample_loop(
        self,
        sampling: SamplingConfig,
        think: ThinkBudget,
        seed: int,
        cancel: threading.Event | None,
        think_open: bool,
        stats: GenerationStats,
    ) -> Iterator[GenerationEvent]:
        sampler = self._make_sampler(sampling, seed)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        rules = AnswerRules(think_open=think_open, think=think, sampling=sampling, stats=stats)
        forced_end = self.tokenize(FORCED_THINK_END)
        started = time.perf_counter()
        try:
            while True:
                if cancel is not None and cancel.is_set():
                    stats.finish = "cancelled"
                    break
                if self.room() < 1:
                    stats.finish = "length"  # the context is full: the turn ends, the session stays usable
                    break
                token = sampler.sample(self._llm._ctx, -1)
                if llama_cpp.llama_vocab_is_eog(self._vocab, token):
                    stats.finish = "stop"
                    break
                self._decode([token])
                yield from rules.feed(decoder.decode(self._llm.detokenize([token], special=True)))
                if rules.finish:
                    stats.finish = rules.finish
                    break
                if rules.budget_spent:
                    if len(forced_end) > self.room():
                        stats.finish = "length"  # no room left even to close thinking
                        break
                    yield from rules.end_thinking()
                    self._decode(forced_end)
        finally:
            sampler.close()
        yield from rules.flush()
        stats.generate_s = time.perf_counter() - started
        raw = "".join(rules.raw) + decoder.decode(b"", final=True)
        yield GenerationDone(raw_output=raw, think_open=think_open, stats=stats)

    def close(self, timeout: float = 30.0) -> None:
        """Free the model; a second close does nothing. Safe from any thread: a generation in
        flight stops at its next token and is waited for first (freeing llama.cpp's context
        under a running decode crashes the process)."""
        if self._closed.is_set() and self._freed:
            return
        self._closed.set()
        if not self._guard.wait_idle(timeout):
            raise GenerationError("The model is still generating and cannot be freed yet.",
                                  "Cancel the turn, wait for it to stop, then close again.")
        if self._freed:
            return
        self._freed = True
        if LOGS.echo == self._notice:
            LOGS.echo = None  # llama.cpp's log outlives the model: stop handing it to this backend's notice
        self._llm.close()
